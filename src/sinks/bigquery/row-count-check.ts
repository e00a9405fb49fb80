// How many rows a publish put in the target, reconciled from BigQuery's counts, the target's and the run's own: its own module so that bigquery-writer.ts keeps only the two phases that call it.
import type { BigQuery, JobMetadata } from '@google-cloud/bigquery';
import { messageOf } from '../../errors.js';
import type { SinkRunContext } from '../sink.js';
import type { BigQueryPlan } from './bigquery-plan.js';
import { RUN_ID_COLUMN } from './lineage.js';
import { quoteIdentifier } from './merge-statement.js';
import { rangePredicate, type PartitionRange } from './partition-range.js';
import type { PublishedBy } from './publish-strategies.js';
import { withRetry, type RetryContext } from './retry.js';
import type { JobOutcome } from './run-job.js';
import { tableName } from './table-name.js';

const MS_PER_DAY = 86_400_000;

export interface CountRequest {
  client: BigQuery;
  plan: BigQueryPlan;
  context: SinkRunContext;
  /** The writer's name of its target. */
  target: string;
  retry: RetryContext;
}

/** What prepare counted: BigQuery's outputRows of the staging load, the run's partition range, its rows in expired partitions. */
interface PreparedCounts {
  bigqueryRows: number | undefined;
  range: PartitionRange | undefined;
  expiredRows: number | undefined;
}

/** The publish's row counts, reconciled. */
export interface PublishedRows {
  /** What the target holds of the run: `written` less the rows BigQuery drops from expired partitions. */
  rows: number;
  written: number;
  expiredRows: number;
  /** The count read at the target (an adopted publish without a count of its own). */
  atTarget: number | undefined;
  /** What BigQuery said the publish wrote: the copies' copiedRows or the MERGE's dmlStats. */
  reported: number | undefined;
  adopted: boolean;
  /** An adopted publish of this run id wrote other rows than this run sent: the earlier one is kept. */
  keptEarlier: boolean;
  /** What a MERGE did, as BigQuery reports it. */
  merged: { insertedRows?: number; updatedRows?: number };
}

/**
 * What BigQuery says the publish wrote is the truth: the copies' copiedRows, the MERGE's
 * dmlStats. Without them (a truncating query reports no row count; the emulator reports
 * nothing) this run's load counts only if this run's jobs published it; an adopted job (the
 * same run id published before, perhaps other data) is counted at the target instead.
 */
export async function reconcilePublishedRows(
  request: CountRequest,
  published: { by: PublishedBy; jobs: JobOutcome[] },
  prepared: PreparedCounts,
  sentRows: number,
): Promise<PublishedRows> {
  const copiedRows = published.jobs.map((job) => Number(job.metadata.statistics?.copy?.copiedRows ?? Number.NaN));
  const reportedCopies = copiedRows.length > 0 && copiedRows.every(Number.isFinite) ? copiedRows.reduce((sum, rows) => sum + rows, 0) : undefined;
  const last = published.jobs.at(-1);
  const merged = published.by === 'merge query' ? dmlCounts(last?.metadata) : {};
  // A MERGE writes the rows it inserted and updated (fewer than were sent when latestBy chose).
  const reportedMerge = merged.insertedRows !== undefined && merged.updatedRows !== undefined ? merged.insertedRows + merged.updatedRows : undefined;
  const adopted = published.jobs.some((job) => job.adopted);
  const reported = reportedCopies ?? reportedMerge;
  const atTarget = reported === undefined && adopted ? await countPublished(request, published.by, prepared.range) : undefined;
  const written = reported ?? atTarget ?? prepared.bigqueryRows ?? sentRows;
  // BigQuery drops rows of expired partitions at once: the target holds the others. (A count read
  // at the target already lacks them.)
  const expiredRows = atTarget === undefined ? (prepared.expiredRows ?? 0) : 0;
  const rows = Math.max(0, written - expiredRows);
  const keptEarlier = adopted && written !== sentRows;
  return { rows, written, expiredRows, atTarget, reported, adopted, keptEarlier, merged };
}

/** The `warning:` lines of a publish's counts (an earlier publish kept, rows of expired partitions), each also logged. */
export function rowCountWarnings(
  request: Pick<CountRequest, 'context' | 'target'>,
  counted: PublishedRows,
  sentRows: number,
  publishJobId: string | undefined,
  expirationMs: number | undefined,
): string[] {
  const { context, target } = request;
  const { keptEarlier, expiredRows, rows, written } = counted;
  if (keptEarlier) {
    context.logger.warn(
      { target, jobId: publishJobId, publishedRows: rows, sentRows },
      'this run id was already published with other rows; the earlier publish is kept and this run published nothing',
    );
  }
  const warnings = [
    ...(keptEarlier
      ? [
          `${target}: run id ${context.runId} was already published there by job ${publishJobId ?? '?'} with ${rows} rows; ` +
            `this run's ${sentRows} rows were not published (a run id publishes once; re-run with a new --run-id to publish the current data)`,
        ]
      : []),
    ...(expiredRows > 0 ? [expiredWarning(target, expiredRows, written, expirationMs)] : []),
  ];
  if (expiredRows > 0) {
    context.logger.warn({ target, expiredRows, rows }, 'rows of expired partitions were published; BigQuery drops them at once');
  }
  return warnings;
}

/**
 * What an adopted publish left in the target, counted there: the rows carrying the run id
 * (append and merge write `_run_id`), or the whole table a truncating publish replaced. One
 * COUNT query (on a whole table answered from metadata, free). Undefined for a partition
 * publish, whose copy jobs report copiedRows anyway, or when the count cannot be read.
 */
export async function countPublished(request: CountRequest, by: PublishedBy, range: PartitionRange | undefined): Promise<number | undefined> {
  const { client, plan, context, retry } = request;
  const table = quoteIdentifier(tableName(plan));
  const byRunId = plan.writeMode === 'append' || plan.writeMode === 'merge';
  if (!byRunId && by !== 'copy' && by !== 'truncate-data query') return undefined;
  if (plan.writeMode === 'partition') return undefined;
  // The run's rows all lie in its partition range (and after a truncating publish the whole
  // table does): the range changes no count, and a require-partition-filter table needs it.
  const conditions = [...(byRunId ? [`${quoteIdentifier(RUN_ID_COLUMN.name)} = @runId`] : []), ...(range ? [rangePredicate(range)] : [])];
  const query = `SELECT COUNT(*) AS n FROM ${table}${conditions.length > 0 ? ` WHERE ${conditions.join(' AND ')}` : ''}`;
  try {
    const [rows] = await withRetry(
      'count published rows',
      () => client.query({ query, ...(byRunId ? { params: { runId: context.runId } } : {}), ...(plan.location ? { location: plan.location } : {}) }),
      retry,
    );
    const count = Number((rows as Array<{ n?: unknown }>)[0]?.n);
    return Number.isFinite(count) ? count : undefined;
  } catch (error) {
    context.logger.warn({ target: request.target, error: messageOf(error) }, 'could not count the rows an earlier publish of this run id left in the target');
    return undefined;
  }
}

/** The `warning:` line of a publish whose rows fall in part in partitions BigQuery has already expired. */
function expiredWarning(target: string, expiredRows: number, written: number, expirationMs: number | undefined): string {
  const days = expirationMs === undefined ? '?' : String(expirationMs / MS_PER_DAY);
  return (
    `${target}: ${expiredRows} of the ${written} rows published fall in partitions older than the table's partition expiration ` +
    `(timePartitioning.expirationMs = ${expirationMs ?? '?'}, ${days} days); BigQuery drops them at once, so the table holds ${written - expiredRows}`
  );
}

/** What a MERGE did, as BigQuery reports it (`dmlStats`; the emulator reports nothing). */
function dmlCounts(job: JobMetadata | undefined): { insertedRows?: number; updatedRows?: number } {
  const stats = (job?.statistics?.query as { dmlStats?: { insertedRowCount?: string; updatedRowCount?: string } } | undefined)?.dmlStats;
  const counts: { insertedRows?: number; updatedRows?: number } = {};
  for (const [name, value] of [
    ['insertedRows', stats?.insertedRowCount],
    ['updatedRows', stats?.updatedRowCount],
  ] as const) {
    if (value !== undefined && Number.isFinite(Number(value))) counts[name] = Number(value);
  }
  return counts;
}
