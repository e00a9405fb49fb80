import type { BigQuery } from '@google-cloud/bigquery';
import { messageOf } from '../../errors.js';
import type { TargetHolding } from '../publish-guard.js';
import type { BigQueryPlan } from './bigquery-plan.js';
import { quoteIdentifier } from './merge-statement.js';
import { withRetry, type RetryContext } from './retry.js';
import { latestPublication, recentLedgerRuns } from './run-ledger.js';
import { tableName } from './table-name.js';

/** What prepare learned of the target from tables.get (inspectTarget): whether it exists, and its numRows. */
export interface TargetMetadata {
  exists: boolean;
  /** tables.get's numRows (committed rows; a streaming buffer is not counted), when it says. */
  numRows: number | undefined;
  /** The table is partitioned (a whole-table read might need a partition filter). */
  partitioned?: boolean;
}

export interface HoldingContext {
  client: BigQuery;
  plan: BigQueryPlan;
  /** The partition ids the run's rows fall in (partitionBy), or the one day partition of `partition` mode. */
  partitions: readonly string[];
  /** The run ledger is written (sinks.bigquery.runLedger not false): the recent runs are read there. */
  ledger: boolean;
  /** How many recent runs the guard's rule takes. */
  recentRuns: number;
  location: string | undefined;
  retry: RetryContext;
}

/**
 * What a BigQuery target holds, for the publish guard, from metadata wherever BigQuery has it:
 *
 * - `replace`: the table's numRows from the tables.get prepare already made (no request; without
 *   one, an unpartitioned table is counted, which BigQuery answers from metadata);
 * - `replace` with `partitionBy`, and `partition`: the rows of exactly the partitions the run
 *   replaces, from INFORMATION_SCHEMA.PARTITIONS (metadata: no table data scanned, allowed on a
 *   table with require_partition_filter); where that view cannot be read (the emulator), a count
 *   filtered on the partition column's range (partitionBy), or the run ledger's last published
 *   row of that partition (`partition`, whose ingestion-time partitions no column filters);
 * - `append`, `merge` (and `partition`): the rows of the job's latest published runs into the
 *   table, newest first, from the run ledger (one query), for the recent-runs rule.
 *
 * Never a whole-table COUNT(*) of a partitioned table: one would be refused on a table that
 * requires a partition filter (an unpartitioned table whose tables.get gave no numRows is counted).
 */
export async function bigqueryHolding(metadata: TargetMetadata, context: HoldingContext): Promise<TargetHolding> {
  const { plan } = context;
  const target = tableName({ ...plan, tableId: plan.destinationTableId });
  const recent = async () => (context.ledger && plan.writeMode !== 'replace' ? { recentRuns: await recentRunsOf(context) } : {});
  try {
    if (plan.writeMode === 'append' || plan.writeMode === 'merge') {
      return { target, effect: 'add', rows: metadata.numRows, readFrom: 'table metadata', ...(await recent()) };
    }
    if (!metadata.exists) return { target, effect: 'replace', rows: undefined, readFrom: 'no table yet', ...(await recent()) };
    if (plan.writeMode === 'replace' && plan.layout.partition === undefined) {
      if (metadata.numRows !== undefined) return { target, effect: 'replace', rows: metadata.numRows, readFrom: 'table metadata' };
      // tables.get said no numRows (the emulator leaves it out at 0): an unpartitioned table is
      // counted whole, which BigQuery answers from metadata and no partition filter can refuse.
      if (metadata.partitioned === true)
        return { target, effect: 'replace', rows: undefined, readFrom: 'table metadata', unreadable: 'tables.get gave no numRows' };
      const [rows] = (await withRetry(
        'count rows',
        () =>
          context.client.query({
            query: `SELECT COUNT(*) AS n FROM ${quoteIdentifier(tableName(plan))}`,
            ...(context.location ? { location: context.location } : {}),
          }),
        context.retry,
      )) as unknown as [Array<{ n?: unknown }>];
      return { target, effect: 'replace', rows: Number(rows[0]?.n ?? 0), readFrom: 'rows counted' };
    }
    const shown = partitionsShown(context.partitions);
    if (context.partitions.length === 0) return { target, effect: 'replace', rows: 0, readFrom: 'no partition replaced', ...(await recent()) };
    const rows = (await partitionRowsFromMetadata(context)) ?? (await partitionRowsCounted(context));
    if (rows === undefined)
      return {
        target,
        effect: 'replace',
        rows: undefined,
        readFrom: `partition ${shown}`,
        unreadable: 'neither INFORMATION_SCHEMA.PARTITIONS nor the run ledger says what the partition holds',
        ...(await recent()),
      };
    return {
      target,
      effect: 'replace',
      rows: rows.rows,
      readFrom: `${rows.from} of ${context.partitions.length === 1 ? 'partition' : 'partitions'} ${shown}`,
      ...(await recent()),
    };
  } catch (error) {
    return {
      target,
      effect: plan.writeMode === 'append' || plan.writeMode === 'merge' ? 'add' : 'replace',
      rows: undefined,
      readFrom: 'unreadable',
      unreadable: messageOf(error),
    };
  }
}

function partitionsShown(ids: readonly string[]): string {
  const sorted = [...ids].sort();
  return sorted.length <= 3 ? sorted.join(', ') : `${sorted[0]}..${sorted.at(-1)} (${sorted.length})`;
}

/** The partitions' total_rows from INFORMATION_SCHEMA.PARTITIONS; undefined when the view cannot be read. */
async function partitionRowsFromMetadata(context: HoldingContext): Promise<{ rows: number; from: string } | undefined> {
  const { client, plan, retry } = context;
  const view = `\`${plan.projectId}.${plan.datasetId}.INFORMATION_SCHEMA.PARTITIONS\``;
  const ids = context.partitions.map((id) => `'${id.replace(/[^0-9]/g, '')}'`).join(', ');
  const query = `SELECT partition_id, total_rows FROM ${view} WHERE table_name = @table AND partition_id IN (${ids})`;
  try {
    const [rows] = (await withRetry(
      'partition rows',
      () => client.query({ query, params: { table: plan.tableId }, ...(context.location ? { location: context.location } : {}) }),
      { ...retry, limits: { ...retry.limits, maxAttempts: 2 } },
    )) as unknown as [Array<{ total_rows?: unknown }>];
    return { rows: rows.reduce((sum, row) => sum + Number(row.total_rows ?? 0), 0), from: 'INFORMATION_SCHEMA.PARTITIONS' };
  } catch (error) {
    retry.logger.debug({ error: messageOf(error) }, 'INFORMATION_SCHEMA.PARTITIONS could not be read; the partitions are counted another way');
    return undefined;
  }
}

/**
 * The rows of the run's partitions without INFORMATION_SCHEMA: `partitionBy` counted with a filter
 * on the partition column's range (what a table that requires a partition filter accepts), grouped
 * by partition so that a partition in the range the run does not replace is not counted;
 * `partition` mode: the run ledger's last published row of that day partition.
 */
async function partitionRowsCounted(context: HoldingContext): Promise<{ rows: number; from: string } | undefined> {
  const { client, plan, retry } = context;
  const partition = plan.layout.partition;
  if (partition === undefined) {
    if (!context.ledger) return undefined;
    const [latest] = await recentLedgerRuns(client, ledgerDataset(context), plan.identity.jobName, plan.destinationTableId, 1, retry, { exact: true });
    return latest === undefined ? undefined : { rows: latest.rows, from: 'the run ledger' };
  }
  const sorted = [...context.partitions].sort();
  const bound = (id: string) =>
    partition.type === 'MONTH' ? `${id.slice(0, 4)}-${id.slice(4, 6)}-01` : `${id.slice(0, 4)}-${id.slice(4, 6)}-${id.slice(6, 8)}`;
  const low = bound(sorted[0]!);
  const lastDay = new Date(`${bound(sorted.at(-1)!)}T00:00:00Z`);
  if (partition.type === 'MONTH') lastDay.setUTCMonth(lastDay.getUTCMonth() + 1);
  else lastDay.setUTCDate(lastDay.getUTCDate() + 1);
  const high = lastDay.toISOString().slice(0, 10);
  const column = quoteIdentifier(partition.field);
  const cast = partition.columnType === 'DATE' ? 'DATE' : 'TIMESTAMP';
  const day = partition.columnType === 'DATE' ? column : `DATE(${column})`;
  const format = partition.type === 'MONTH' ? '%Y%m' : '%Y%m%d';
  const query =
    `SELECT FORMAT_DATE('${format}', ${day}) AS partition_id, COUNT(*) AS n FROM ${quoteIdentifier(tableName(plan))} ` +
    `WHERE ${column} >= ${cast}(@low) AND ${column} < ${cast}(@high) GROUP BY partition_id`;
  const [rows] = (await withRetry(
    'partition rows counted',
    () => client.query({ query, params: { low, high }, ...(context.location ? { location: context.location } : {}) }),
    retry,
  )) as unknown as [Array<{ partition_id?: unknown; n?: unknown }>];
  const wanted = new Set(context.partitions);
  return { rows: rows.filter((row) => wanted.has(String(row.partition_id))).reduce((sum, row) => sum + Number(row.n ?? 0), 0), from: 'rows counted' };
}

async function recentRunsOf(context: HoldingContext): Promise<number[]> {
  const runs = await recentLedgerRuns(
    context.client,
    ledgerDataset(context),
    context.plan.identity.jobName,
    context.plan.tableId,
    context.recentRuns,
    context.retry,
  );
  return runs.map((run) => run.rows);
}

function ledgerDataset(context: HoldingContext) {
  return { projectId: context.plan.projectId, datasetId: context.plan.datasetId, location: context.location };
}

/**
 * The run the ledger says last published into the plan's table (any partition), with the job
 * definition it recorded: asked only when a guard refuses, to say what changed since. Undefined
 * when the ledger has none.
 */
export async function ledgerWrittenBy(client: BigQuery, plan: BigQueryPlan, job: string, retry: RetryContext): Promise<TargetHolding['writtenBy']> {
  const run = await latestPublication(client, { projectId: plan.projectId, datasetId: plan.datasetId, location: plan.location }, job, plan.tableId, retry);
  if (run === undefined) return undefined;
  return { runId: run.runId, ...(run.definition === undefined ? {} : { definition: run.definition }) };
}
