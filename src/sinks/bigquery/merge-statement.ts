import type { SchemaField } from './schema-contract.js';
import type { MergeKey } from './merge-key.js';
import { everyPartitionPredicate, rangePredicate, type PartitionRange } from './partition-range.js';

/** A column or table name as a quoted identifier (tilehouse's names never contain a backtick). */
export function quoteIdentifier(name: string): string {
  return `\`${name.replaceAll('`', '')}\``;
}

/**
 * `writeMode: merge`'s one publish statement: the staging table merged into the target on the
 * key. A matched row gets every column the run writes (lineage included, so `_run_id` names the
 * run that last wrote it); a column of the table the run does not write keeps its value. A new
 * key is inserted. The source is the staging table itself, each key once by then (duplicates
 * were refused, or reduced to the latest row by latestRowsOnlyStatement): the emulator takes only
 * a table as a MERGE source, and BigQuery reads it as well as a subquery. Keys are compared with
 * `=`: null keys were refused before, so no null-safe comparison is needed. One statement, one
 * atomic step: readers see the table before or after.
 *
 * `targetFilter` (see mergeTargetFilter) is a condition on the target's partition column, ANDed
 * to the key: a table with `require_partition_filter` refuses the MERGE without one (`T.day =
 * S.day` is no filter BigQuery can eliminate partitions by).
 */
export function mergeStatement(target: string, staging: string, fields: readonly SchemaField[], key: MergeKey, targetFilter?: string): string {
  const keys = key.columns.map(quoteIdentifier);
  const columns = fields.map((field) => quoteIdentifier(field.name));
  const keySet = new Set(key.columns.map((column) => column.toLowerCase()));
  const updated = fields.filter((field) => !keySet.has(field.name.toLowerCase())).map((field) => quoteIdentifier(field.name));
  return [
    `MERGE ${quoteIdentifier(target)} T`,
    `USING ${quoteIdentifier(staging)} S`,
    `ON ${[...keys.map((column) => `T.${column} = S.${column}`), ...(targetFilter ? [targetFilter] : [])].join(' AND ')}`,
    // A table of key columns only has nothing to update.
    ...(updated.length > 0 ? [`WHEN MATCHED THEN UPDATE SET ${updated.map((column) => `${column} = S.${column}`).join(', ')}`] : []),
    `WHEN NOT MATCHED THEN INSERT (${columns.join(', ')}) VALUES (${columns.map((column) => `S.${column}`).join(', ')})`,
  ].join('\n');
}

/**
 * What a MERGE's ON adds to the key on a column-partitioned target, so that it never holds a key
 * twice:
 *
 * - the partition column is one of the key's columns: the run's partition range (`T.day >= DATE
 *   '…' AND T.day < DATE '…'`). A key's rows all lie in its own partition, so no row outside the
 *   range can match, and the MERGE reads only the run's partitions of the target;
 * - otherwise the MERGE matches over the whole table, because a key's partition value may have
 *   changed since its row was written (a table partitioned by a date that moves: updated-at, a due
 *   date), and a MERGE confined to the run's range would not match that row and would insert the
 *   key a second time. On a table that requires a partition filter that takes a filter covering
 *   every partition (everyPartitionPredicate), which BigQuery accepts as one it could eliminate
 *   partitions by; on any other table, nothing.
 *
 * The cost of the whole-table match: BigQuery bills a MERGE for the columns it references in every
 * partition it scans (here the key columns, and the partition column under the covering filter)
 * plus the whole partitions it updates, so matching over the whole table costs the key columns of
 * the partitions the run does not touch (see docs/bigquery.md, "Merge").
 */
export function mergeTargetFilter(
  key: MergeKey,
  partitioning: { field: string | undefined; requireFilter: boolean } | undefined,
  range: PartitionRange | undefined,
  columnTypeOf: (column: string) => string | undefined,
): string | undefined {
  if (partitioning === undefined) return undefined;
  const field = partitioning.field;
  if (field !== undefined && range !== undefined && key.columns.some((column) => column.toLowerCase() === field.toLowerCase()))
    return rangePredicate(range, 'T');
  if (!partitioning.requireFilter) return undefined;
  if (field === undefined) return everyPartitionPredicate('_PARTITIONTIME', 'TIMESTAMP', 'T');
  const type = columnTypeOf(field) ?? range?.columnType;
  return everyPartitionPredicate(field, type === 'DATE' || type === 'DATETIME' ? type : 'TIMESTAMP', 'T');
}

/**
 * With `latestBy`: deletes from the staging table every row but the one with its key's highest
 * `latestBy` (any value beats NULL: MAX ignores NULLs, and a key whose rows are all NULL keeps
 * its one row). Rows are compared as TO_JSON_STRING of (key, latestBy), in which NULL equals NULL,
 * and the query runs after the duplicate check refused ties (NULLs included), so exactly one row
 * per key stays. Only the staging table is changed; repeating it deletes nothing more. (A
 * correlated `EXISTS` over an aliased staging table is what BigQuery would also take; the
 * emulator misreads the alias, this form it runs.)
 */
export function latestRowsOnlyStatement(staging: string, key: MergeKey & { latestBy: string }): string {
  const keys = key.columns.map(quoteIdentifier);
  const latest = quoteIdentifier(key.latestBy);
  const table = quoteIdentifier(staging);
  return `DELETE FROM ${table} WHERE TO_JSON_STRING(STRUCT(${[...keys, latest].join(', ')})) NOT IN (SELECT TO_JSON_STRING(STRUCT(${[...keys, `MAX(${latest}) AS ${latest}`].join(', ')})) FROM ${table} GROUP BY ${keys.join(', ')})`;
}

/**
 * Finds up to 5 keys that more than one row of the staging table has (with `latestBy`: rows
 * that also tie on it, which it cannot choose between). GROUP BY treats NULLs as equal, so two
 * rows with a null `latestBy` and the same key tie.
 */
export function duplicateKeyQuery(staging: string, key: MergeKey): string {
  const grouped = [...key.columns, ...(key.latestBy ? [key.latestBy] : [])].map(quoteIdentifier);
  const shown = grouped.map((column) => `TO_JSON_STRING(${column})`);
  return `SELECT ${shown.map((column, index) => `${column} AS k${index}`).join(', ')}, COUNT(*) AS n FROM ${quoteIdentifier(staging)} GROUP BY ${grouped.join(', ')} HAVING COUNT(*) > 1 ORDER BY n DESC, ${grouped.join(', ')} LIMIT 5`;
}

/** Counts the staging table's rows with a null in any key column. */
export function nullKeyQuery(staging: string, key: MergeKey): string {
  return `SELECT COUNT(*) AS n FROM ${quoteIdentifier(staging)} WHERE ${key.columns.map((column) => `${quoteIdentifier(column)} IS NULL`).join(' OR ')}`;
}
