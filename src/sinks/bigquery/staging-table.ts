import type { BigQuery } from '@google-cloud/bigquery';
import { apiFailureOf, isDuplicate, isNotFound } from './api-failure.js';
import { BigQueryRequestError } from './bigquery-errors.js';
import { withRetry, type RetryContext } from './retry.js';
import type { SchemaField } from './schema-contract.js';
import { tableName } from './table-name.js';

/** How long a staging table outlives a run that could not delete it (killed, or BigQuery down). */
export const STAGING_TABLE_LIFETIME_MS = 24 * 60 * 60 * 1000;

export interface StagingTable {
  projectId: string;
  datasetId: string;
  tableId: string;
  jobName: string;
}

/**
 * Creates the run's staging table with the run's schema and an expiration a day ahead, before the
 * load (which then uses CREATE_NEVER + WRITE_TRUNCATE). Resolves with the table's creation time
 * (BigQuery's clock, ms since the epoch) when BigQuery says it.
 *
 * Why create first rather than let the load create it and patch the expiration afterwards: the
 * table then expires from the moment it exists, so a run killed between load and patch cannot
 * leave a table that lives for ever; and a load that outlives an abort (cancel is best effort)
 * finds no table to write into instead of re-creating one without an expiration. Load-job options
 * cannot set an expiration (`destinationTableProperties` has none). The emulator keeps the
 * expiration through a WRITE_TRUNCATE load (it stores table metadata as given) but never enforces it.
 *
 * A table of that name already there is the same run's (the name is derived from the run id):
 * a retried prepare reuses it, and the WRITE_TRUNCATE load replaces its content and schema.
 */
export async function createStagingTable(
  client: BigQuery,
  table: StagingTable,
  fields: readonly SchemaField[],
  retry: RetryContext,
  now: Date = new Date(),
  layout: Record<string, unknown> = {},
): Promise<{ createdAt: number | undefined }> {
  const reference = client.dataset(table.datasetId, { projectId: table.projectId }).table(table.tableId);
  try {
    const [, metadata] = await withRetry(
      'tables.insert (staging)',
      () =>
        reference.create({
          schema: { fields: nullableFields(fields) },
          // Partitioned and clustered like the target (see stagingTableOptions), so that a copy of
          // one of its partitions lands in the same partition of the target.
          ...layout,
          expirationTime: String(now.getTime() + STAGING_TABLE_LIFETIME_MS),
          description: 'tilehouse staging table: one run, before it is published; deleted after publish, expires by itself',
        }),
      retry,
    );
    return { createdAt: creationTimeOf(metadata) };
  } catch (error) {
    const failure = apiFailureOf(error);
    if (!isDuplicate(failure)) {
      throw new BigQueryRequestError(table.jobName, `creating staging table ${describe(table)}`, failure.messages, { cause: error });
    }
  }
  try {
    const [metadata] = await withRetry('tables.get (staging)', () => reference.getMetadata(), retry);
    return { createdAt: creationTimeOf(metadata) };
  } catch (error) {
    throw new BigQueryRequestError(table.jobName, `reading staging table ${describe(table)}`, apiFailureOf(error).messages, { cause: error });
  }
}

function creationTimeOf(metadata: unknown): number | undefined {
  const value = Number((metadata as { creationTime?: unknown } | undefined)?.creationTime ?? Number.NaN);
  return Number.isFinite(value) ? value : undefined;
}

/**
 * Deletes the staging table; best effort, never throws: a failure is logged and the table expires
 * by itself. Returns whether it is known to be gone.
 */
export async function deleteStagingTable(client: BigQuery, table: StagingTable, retry: RetryContext): Promise<boolean> {
  const reference = client.dataset(table.datasetId, { projectId: table.projectId }).table(table.tableId);
  try {
    await withRetry('tables.delete (staging)', () => reference.delete(), retry);
    return true;
  } catch (error) {
    const failure = apiFailureOf(error);
    if (isNotFound(failure)) return true;
    retry.logger.warn(
      { table: describe(table), status: failure.status, reasons: failure.reasons, error: failure.messages[0] },
      'could not delete the BigQuery staging table; it expires within a day by itself',
    );
    return false;
  }
}

/** All tilehouse columns are NULLABLE: a later run may leave cells empty, `schema: add` may add columns. */
export function nullableFields(fields: readonly SchemaField[]): { name: string; type: string; mode: 'NULLABLE' }[] {
  return fields.map((field) => ({ name: field.name, type: field.type, mode: 'NULLABLE' }));
}

function describe(table: StagingTable): string {
  return tableName(table);
}
