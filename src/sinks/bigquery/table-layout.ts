import type { BigQuerySinkConfig } from '../../config/job-schema.js';
import type { Column, TypedValue } from '../../transform/column.js';
import { isCalendarDate } from '../../value-types/civil-date.js';
import { BigQueryLayoutError, BigQueryTableLayoutMismatchError } from './bigquery-errors.js';

/** How the target table is partitioned and clustered, resolved against the tile's columns. */
export interface TableLayout {
  /** Column partitioning (`partitionBy`); absent for unpartitioned and ingestion-time tables. */
  partition?: {
    /** The output column name (what BigQuery calls the field). */
    field: string;
    columnIndex: number;
    columnType: 'DATE' | 'TIMESTAMP';
    type: 'DAY' | 'MONTH';
  };
  clustering?: string[];
  requirePartitionFilter?: boolean;
  /** From `partitionExpirationDays`, as BigQuery takes it (ms, a decimal string). */
  partitionExpirationMs?: string;
}

/** What tables.get says about partitioning and clustering; only these keys matter here. */
export interface TableMetadataLike {
  timePartitioning?: { type?: string | null; field?: string | null; expirationMs?: string | null } | null;
  clustering?: { fields?: string[] | null } | null;
  requirePartitionFilter?: boolean | null;
  /** Committed rows (a decimal string), for the publish guard. */
  numRows?: string | number | null;
}

// Clustering columns must be of an orderable, non-floating type (BigQuery refuses FLOAT64; of the
// tile's types every other one is allowed). Partition columns: DATE or TIMESTAMP here, because a
// tile has no DATETIME and integer-range partitioning is not offered.
const CLUSTERABLE = new Set(['INT64', 'NUMERIC', 'STRING', 'TIMESTAMP', 'DATE']);
const MS_PER_DAY = 86_400_000;

/**
 * Resolves `partitionBy` and `clusterBy` against the run's columns (by output name, else header,
 * both case-insensitive as BigQuery treats names). Called before anything is loaded, by `plan`
 * and by every run, because only page 0 says which columns a tile has; a bad column fails with
 * `bigquery_partition_column_invalid` / `bigquery_cluster_column_invalid`, naming the job, the
 * sink's field and the value.
 */
export function resolveTableLayout(config: BigQuerySinkConfig, columns: readonly Column[], where: { jobName: string; sink: string }): TableLayout {
  const layout: TableLayout = {};
  const names = () => columns.map((column) => column.name).join(', ');
  if (config.partitionBy) {
    const value = config.partitionBy.column;
    const index = findColumn(columns, value);
    const column = index === undefined ? undefined : columns[index];
    if (index === undefined || column === undefined) {
      throw new BigQueryLayoutError('bigquery_partition_column_invalid', where, ['partitionBy', 'column'], value, `no such column; columns: ${names()}`);
    }
    if (column.type !== 'DATE' && column.type !== 'TIMESTAMP') {
      throw new BigQueryLayoutError(
        'bigquery_partition_column_invalid',
        where,
        ['partitionBy', 'column'],
        value,
        // Only a datetime query item gives one (TIMESTAMP, or DATE through `columns`): no override
        // turns a number or text into a date.
        `column ${column.name} is ${column.type}; partitioning needs a DATE or TIMESTAMP column, which only a datetime query item gives`,
      );
    }
    layout.partition = { field: column.name, columnIndex: index, columnType: column.type, type: config.partitionBy.granularity === 'month' ? 'MONTH' : 'DAY' };
  }
  if (config.clusterBy) {
    layout.clustering = config.clusterBy.map((value, position) => {
      const index = findColumn(columns, value);
      const column = index === undefined ? undefined : columns[index];
      const field = ['clusterBy', position];
      if (column === undefined) throw new BigQueryLayoutError('bigquery_cluster_column_invalid', where, field, value, `no such column; columns: ${names()}`);
      if (!CLUSTERABLE.has(column.type)) {
        throw new BigQueryLayoutError(
          'bigquery_cluster_column_invalid',
          where,
          field,
          value,
          `column ${column.name} is ${column.type}, which BigQuery cannot cluster by`,
        );
      }
      return column.name;
    });
  }
  if (config.requirePartitionFilter !== undefined) layout.requirePartitionFilter = config.requirePartitionFilter;
  if (config.partitionExpirationDays !== undefined) layout.partitionExpirationMs = String(Math.round(config.partitionExpirationDays * MS_PER_DAY));
  return layout;
}

/** The index of the column with this output name, else this header (case-insensitive), or undefined. */
export function findColumn(columns: readonly Column[], nameOrHeader: string): number | undefined {
  const lower = nameOrHeader.toLowerCase();
  const byName = columns.findIndex((column) => column.name.toLowerCase() === lower);
  if (byName >= 0) return byName;
  const byHeader = columns.findIndex((column) => column.header.toLowerCase() === lower);
  return byHeader >= 0 ? byHeader : undefined;
}

/** The table-resource fields that create the target with this layout. */
export function targetTableOptions(layout: TableLayout, writeMode: BigQuerySinkConfig['writeMode']): Record<string, unknown> {
  const table: Record<string, unknown> = {};
  // Ingestion-time day partitions in `partition` mode, addressed by the `$YYYYMMDD` decorator.
  const partitioning = layout.partition
    ? { type: layout.partition.type, field: layout.partition.field }
    : writeMode === 'partition'
      ? { type: 'DAY' }
      : undefined;
  if (partitioning) {
    table.timePartitioning = layout.partitionExpirationMs === undefined ? partitioning : { ...partitioning, expirationMs: layout.partitionExpirationMs };
    if (layout.requirePartitionFilter !== undefined) table.requirePartitionFilter = layout.requirePartitionFilter;
  }
  if (layout.clustering) table.clustering = { fields: layout.clustering };
  return table;
}

/**
 * The staging table's layout: the same column partitioning and clustering as the target, so a
 * copy of `staging$p` fills exactly `target$p`; but no partition expiration (it would delete a
 * backfill's old partitions before they are copied) and no required filter (nobody queries it).
 * In ingestion-time `partition` mode the staging table is not partitioned: all of it goes into
 * the run's one day.
 */
export function stagingTableOptions(layout: TableLayout): Record<string, unknown> {
  return {
    ...(layout.partition ? { timePartitioning: { type: layout.partition.type, field: layout.partition.field } } : {}),
    ...(layout.clustering ? { clustering: { fields: layout.clustering } } : {}),
  };
}

/** What publish must change on an existing table so it has the configured options. */
export interface LayoutReconciliation {
  /** Options to set with tables.patch; empty when the table already has them. */
  patch: Record<string, unknown>;
  /** One line per change, e.g. `requirePartitionFilter false -> true`. */
  changes: string[];
}

/**
 * Compares an existing table with the configured layout, before anything is loaded.
 *
 * - Partitioning (type and column) cannot be changed on an existing table: a difference is
 *   refused with `bigquery_table_layout_mismatch` (re-create the table, or change the job).
 * - Clustering, `requirePartitionFilter` and the partition expiration can: a difference is
 *   reconciled with tables.patch right before publish (options not set in the job are left as
 *   the table has them, so a warehouse team's own settings survive). New clustering applies to
 *   data written from then on.
 */
export function reconcileLayout(
  existing: TableMetadataLike,
  layout: TableLayout,
  writeMode: BigQuerySinkConfig['writeMode'],
  where: { jobName: string; table: string },
): LayoutReconciliation {
  const current = existing.timePartitioning ?? undefined;
  const describe = (partitioning: { type?: string | null; field?: string | null } | undefined) =>
    partitioning?.type ? `${partitioning.type} on ${partitioning.field ?? 'ingestion time'}` : 'not partitioned';
  if (layout.partition) {
    const same = current?.type === layout.partition.type && (current.field ?? '').toLowerCase() === layout.partition.field.toLowerCase();
    if (!same) throw new BigQueryTableLayoutMismatchError(where.jobName, where.table, describe(current), describe(layout.partition));
  } else if (writeMode === 'partition' && current !== undefined && (current.type !== 'DAY' || current.field)) {
    throw new BigQueryTableLayoutMismatchError(where.jobName, where.table, describe(current), describe({ type: 'DAY' }));
  }

  const patch: Record<string, unknown> = {};
  const changes: string[] = [];
  const currentClustering = existing.clustering?.fields ?? [];
  if (
    layout.clustering &&
    currentClustering.map((field) => field.toLowerCase()).join(',') !== layout.clustering.map((field) => field.toLowerCase()).join(',')
  ) {
    patch.clustering = { fields: layout.clustering };
    changes.push(`clustering ${currentClustering.length > 0 ? currentClustering.join(', ') : 'none'} -> ${layout.clustering.join(', ')}`);
  }
  if (layout.requirePartitionFilter !== undefined && (existing.requirePartitionFilter ?? false) !== layout.requirePartitionFilter) {
    patch.requirePartitionFilter = layout.requirePartitionFilter;
    changes.push(`requirePartitionFilter ${existing.requirePartitionFilter ?? false} -> ${layout.requirePartitionFilter}`);
  }
  if (layout.partitionExpirationMs !== undefined && current !== undefined && String(current.expirationMs ?? '') !== layout.partitionExpirationMs) {
    // tables.patch replaces the whole timePartitioning object: type and field go back as they were.
    patch.timePartitioning = { ...current, expirationMs: layout.partitionExpirationMs };
    changes.push(
      `partition expiration ${current.expirationMs ? `${Number(current.expirationMs) / MS_PER_DAY} days` : 'none'} -> ${Number(layout.partitionExpirationMs) / MS_PER_DAY} days`,
    );
  }
  return { patch, changes };
}

/** One line per configured layout option, for `plan`. */
export function describeLayout(layout: TableLayout, writeMode: BigQuerySinkConfig['writeMode']): string[] {
  const lines: string[] = [];
  if (layout.partition) {
    lines.push(`partitioned by ${layout.partition.type === 'DAY' ? 'day' : 'month'} on ${layout.partition.field} (${layout.partition.columnType})`);
  } else if (writeMode === 'partition') {
    lines.push('partitioned by day on ingestion time');
  }
  if (layout.clustering) lines.push(`clustered by ${layout.clustering.join(', ')}`);
  if (layout.requirePartitionFilter !== undefined) lines.push(`requirePartitionFilter: ${layout.requirePartitionFilter}`);
  if (layout.partitionExpirationMs !== undefined) lines.push(`partitions expire after ${Number(layout.partitionExpirationMs) / MS_PER_DAY} days`);
  return lines;
}

// BigQuery puts dates outside 1960-01-01..2159-12-31 into the __UNPARTITIONED__ partition, and
// NULLs into __NULL__; neither is a decorator a partition copy can be trusted to address, so such a
// row fails the run while rows are still being written (before anything is loaded).
const FIRST_PARTITION_DAY = '1960-01-01';
const LAST_PARTITION_DAY = '2159-12-31';

/**
 * The partition id (`YYYYMMDD` or `YYYYMM`, the decorator's form) a row's partition value falls
 * in, or a reason why it has none. TIMESTAMPs are partitioned by their UTC day, as BigQuery does.
 */
export function partitionIdOf(value: TypedValue, partition: NonNullable<TableLayout['partition']>): { id: string } | { invalid: string } {
  if (value === null) return { invalid: 'is null (it would go to the __NULL__ partition)' };
  const day = partition.columnType === 'DATE' ? String(value) : new Date(Number(value)).toISOString().slice(0, 10);
  if (day < FIRST_PARTITION_DAY || day > LAST_PARTITION_DAY || !isCalendarDate(day)) {
    return { invalid: `is outside ${FIRST_PARTITION_DAY}..${LAST_PARTITION_DAY} (it would go to the __UNPARTITIONED__ partition)` };
  }
  const compact = day.replaceAll('-', '');
  return { id: partition.type === 'MONTH' ? compact.slice(0, 6) : compact };
}
