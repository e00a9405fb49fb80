import type { ExportQuery } from '../config/job-schema.js';
import { daysFromCivil, formatCivilDate, MS_PER_DAY, parseTimestamp } from '../transform/index.js';

export type WindowStep = 'day' | 'week' | 'month';

/** [from, to) as calendar dates (YYYY-MM-DD) in the job's timezone. */
export interface DateWindow {
  from: string;
  to: string;
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

function toDayNumber(date: string): number {
  const match = DATE.exec(date);
  if (!match) throw new RangeError(`not a date (YYYY-MM-DD): ${JSON.stringify(date)}`);
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const days = daysFromCivil(year, month, day);
  // Round trip: 2023-02-30 would otherwise quietly become 2023-03-02.
  if (year < 1 || formatCivilDate(days) !== date) throw new RangeError(`not a calendar date: ${JSON.stringify(date)}`);
  return days;
}

export function isCalendarDate(date: string): boolean {
  try {
    toDayNumber(date);
    return true;
  } catch {
    return false;
  }
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

/**
 * The `rw` operands covering a window, relative to `now` (the only window operator the spec
 * shows is relative to the server's clock, in whole days). The window is widened by one extra
 * day on each side: it absorbs the offset between the job's timezone and the server's, and the
 * seconds between our clock and the server's. Rows outside the window are dropped afterwards
 * when the job names its date-bucket column, so the widening costs a few rows of transfer, never
 * a wrong row.
 */
export function relativeWindowFor(window: DateWindow, timezone: string, now: Date): [string, 'days', string, 'days'] {
  const start = parseTimestamp(window.from, timezone) as number;
  const end = parseTimestamp(window.to, timezone) as number;
  const daysBackToStart = Math.ceil((now.getTime() - start) / MS_PER_DAY) + 1;
  const daysBackToEnd = Math.max(0, Math.floor((now.getTime() - end) / MS_PER_DAY) - 1);
  return [String(Math.max(daysBackToStart, 1)), 'days', String(daysBackToEnd), 'days'];
}

/** Finds the query item a backfill filters: by `ref`, else by `header`. */
export function findItemIndex(query: ExportQuery, name: string): number {
  const byRef = query.items.findIndex((item) => item.ref === name);
  return byRef >= 0 ? byRef : query.items.findIndex((item) => item.header === name);
}

/** The job's query with the date item's `rw` filters replaced by one for this window. */
export function queryForWindow(query: ExportQuery, itemIndex: number, rw: readonly string[]): ExportQuery {
  return {
    ...query,
    items: query.items.map((item, index) =>
      index !== itemIndex
        ? item
        : { ...item, filters: [...item.filters.filter((filter) => filter.operator !== 'rw'), { operator: 'rw', values: [...rw], beforeAggregate: true }] },
    ),
  };
}
