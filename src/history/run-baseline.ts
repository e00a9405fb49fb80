import type { JudgedRun, RunVerdict } from './read-history.js';

/**
 * A run beside the job's usual: the median rows, duration and time per phase (`timings`: source,
 * reading, each sink's prepare and publish) of the job's last BASELINE_RUNS successful runs before
 * it (a run or a schedule's tick: a backfill's windows are another size of work), and what of it
 * is far off that usual:
 * - a duration (the run's, or a phase's) at least FAR_RATIO times the median or at most its
 *   1/FAR_RATIO, and at least FAR_MIN_MS away from it (so that 0.02 s against 0.08 s is no news);
 * - rows more than FAR_ROWS_SHARE of the median away from it (any rows against a median of none).
 * One earlier successful run is enough to compare with: a pair of nights is a history too.
 */
const BASELINE_RUNS = 7;
const FAR_RATIO = 3;
const FAR_MIN_MS = 1_000;
const FAR_ROWS_SHARE = 0.5;

/** A measure of a run, far off the job's usual: the run's value and the median of the baseline's runs. */
export interface FarOff {
  /** `rows`, `durationMs`, or `timings.<phase>` (`timings.source`, `timings.publish:csv`). */
  measure: string;
  value: number;
  median: number;
}

export interface RunBaseline {
  /** How many successful runs the medians are of (1 to BASELINE_RUNS). */
  runs: number;
  rows: number;
  durationMs: number;
  /** Per phase the run measured, the median of the baseline's runs that measured it. */
  timings: Record<string, number>;
  /** What of the run is far off; empty: a usual run. */
  farOff: FarOff[];
}

/** A run that read its export to the end: its rows and time say what the source gave. */
const COMPARED: ReadonlySet<RunVerdict> = new Set(['ok', 'refused', 'partial']);

/**
 * The baseline of `run` from `records` (the job's, newest first); undefined when the run did not
 * read to its end (failed, stopped, killed, running) or no successful run came before it.
 */
export function baselineOf(run: JudgedRun, records: readonly JudgedRun[]): RunBaseline | undefined {
  const { record } = run;
  if (!COMPARED.has(run.verdict) || record.durationMs === undefined || record.rows === undefined) return undefined;
  const earlier = records
    .filter(
      ({ record: other, verdict }) =>
        verdict === 'ok' && other.trigger !== 'backfill' && other.startedAt < record.startedAt && other.durationMs !== undefined && other.rows !== undefined,
    )
    .slice(0, BASELINE_RUNS)
    .map((judged) => judged.record);
  if (earlier.length === 0) return undefined;
  const rows = median(earlier.map((other) => other.rows!));
  const durationMs = median(earlier.map((other) => other.durationMs!));
  const timings: Record<string, number> = {};
  for (const phase of Object.keys(record.timings ?? {})) {
    const measured = earlier.flatMap((other) => {
      const ms = other.timings?.[phase];
      return ms === undefined ? [] : [ms];
    });
    if (measured.length > 0) timings[phase] = median(measured);
  }
  const farOff: FarOff[] = [];
  if (rowsFarOff(record.rows, rows)) farOff.push({ measure: 'rows', value: record.rows, median: rows });
  if (timeFarOff(record.durationMs, durationMs)) farOff.push({ measure: 'durationMs', value: record.durationMs, median: durationMs });
  for (const [phase, usual] of Object.entries(timings)) {
    const value = record.timings![phase]!;
    if (timeFarOff(value, usual)) farOff.push({ measure: `timings.${phase}`, value, median: usual });
  }
  return { runs: earlier.length, rows, durationMs, timings, farOff };
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

function timeFarOff(value: number, usual: number): boolean {
  if (Math.abs(value - usual) < FAR_MIN_MS) return false;
  return value >= usual * FAR_RATIO || value * FAR_RATIO <= usual;
}

function rowsFarOff(value: number, usual: number): boolean {
  return Math.abs(value - usual) > usual * FAR_ROWS_SHARE;
}
