import type { BigQuery, TableField } from '@google-cloud/bigquery';
import { apiFailureOf, isDuplicate } from './api-failure.js';
import { BigQueryRequestError } from './bigquery-errors.js';
import type { BigQueryPlan } from './bigquery-plan.js';
import { withRetry, type RetryContext } from './retry.js';
import type { SchemaDecision, TableFieldLike } from './schema-contract.js';
import { nullableFields } from './staging-table.js';
import { targetTableOptions, type LayoutReconciliation } from './table-layout.js';
import { tableName } from './table-name.js';

/**
 * Makes the target able to take the publish copy, right before it (never in prepare, which must
 * not change what readers see):
 *
 * - a missing target is created with the run's schema and layout (`partitionBy`, `clusterBy`,
 *   `requirePartitionFilter`, `partitionExpirationDays`), and in `partition` mode with ingestion-time
 *   DAY partitioning (a copy onto `table$YYYYMMDD` needs a partitioned table; the old load created
 *   it through CREATE_IF_NEEDED + timePartitioning, a copy job has no partitioning option). Created
 *   here in every mode, never by the copy: a table a copy creates may take over properties of its
 *   source, and the staging table expires.
 * - `schema: add` with new columns: a copy job cannot add columns (it has no
 *   schemaUpdateOptions; appending a wider source fails), and neither a partition copy nor the
 *   metadata-keeping WRITE_TRUNCATE_DATA of `replace` changes the table's schema, so the new
 *   NULLABLE columns are added with tables.patch first. Adding NULLABLE columns changes no
 *   existing row.
 * - options of the job that differ from the existing table's (clustering, requirePartitionFilter,
 *   partition expiration; see reconcileLayout) are set with one tables.patch.
 */
export async function readyTarget(
  client: BigQuery,
  plan: BigQueryPlan,
  decision: Exclude<SchemaDecision, { action: 'mismatch' }>,
  existing: readonly TableFieldLike[] | undefined,
  reconciliation: LayoutReconciliation | undefined,
  context: { jobName: string; retry: RetryContext },
): Promise<void> {
  const table = client.dataset(plan.datasetId, { projectId: plan.projectId }).table(plan.tableId);
  const name = tableName(plan);
  if (decision.action === 'created') {
    try {
      await withRetry(
        'tables.insert (target)',
        () =>
          table.create({
            schema: { fields: nullableFields(plan.fields) },
            // In `partition` mode, ingestion-time day partitions addressed by the `$YYYYMMDD`
            // decorator: the partition is "the run of that day" by definition, and WRITE_TRUNCATE
            // on the decorator replaces exactly that day. With `partitionBy`, the rows' column.
            ...targetTableOptions(plan.layout, plan.writeMode),
          }),
        context.retry,
      );
      context.retry.logger.info({ table: name, writeMode: plan.writeMode }, 'BigQuery table created');
    } catch (error) {
      const failure = apiFailureOf(error);
      // Another run created it since prepare; the copy decides whether it fits.
      if (isDuplicate(failure)) return;
      throw new BigQueryRequestError(context.jobName, `creating table ${name}`, failure.messages, { cause: error });
    }
    return;
  }
  if (reconciliation && reconciliation.changes.length > 0) {
    try {
      await withRetry('tables.patch (options)', () => table.setMetadata(reconciliation.patch), context.retry);
      context.retry.logger.info({ table: name, changes: reconciliation.changes }, 'BigQuery table options updated');
    } catch (error) {
      throw new BigQueryRequestError(context.jobName, `updating ${name} (${reconciliation.changes.join('; ')})`, apiFailureOf(error).messages, {
        cause: error,
      });
    }
  }
  if (decision.action === 'added') {
    // tables.patch replaces the whole field list: the existing fields go back exactly as read
    // (modes, descriptions, nested fields), the new ones after them.
    const fields = [...(existing ?? []), ...nullableFields(decision.columns)] as TableField[];
    try {
      await withRetry('tables.patch (add columns)', () => table.setMetadata({ schema: { fields } }), context.retry);
      context.retry.logger.info({ table: name, added: decision.columns.map((column) => column.name) }, 'BigQuery columns added');
    } catch (error) {
      throw new BigQueryRequestError(
        context.jobName,
        `adding columns ${decision.columns.map((column) => column.name).join(', ')} to ${name}`,
        apiFailureOf(error).messages,
        { cause: error },
      );
    }
  }
}
