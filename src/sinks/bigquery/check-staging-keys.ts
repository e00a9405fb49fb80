import type { BigQuery } from '@google-cloud/bigquery';
import { apiFailureOf } from './api-failure.js';
import type { BigQueryPlan } from './bigquery-plan.js';
import { BigQueryDuplicateKeyError, BigQueryNullKeyError, BigQueryRequestError } from './bigquery-errors.js';
import type { MergeKey } from './merge-key.js';
import { duplicateKeyQuery, latestRowsOnlyStatement, nullKeyQuery } from './merge-statement.js';
import { withRetry, type RetryContext } from './retry.js';
import { tableName } from './table-name.js';

/**
 * `writeMode: merge`, end of prepare: makes the staging table a valid MERGE source, each key
 * once, or refuses the run before anything is published: a null key, or a key more than one row
 * shares that `latestBy` cannot choose between, fail it; with `latestBy`, the rows it beats are
 * then deleted from the staging table (a DML statement on the staging table only).
 * Two small read-only queries over the staging table, rather than a set of keys kept while rows
 * stream by, which would grow with the run; they are billed for the key columns' bytes.
 * No deterministic job id: a repeated query changes nothing.
 */
export async function settleStagingKeys(
  client: BigQuery,
  plan: BigQueryPlan,
  key: MergeKey,
  stagingTableId: string,
  context: { jobName: string; location: string | undefined; retry: RetryContext },
): Promise<void> {
  const staging = tableName({ ...plan, tableId: stagingTableId });
  const target = tableName(plan);
  const query = async (sql: string, what: string): Promise<Record<string, unknown>[]> => {
    try {
      const [rows] = await withRetry(
        `jobs.query (${what})`,
        () => client.query({ query: sql, useLegacySql: false, labels: plan.labels, ...(context.location ? { location: context.location } : {}) }),
        context.retry,
      );
      return rows as Record<string, unknown>[];
    } catch (error) {
      if (context.retry.signal?.aborted) throw error;
      throw new BigQueryRequestError(context.jobName, `checking the primary key of ${staging} (${what})`, apiFailureOf(error).messages, { cause: error });
    }
  };

  const [nulls] = await query(nullKeyQuery(staging, key), 'null keys');
  const nullRows = Number(nulls?.n ?? 0);
  if (nullRows > 0) throw new BigQueryNullKeyError(context.jobName, target, key.columns, nullRows);

  const duplicates = await query(duplicateKeyQuery(staging, key), 'duplicate keys');
  if (duplicates.length > 0) {
    const width = key.columns.length + (key.latestBy ? 1 : 0);
    throw new BigQueryDuplicateKeyError(
      context.jobName,
      target,
      [...key.columns, ...(key.latestBy ? [key.latestBy] : [])],
      duplicates.map((row) => ({ values: Array.from({ length: width }, (_, index) => String(row[`k${index}`])), rows: Number(row.n) })),
      key.latestBy,
    );
  }
  if (key.latestBy !== undefined) await query(latestRowsOnlyStatement(staging, { ...key, latestBy: key.latestBy }), 'keeping the latest row per key');
}
