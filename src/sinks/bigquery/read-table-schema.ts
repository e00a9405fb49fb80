import type { BigQuery } from '@google-cloud/bigquery';
import { apiFailureOf, isNotFound } from './api-failure.js';
import { BigQueryRequestError } from './bigquery-errors.js';
import type { TableFieldLike } from './schema-contract.js';
import { withRetry, type RetryContext } from './retry.js';

/** The table's top-level fields, or undefined when the table does not exist yet. */
export async function readTableSchema(
  client: BigQuery,
  target: { projectId: string; datasetId: string; tableId: string; tileId: string },
  retry: RetryContext,
): Promise<TableFieldLike[] | undefined> {
  const table = client.dataset(target.datasetId, { projectId: target.projectId }).table(target.tableId);
  try {
    const [metadata] = await withRetry('tables.get', () => table.getMetadata(), retry);
    return ((metadata as { schema?: { fields?: TableFieldLike[] } }).schema?.fields ?? []) as TableFieldLike[];
  } catch (error) {
    const failure = apiFailureOf(error);
    if (isNotFound(failure)) return undefined;
    throw new BigQueryRequestError(
      target.tileId,
      `reading the schema of ${target.projectId}.${target.datasetId}.${target.tableId}`,
      failure.messages,
      { cause: error },
    );
  }
}
