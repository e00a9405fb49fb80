import { Cron } from 'croner';
import type { BigQuerySinkConfig } from '../../config/job-schema.js';

/**
 * BigQuery's fixed limit of table operations per table per day: every load, copy and query job
 * that writes a table counts (failed loads too), and it cannot be raised. For partitioned tables
 * BigQuery documents a separate, higher limit of partition modifications instead; tilehouse holds
 * every target to 1,500, which is conservative there.
 */
export const TABLE_OPERATIONS_PER_DAY = 1_500;
/** `plan` warns from this share of the limit on. */
export const WARN_SHARE = 0.8;
// croner takes ~0.3 ms per next run, so runs are counted only up to the limit (a day that reaches
// it is over it whatever the rest), and at most a few thousand in all (a dense cron over a week).
const MAX_COUNTED_RUNS_PER_DAY = TABLE_OPERATIONS_PER_DAY;
const MAX_COUNTED_RUNS = 5_000;
const DAYS_LOOKED_AT = 7;
const DAY_MS = 86_400_000;

/**
 * The most runs the schedule makes in one day (UTC days, over the week from `from`): a daily cron
 * is 1, `*\/5 * * * *` is 288, `0 9 * * 1` is 1 (its busiest day). Capped at 1,500 (the limit):
 * a schedule that reaches it is over it.
 */
export function runsPerDay(schedule: { cron: string; timezone: string }, from: Date = new Date()): number {
  const cron = new Cron(schedule.cron, { paused: true, timezone: schedule.timezone });
  const start = Math.floor(from.getTime() / DAY_MS) * DAY_MS;
  let busiest = 0;
  let counted = 0;
  for (let day = 0; day < DAYS_LOOKED_AT && busiest < MAX_COUNTED_RUNS_PER_DAY && counted < MAX_COUNTED_RUNS; day++) {
    const dayStart = start + day * DAY_MS;
    let count = 0;
    // nextRun(x) is strictly after x: start 1 ms before the day so a run at 00:00:00 counts.
    let next = cron.nextRun(new Date(dayStart - 1));
    while (next !== null && next.getTime() < dayStart + DAY_MS && count < MAX_COUNTED_RUNS_PER_DAY) {
      count += 1;
      counted += 1;
      next = cron.nextRun(next);
    }
    busiest = Math.max(busiest, count);
  }
  return busiest;
}

/**
 * Jobs one run sends that write the target (the staging load writes a table of its own, which
 * never sees a second run): one copy (or, in `replace`, one truncating query that keeps the
 * table's metadata; in `merge`, one MERGE statement), or with `partitionBy` in `replace` mode one copy per partition the run's
 * rows fall in, which only the rows can tell: `perPartition` says so.
 */
export function targetOperationsPerRun(config: Pick<BigQuerySinkConfig, 'writeMode' | 'partitionBy'>): { operations: number; perPartition: boolean } {
  return config.partitionBy && config.writeMode === 'replace' ? { operations: 1, perPartition: true } : { operations: 1, perPartition: false };
}

/**
 * The `plan` lines for the target's daily table operations: the count, its share of the limit,
 * and a `warning:` line from 80 % on. Backfills are extra: each window is one run.
 */
export function describeTableOperations(
  config: Pick<BigQuerySinkConfig, 'writeMode' | 'partitionBy'>,
  schedule: { cron: string; timezone: string } | undefined,
): string[] {
  const { perPartition } = targetOperationsPerRun(config);
  const perRun = perPartition
    ? '1 copy per partition its rows fall in'
    : config.writeMode === 'replace'
      ? '1 job onto the table'
      : config.writeMode === 'merge'
        ? '1 MERGE statement onto the table'
        : '1 copy onto the table';
  const lines = [`table operations: each run (or backfill window) sends ${perRun}, plus 1 load into its own staging table`];
  if (schedule === undefined) {
    lines.push(
      `table operations/day: no schedule; each run or backfill window uses ${perPartition ? 'one per partition' : 'one'} of ${format(TABLE_OPERATIONS_PER_DAY)} a day`,
    );
    return lines;
  }
  const runs = runsPerDay(schedule);
  const operations = runs;
  const share = operations / TABLE_OPERATIONS_PER_DAY;
  const runsText = runs >= MAX_COUNTED_RUNS_PER_DAY ? `>= ${format(runs)}` : format(runs);
  lines.push(
    `table operations/day: ${runsText} scheduled runs x ${perPartition ? '(partitions per run, at least 1)' : '1'} = ${perPartition ? '>= ' : ''}${format(operations)} ` +
      `of ${format(TABLE_OPERATIONS_PER_DAY)} (${Math.round(share * 100)} %)`,
  );
  if (share >= WARN_SHARE) {
    lines.push(
      `warning: ${share >= 1 ? 'exceeds' : 'near'} BigQuery's ${format(TABLE_OPERATIONS_PER_DAY)} table operations per table per day; runs past it fail with bigquery_quota_exceeded. Schedule less often.`,
    );
  } else if (perPartition) {
    const limit = Math.floor((TABLE_OPERATIONS_PER_DAY * WARN_SHARE) / Math.max(runs, 1));
    lines.push(`  (${format(limit)} partitions per run reach ${Math.round(WARN_SHARE * 100)} % of the limit; a backfill window adds its partitions too)`);
  }
  return lines;
}

function format(value: number): string {
  return value.toLocaleString('en-US');
}
