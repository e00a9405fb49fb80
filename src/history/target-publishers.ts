import type { JudgedRun } from './read-history.js';

/**
 * Which run published a target, as the run history says it: the record whose targets name it, and
 * the day window of that run that wrote it (a backfill's, an incremental run's). The history is
 * written by every run whatever its sinks' settings, so it names the run where the target itself
 * cannot (a local file without `manifest: true`), and it knows a window's run id (`<id>-YYYYMMDD`,
 * pipeline/run-id.ts's windowRunId) as the window of run `<id>`.
 */
export interface RecordedPublisher {
  judged: JudgedRun;
  /** The rows the run recorded for the target. */
  rows: number;
  /** The day window (`to` exclusive) that wrote the target, when the run was one of windows. */
  window?: { from: string; to: string };
}

/** A window's run id: the run's id, `-`, the window's first day as YYYYMMDD. */
const WINDOW_RUN_ID = /^(.+)-(\d{4})(\d{2})(\d{2})$/;

/** The newest record (`records` newest first) that published `target`, and its window that wrote it (the last, when several did). */
export function lastPublisherOf(records: readonly JudgedRun[], target: string): RecordedPublisher | undefined {
  for (const judged of records) {
    const entry = judged.record.targets.findLast((candidate) => candidate.target === target);
    if (entry !== undefined) return { judged, rows: entry.rows, ...(entry.window === undefined ? {} : { window: entry.window }) };
  }
  return undefined;
}

/**
 * The record of the run a target names (`records` newest first): a record of that run id that
 * published the target (a retried try's newest), else, for a window's run id that no record
 * carries, the record of its run whose window of that day published the target. Undefined: the
 * history keeps no such run (pruned, or written elsewhere).
 */
export function publisherNamed(records: readonly JudgedRun[], runId: string, target: string): RecordedPublisher | undefined {
  const own = records.filter((judged) => judged.record.runId === runId);
  const published = own.find((judged) => judged.record.targets.some((candidate) => candidate.target === target));
  if (published !== undefined) return lastPublisherOf([published], target);
  if (own.length > 0) return undefined;
  const match = WINDOW_RUN_ID.exec(runId);
  if (match === null) return undefined;
  const [, parent, year, month, day] = match;
  const from = `${year}-${month}-${day}`;
  for (const judged of records) {
    if (judged.record.runId !== parent) continue;
    const entry = judged.record.targets.find((candidate) => candidate.target === target && candidate.window?.from === from);
    if (entry !== undefined) return { judged, rows: entry.rows, window: entry.window! };
  }
  return undefined;
}
