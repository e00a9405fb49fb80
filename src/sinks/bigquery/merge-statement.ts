import type { SchemaField } from './schema-contract.js';
import type { MergeKey } from './merge-key.js';
import { rangePredicate, type PartitionRange } from './partition-range.js';

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
 * A column-partitioned target adds the staging rows' partition range to the ON condition, as
 * constants on the target's side (`T.day >= DATE '…' AND T.day < DATE '…'`): a table with
 * `require_partition_filter` refuses the MERGE without it (`T.day = S.day` is no filter BigQuery
 * can eliminate partitions by), and with it the MERGE reads only the run's partitions of the
 * target, not the whole table. A target row outside the range is then never matched: a key's row
 * must stay in its partition (partition by a date the key determines, see docs/bigquery.md).
 */
export function mergeStatement(target: string, staging: string, fields: readonly SchemaField[], key: MergeKey, range?: PartitionRange): string {
  const keys = key.columns.map(quoteIdentifier);
  const columns = fields.map((field) => quoteIdentifier(field.name));
  const keySet = new Set(key.columns.map((column) => column.toLowerCase()));
  const updated = fields.filter((field) => !keySet.has(field.name.toLowerCase())).map((field) => quoteIdentifier(field.name));
  return [
    `MERGE ${quoteIdentifier(target)} T`,
    `USING ${quoteIdentifier(staging)} S`,
    `ON ${[...keys.map((column) => `T.${column} = S.${column}`), ...(range ? [rangePredicate(range, 'T')] : [])].join(' AND ')}`,
    // A table of key columns only has nothing to update.
    ...(updated.length > 0 ? [`WHEN MATCHED THEN UPDATE SET ${updated.map((column) => `${column} = S.${column}`).join(', ')}`] : []),
    `WHEN NOT MATCHED THEN INSERT (${columns.join(', ')}) VALUES (${columns.map((column) => `S.${column}`).join(', ')})`,
  ].join('\n');
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
