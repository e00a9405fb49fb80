import type { JudgedRun } from './read-history.js';
import type { RunRecord } from './run-record.js';

/**
 * The holes of a job's history: day windows a run failed (a backfill's, an incremental run's:
 * the record's `failedWindows`) that no later run filled, i.e. ran and did not fail (its `windows`
 * less its `failedWindows`), whatever else ran since. A later run that filled part of a window
 * (days of a failed week) leaves the rest a hole; one that failed it again holds it from then on. Only the records the history keeps are read
 * (`history.keepPerJob` of each job): a window failed by a run since pruned is no longer known.
 */
export interface WindowHole {
  /** The days no run filled (`to` exclusive). */
  from: string;
  to: string;
  /** The step of the run that failed them (a backfill's `--step`; `day` for an incremental run's windows). */
  step: string;
  /** The run whose windows failed: its id, what started it, when, and its error's code. */
  failedIn: { runId: string; trigger: RunRecord['trigger']; startedAt: string; code?: string };
}

interface Range {
  from: string;
  to: string;
}

/** Every hole of the records (`records` newest first, as the history lists them), oldest first, adjacent ones of one run joined. */
export function holesOf(records: readonly JudgedRun[]): WindowHole[] {
  const oldestFirst = [...records].reverse();
  const holes: WindowHole[] = [];
  for (const [index, { record }] of oldestFirst.entries()) {
    if (record.failedWindows === undefined) continue;
    const later = oldestFirst.slice(index + 1).flatMap(({ record: other }) => takenOnBy(other));
    // Windows of a backfill step: a day, a week, a month (`to` exclusive); ISO dates compare as strings.
    let left: Range[] = record.failedWindows.map(({ from, to }) => ({ from, to }));
    for (const filled of later) left = left.flatMap((range) => without(range, filled));
    const step = record.backfill?.step ?? 'day';
    const failedIn = {
      runId: record.runId,
      trigger: record.trigger,
      startedAt: record.startedAt,
      ...(record.error === undefined ? {} : { code: record.error.code }),
    };
    for (const range of joined(left)) holes.push({ ...range, step, failedIn });
  }
  return holes.sort((a, b) => a.from.localeCompare(b.from) || a.failedIn.startedAt.localeCompare(b.failedIn.startedAt));
}

/**
 * The windows a run took on: those it filled (ran and did not fail) and those it failed again,
 * which are its own holes from then on (one failed day is told once, by the last run that failed it).
 */
function takenOnBy(record: RunRecord): Range[] {
  return [...(record.windows ?? []), ...(record.failedWindows ?? [])];
}

/** `range` less `filled`: none, one or two pieces. */
function without(range: Range, filled: Range): Range[] {
  if (filled.to <= range.from || filled.from >= range.to) return [range];
  const pieces: Range[] = [];
  if (range.from < filled.from) pieces.push({ from: range.from, to: filled.from });
  if (filled.to < range.to) pieces.push({ from: filled.to, to: range.to });
  return pieces;
}

/** Ranges, oldest first, adjacent ones joined: `[07-01, 07-02) [07-02, 07-03)` is `[07-01, 07-03)`. */
function joined(ranges: readonly Range[]): Range[] {
  const result: Range[] = [];
  for (const range of [...ranges].sort((a, b) => a.from.localeCompare(b.from))) {
    const last = result.at(-1);
    if (last !== undefined && last.to === range.from) last.to = range.to;
    else result.push({ ...range });
  }
  return result;
}
