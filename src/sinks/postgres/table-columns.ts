import type pg from 'pg';
import type { PlannedColumn } from './postgres-plan.js';

/** A column of an existing table as the catalogue says it (`format_type`'s spelling). */
export interface ExistingColumn {
  name: string;
  type: string;
  notNull: boolean;
}

/** The columns of `schema.table` in their order, or undefined when no such table (or partitioned table) exists. */
export async function readTableColumns(client: pg.Client, schema: string, table: string): Promise<ExistingColumn[] | undefined> {
  const found = await client.query<{ oid: number }>(
    `SELECT c.oid FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p')`,
    [schema, table],
  );
  const oid = found.rows[0]?.oid;
  if (oid === undefined) return undefined;
  const columns = await client.query<{ name: string; type: string; not_null: boolean }>(
    `SELECT attname AS name, pg_catalog.format_type(atttypid, atttypmod) AS type, attnotnull AS not_null
       FROM pg_catalog.pg_attribute WHERE attrelid = $1 AND attnum > 0 AND NOT attisdropped ORDER BY attnum`,
    [oid],
  );
  return columns.rows.map((row) => ({ name: row.name, type: row.type, notNull: row.not_null }));
}

export type ContractDecision =
  | { action: 'create' | 'unchanged' }
  | { action: 'add'; columns: PlannedColumn[] }
  | { action: 'mismatch'; differences: string[]; hint: string };

/** Types a table may hold for a column besides the one tilehouse creates: an unconstrained numeric keeps every numeric(38,9) value. */
function typeFits(existing: string, wanted: PlannedColumn): boolean {
  return existing === wanted.postgresType || (wanted.type === 'NUMERIC' && existing === 'numeric');
}

/**
 * The tile's columns (with lineage) against the table's, under the schema contract: `freeze`
 * takes only the same columns; `add` also new columns, added nullable in the publishing
 * transaction. A column the table has and the tile lost, or a type that differs, refuses both.
 */
export function contractDecision(
  existing: readonly ExistingColumn[] | undefined,
  wanted: readonly PlannedColumn[],
  contract: 'freeze' | 'add',
): ContractDecision {
  if (existing === undefined) return { action: 'create' };
  const byName = new Map(existing.map((column) => [column.name, column]));
  const differences: string[] = [];
  const added: PlannedColumn[] = [];
  for (const column of wanted) {
    const held = byName.get(column.name);
    if (held === undefined) added.push(column);
    else if (!typeFits(held.type, column)) differences.push(`column ${column.name} is ${held.type} in the table, ${column.postgresType} in the tile`);
  }
  const wantedNames = new Set(wanted.map((column) => column.name));
  for (const column of existing) if (!wantedNames.has(column.name) && column.notNull) differences.push(`column ${column.name} (NOT NULL) is not in the tile`);
  if (contract === 'freeze') for (const column of added) differences.push(`+ ${column.name} ${column.postgresType}`);
  if (differences.length > 0) {
    return {
      action: 'mismatch',
      differences,
      hint:
        contract === 'freeze' && differences.every((line) => line.startsWith('+'))
          ? 'With schema: add, new columns are added to the table in the publishing transaction.'
          : "Change the table (or the job's columns) so they agree; tilehouse never drops or retypes a column.",
    };
  }
  return added.length > 0 ? { action: 'add', columns: added } : { action: 'unchanged' };
}
