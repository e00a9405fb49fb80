import { TilehouseError } from '../../errors.js';
import { daysFromCivil, dayNumberOfCalendarDate, formatCivilDate } from '../../value-types/civil-date.js';

export type WindowStep = 'day' | 'week' | 'month';

/** [from, to) as calendar dates (YYYY-MM-DD) in the job's timezone. */
export interface DateWindow {
  from: string;
  to: string;
}

// Callers pass dates already checked (flags by the commands, startFrom by the job schema), so a
// bad one here is a bug: a RangeError, not a user-facing error.
function toDayNumber(date: string): number {
  const days = dayNumberOfCalendarDate(date);
  if (days === undefined) throw new RangeError(`not a calendar date (YYYY-MM-DD): ${JSON.stringify(date)}`);
  return days;
}

/**
 * Splits [from, to) into consecutive windows: `day` and `week` are 1 and 7 days from `from`;
 * `month` follows calendar months (a first or last partial month is its own window), because a
 * month of partitions is what people ask to re-run.
 */
export function splitWindows(from: string, to: string, step: WindowStep): DateWindow[] {
  const start = toDayNumber(from);
  const end = toDayNumber(to);
  if (end <= start) throw new RangeError(`--to (${to}) must be after --from (${from})`);
  const windows: DateWindow[] = [];
  let cursor = start;
  while (cursor < end) {
    let next: number;
    if (step === 'day') next = cursor + 1;
    else if (step === 'week') next = cursor + 7;
    else {
      const [year, month] = formatCivilDate(cursor).split('-').map(Number) as [number, number];
      next = month === 12 ? daysFromCivil(year + 1, 1, 1) : daysFromCivil(year, month + 1, 1);
    }
    next = Math.min(next, end);
    windows.push({ from: formatCivilDate(cursor), to: formatCivilDate(next) });
    cursor = next;
  }
  return windows;
}

/** The calendar date `days` days after `date` (before it when negative). */
export function addDays(date: string, days: number): string {
  return formatCivilDate(toDayNumber(date) + days);
}

/** Days from `from` to `to` (negative when `to` is earlier). */
export function daysBetween(from: string, to: string): number {
  return toDayNumber(to) - toDayNumber(from);
}

export interface CatchUpSettings {
  startFrom: string;
  lookbackDays: number;
  maxWindows: number;
}

/** What one target (a CSV path template, a BigQuery table) shows as published: the first days of its finished windows. */
export interface TargetState {
  target: string;
  done: ReadonlySet<string>;
  /** Days published while still open (before they ended on the source's clock): not held, exported again. */
  open?: ReadonlySet<string>;
}

/** The day windows the next incremental run exports, and why. */
export interface CatchUpPlan {
  /** The source's today (job timezone): the last window the run may export. */
  today: string;
  /** The first day some target has not published, from startFrom on (today + 1: all published). */
  firstUnpublished: string;
  /** True when no target has published any day since startFrom: the run starts at startFrom. */
  firstRun: boolean;
  /** Windows this run exports, oldest first: lookback days, then every unpublished day up to today, at most maxWindows. */
  windows: DateWindow[];
  /** Windows past maxWindows, left for the next run. */
  left: DateWindow[];
  /** Of `windows`, those already published, exported again because of lookbackDays. */
  lookback: DateWindow[];
  /** Of `windows`, those that have not ended on the source's clock (today's): recorded as open, exported again by the run after. */
  open: DateWindow[];
  /** Of `windows`, those some target holds only as open (published before the day ended): exported again, whole this time once the day is over. */
  reopened: DateWindow[];
  /** One line: which windows and why. */
  reason: string;
}

/** Two targets of one job are too far apart to tell which is right; the message says how to make them agree. */
export class IncrementalStateAmbiguousError extends TilehouseError {
  readonly code = 'incremental_state_ambiguous';
}

/**
 * The windows an incremental run exports: from the first day any target lacks (minus
 * lookbackDays, never before startFrom) up to and including the source's today, one per day,
 * oldest first, at most maxWindows. Today's window is exported while the day is still going and
 * recorded as open; an open day never counts as held, so the next run exports it again whatever
 * lookbackDays says, which then serves only late changes to closed days.
 *
 * Targets may lag one another by a little (a run stopped between two sinks' publishes, or
 * lookbackDays of days in flight): the run starts at the one that lags, and re-exporting a day
 * the other already holds is harmless, since each day replaces exactly its own file or partition.
 * Further apart than max(1, lookbackDays) days, it is no longer a run that was cut short (a sink
 * added to a job that has run for months, a target restored from an old copy): which of them is
 * right is the operator's call, so the plan refuses with the backfill that makes them agree.
 */
export function catchUpPlan(
  job: string,
  settings: CatchUpSettings,
  today: string,
  targets: readonly TargetState[],
  fixFlags: readonly string[] = [],
): CatchUpPlan {
  const afterToday = addDays(today, 1);
  const firstGap = (done: ReadonlySet<string>): string => {
    let day = settings.startFrom;
    while (day < afterToday && done.has(day)) day = addDays(day, 1);
    return day > afterToday ? afterToday : day;
  };
  const frontiers = targets.map((state) => ({ target: state.target, first: firstGap(state.done) }));
  // No target at all holds nothing (never "every day published"): the first run starts at startFrom.
  const earliest = frontiers.length === 0 ? firstGap(new Set()) : frontiers.reduce((min, state) => (state.first < min ? state.first : min), afterToday);
  const latest = frontiers.reduce((max, state) => (state.first > max ? state.first : max), earliest);
  const tolerance = Math.max(1, settings.lookbackDays);
  if (frontiers.length > 0 && daysBetween(earliest, latest) > tolerance) {
    const lagging = frontiers.filter((state) => state.first === earliest).map((state) => state.target);
    const ahead = frontiers.filter((state) => state.first === latest).map((state) => state.target);
    const fix = ['tilehouse backfill', '--job', job, '--from', earliest, '--to', latest, '--step', 'day', ...fixFlags].join(' ');
    throw new IncrementalStateAmbiguousError(
      `job ${job}: its targets disagree on what is published: ${ahead.join(', ')} ${ahead.length === 1 ? 'holds' : 'hold'} every day up to ${addDays(latest, -1)}, ` +
        `${lagging.join(', ')} ${lagging.length === 1 ? 'lacks' : 'lack'} ${earliest} (more than ${tolerance} day${tolerance === 1 ? '' : 's'} apart, so not a run cut short); ` +
        `export the missing days to every sink with: ${fix} (or move incremental.startFrom past them)`,
    );
  }
  const firstRun = targets.every((state) => ![...state.done, ...(state.open ?? [])].some((day) => day >= settings.startFrom && day <= today));
  const startDay = [addDays(earliest, -settings.lookbackDays), settings.startFrom].reduce((a, b) => (a > b ? a : b));
  const all = startDay <= today ? splitWindows(startDay, afterToday, 'day') : [];
  const windows = all.slice(0, settings.maxWindows);
  const left = all.slice(settings.maxWindows);
  const lookback = windows.filter((window) => window.from < earliest);
  const open = windows.filter((window) => window.to > today);
  const reopened = windows.filter((window) => window.from >= earliest && targets.some((state) => state.open?.has(window.from) === true));
  const parts: string[] = [];
  if (settings.startFrom > today) parts.push(`incremental.startFrom ${settings.startFrom} is after the source's today ${today}: nothing to export yet`);
  else if (firstRun) parts.push(`first run: from incremental.startFrom ${settings.startFrom}`);
  else if (earliest === afterToday) parts.push(`every day up to today ${today} is published`);
  else if (earliest === settings.startFrom) parts.push(`resume at incremental.startFrom ${settings.startFrom} (no target holds it closed)`);
  else parts.push(`resume after ${addDays(earliest, -1)} (the last day every target holds)`);
  if (reopened.length > 0) parts.push(`${reopened.map((window) => window.from).join(', ')} published while open: exported again`);
  if (lookback.length > 0) parts.push(`lookback ${lookback.length} day${lookback.length === 1 ? '' : 's'} (${lookback[0]!.from}..${lookback.at(-1)!.to})`);
  if (left.length > 0) parts.push(`capped at maxWindows ${settings.maxWindows}: ${left.length} left for the next run (${left[0]!.from}..${left.at(-1)!.to})`);
  const span = windows.length === 0 ? 'no windows' : `${windows.length} window${windows.length === 1 ? '' : 's'} ${windows[0]!.from}..${windows.at(-1)!.to}`;
  return { today, firstUnpublished: earliest, firstRun, windows, left, lookback, open, reopened, reason: `${span}: ${parts.join('; ')}` };
}
