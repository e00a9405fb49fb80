import type { BigQuery } from '@google-cloud/bigquery';
import type { BigQueryPlan } from './bigquery-plan.js';
import { BigQuerySchemaMismatchError, BigQueryTooManyPartitionsError } from './bigquery-errors.js';
import { ensureDataset } from './ensure-dataset.js';
import { readTable } from './read-table-schema.js';
import type { RetryContext } from './retry.js';
import { checkSchemaContract, type SchemaDecision, type TableFieldLike } from './schema-contract.js';
import { reconcileLayout, type LayoutReconciliation, type TableLayout, type TableMetadataLike } from './table-layout.js';
import { tableName } from './table-name.js';
import type { TargetMetadata } from './target-holding.js';

// BigQuery lets one job modify at most 4,000 partitions; the staging load writes all of a run's.
export const MAX_PARTITIONS_PER_JOB = 4_000;

/** What the target is, and what publish must do to it so that the run fits. */
export interface TargetInspection {
  decision: Exclude<SchemaDecision, { action: 'mismatch' }>;
  existing: readonly TableFieldLike[] | undefined;
  /** What publish patches on an existing table so it has the job's options. */
  reconciliation: LayoutReconciliation | undefined;
  /** The dataset's location, where every job of the run runs. */
  location: string | undefined;
  /** Whether the table exists, and its numRows: what the publish guard reads of a replaced table. */
  metadata: TargetMetadata;
  /** The target's partitioning as publish will find it (the table's, else the job's for a new table). */
  partitioning: TargetPartitioning | undefined;
}

/**
 * How the target is partitioned, read from the table (tables.get), not only from the job: a
 * warehouse team may have set `require_partition_filter` or an expiration on a table tilehouse
 * found, and the job's own options are patched onto the table before publish.
 */
export interface TargetPartitioning {
  /** The partition column; absent for ingestion-time partitioning. */
  field: string | undefined;
  type: 'DAY' | 'MONTH' | 'HOUR' | 'YEAR';
  /** Whether queries must filter on the partition column (after the publish's patch). */
  requireFilter: boolean;
  /** Partition expiration in ms (after the publish's patch), or undefined when partitions do not expire. */
  expirationMs: number | undefined;
}

/** The partitioning a publish will find: the job's options win over the table's (they are patched on). */
export function targetPartitioning(
  metadata: TableMetadataLike | undefined,
  layout: TableLayout,
  writeMode: BigQueryPlan['writeMode'],
): TargetPartitioning | undefined {
  const current = metadata?.timePartitioning ?? undefined;
  const type = (current?.type ?? layout.partition?.type ?? (writeMode === 'partition' ? 'DAY' : undefined)) as TargetPartitioning['type'] | undefined;
  if (type === undefined) return undefined;
  const field = current ? (current.field ?? undefined) : layout.partition?.field;
  const tableRequires = metadata?.requirePartitionFilter ?? (current as { requirePartitionFilter?: boolean } | undefined)?.requirePartitionFilter ?? false;
  const expiration = layout.partitionExpirationMs ?? current?.expirationMs ?? undefined;
  return {
    field,
    type,
    requireFilter: layout.requirePartitionFilter ?? tableRequires,
    expirationMs: expiration === undefined || expiration === null || expiration === '' ? undefined : Number(expiration),
  };
}

/**
 * Prepare's first step: makes sure the dataset exists, reads the target, and refuses a run that
 * could not be published before anything is loaded: a schema the contract refuses, a
 * partitioning that differs from the existing table's (it cannot change), more partitions than one
 * job may write. Changes nothing readers of the target see (a new dataset is empty).
 */
export async function inspectTarget(
  client: BigQuery,
  plan: BigQueryPlan,
  partitionCount: number,
  context: { jobName: string; retry: RetryContext },
): Promise<TargetInspection> {
  const { jobName, retry } = context;
  const targetName = tableName(plan);
  const dataset = await ensureDataset(client, { projectId: plan.projectId, datasetId: plan.datasetId, location: plan.location, jobName }, retry);
  const table = dataset.created
    ? undefined
    : await readTable(client, { projectId: plan.projectId, datasetId: plan.datasetId, tableId: plan.tableId, jobName }, retry);
  const existing = table?.fields;
  const decision = checkSchemaContract(existing, plan.fields, plan.schema);
  if (decision.action === 'mismatch') {
    throw new BigQuerySchemaMismatchError(jobName, targetName, plan.schema, decision.diff, decision.hint);
  }
  const reconciliation = table ? reconcileLayout(table.metadata, plan.layout, plan.writeMode, { jobName, table: targetName }) : undefined;
  if (partitionCount > MAX_PARTITIONS_PER_JOB) {
    throw new BigQueryTooManyPartitionsError(jobName, targetName, partitionCount, MAX_PARTITIONS_PER_JOB);
  }
  const numRows = table?.metadata.numRows;
  const metadata = {
    exists: table !== undefined,
    numRows: numRows === undefined || numRows === null || !Number.isFinite(Number(numRows)) ? undefined : Number(numRows),
    partitioned: table?.metadata.timePartitioning !== undefined && table?.metadata.timePartitioning !== null,
  };
  return {
    decision,
    existing,
    reconciliation,
    location: dataset.location,
    partitioning: targetPartitioning(table?.metadata, plan.layout, plan.writeMode),
    metadata,
  };
}
