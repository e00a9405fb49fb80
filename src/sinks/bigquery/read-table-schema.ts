import type { BigQuery } from '@google-cloud/bigquery';
import { apiFailureOf, isNotFound } from './api-failure.js';
import { BigQueryRequestError } from './bigquery-errors.js';
import type { TableFieldLike } from './schema-contract.js';
import type { TableMetadataLike } from './table-layout.js';
import { withRetry, type RetryContext } from './retry.js';
import { tableName } from './table-name.js';

/** An existing table: its top-level fields and what it says about partitioning and clustering. */
export interface ExistingTable {
  fields: TableFieldLike[];
  metadata: TableMetadataLike;
}

/** The table's fields and layout, or undefined when the table does not exist yet. */
export async function readTable(
  client: BigQuery,
  target: { projectId: string; datasetId: string; tableId: string; jobName: string },
  retry: RetryContext,
): Promise<ExistingTable | undefined> {
  const table = client.dataset(target.datasetId, { projectId: target.projectId }).table(target.tableId);
  try {
    const [metadata] = await withRetry('tables.get', () => table.getMetadata(), retry);
    const fields = ((metadata as { schema?: { fields?: TableFieldLike[] } }).schema?.fields ?? []) as TableFieldLike[];
    return { fields, metadata: metadata as TableMetadataLike };
  } catch (error) {
    const failure = apiFailureOf(error);
    if (isNotFound(failure)) return undefined;
    throw new BigQueryRequestError(target.jobName, `reading the schema of ${tableName(target)}`, failure.messages, { cause: error });
  }
}
