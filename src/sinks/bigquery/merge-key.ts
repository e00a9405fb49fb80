import type { BigQuerySinkConfig } from '../../config/job-schema.js';
import type { Column } from '../../transform/column.js';
import { BigQueryLayoutError } from './bigquery-errors.js';
import { findColumn } from './table-layout.js';

/** `writeMode: merge`'s key, resolved against the run's columns: output names, as BigQuery knows them. */
export interface MergeKey {
  columns: string[];
  /** Of rows sharing a key in one run, the one with the highest value of this column wins. */
  latestBy?: string;
}

/**
 * Resolves `primaryKey` and `latestBy` like `partitionBy` (output name, else header,
 * case-insensitive), before anything is loaded: by `plan`, by `validate` (against the visible
 * query items) and by every run (against page 0's columns). A column the tile does not have fails
 * with `bigquery_key_column_invalid`, naming the field and the value. Undefined outside merge mode.
 */
export function resolveMergeKey(config: BigQuerySinkConfig, columns: readonly Column[], where: { jobName: string; sink: string }): MergeKey | undefined {
  if (config.writeMode !== 'merge' || config.primaryKey === undefined) return undefined;
  const resolve = (value: string, path: (string | number)[]): string => {
    const column = columns[findColumn(columns, value) ?? -1];
    if (column === undefined) {
      throw new BigQueryLayoutError(
        'bigquery_key_column_invalid',
        where,
        path,
        value,
        `no such column (a key must be a visible item's header or output name); columns: ${columns.map((each) => each.name).join(', ')}`,
      );
    }
    return column.name;
  };
  const key: MergeKey = { columns: config.primaryKey.map((value, index) => resolve(value, ['primaryKey', index])) };
  if (config.latestBy !== undefined) key.latestBy = resolve(config.latestBy, ['latestBy']);
  return key;
}
