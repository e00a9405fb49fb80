import type pg from 'pg';
import { type PlannedColumn, type PostgresPlan, tableColumns } from './postgres-plan.js';
import { quoteIdentifier } from './sql-names.js';

/**
 * The statements of a publish, one write mode each, run inside the one publishing transaction
 * (publish.ts). None takes an ACCESS EXCLUSIVE lock: `replace` is DELETE + INSERT, not TRUNCATE
 * or a table swap, so readers keep reading the previous rows until COMMIT (MVCC) and are never
 * queued behind the publish; views, grants, comments, indexes and triggers on the table are
 * untouched, because the table is the same table. What it costs is dead tuples, which autovacuum
 * reclaims (docs/postgres.md has the measurements behind the choice).
 */

const list = (columns: readonly { name: string }[], prefix = '') => columns.map((column) => `${prefix}${quoteIdentifier(column.name)}`).join(', ');

/** CREATE TABLE for a target that does not exist yet: merge's key becomes its primary key (the lookups of every later merge). */
export function createTableStatement(plan: PostgresPlan): string {
  const columns = tableColumns(plan).map((column) => `${quoteIdentifier(column.name)} ${column.postgresType}`);
  if (plan.merge) columns.push(`PRIMARY KEY (${plan.merge.keys.map(quoteIdentifier).join(', ')})`);
  return `CREATE TABLE ${plan.sqlTarget} (${columns.join(', ')})`;
}

export function addColumnsStatement(plan: PostgresPlan, columns: readonly PlannedColumn[]): string {
  return `ALTER TABLE ${plan.sqlTarget} ${columns.map((column) => `ADD COLUMN ${quoteIdentifier(column.name)} ${column.postgresType}`).join(', ')}`;
}

/** The staging table's columns, the lineage values given as parameters $1 (run id) and $2 (extraction start). */
function selectFromStaging(plan: PostgresPlan, source: string): { columns: string; values: string } {
  const lineage = plan.lineage ? ', $1::text, $2::timestamptz' : '';
  return { columns: list(tableColumns(plan)), values: `${list(plan.columns, `${source}.`)}${lineage}` };
}

/**
 * The days a `partition` publish replaces, as a condition on the target `t` with its parameters:
 * the run's window when it has one (prepare refused rows outside it), else exactly the days its
 * rows fall on (for a TIMESTAMP column, days in the job's zone), not the range between the first
 * and the last: a run holding 05-09 and 05-17 leaves the days between as they are. A run without
 * rows and without a window replaces no day. Each day is a range on the column, so an index on
 * it serves the DELETE.
 */
function partitionDays(plan: PostgresPlan, staging: string): { where: string; values: string[] } {
  const column = `t.${quoteIdentifier(plan.partition!.column)}`;
  const timestamp = plan.partition!.type === 'TIMESTAMP';
  const values = timestamp ? [plan.timezone] : [];
  const bound = (day: string) => (timestamp ? `(${day})::timestamp AT TIME ZONE $1` : day);
  if (plan.window) {
    values.push(plan.window.from, plan.window.to);
    const [from, to] = timestamp ? ['$2::date', '$3::date'] : ['$1::date', '$2::date'];
    return { where: `${column} >= ${bound(from)} AND ${column} < ${bound(to)}`, values };
  }
  const staged = quoteIdentifier(plan.partition!.column);
  const day = timestamp ? `(${staged} AT TIME ZONE $1)::date` : staged;
  return {
    where: `EXISTS (SELECT 1 FROM (SELECT DISTINCT ${day} AS day FROM ${staging}) d WHERE ${column} >= ${bound('d.day')} AND ${column} < ${bound('d.day + 1')})`,
    values,
  };
}

export interface MovedRows {
  /** Rows the target took: inserted, or for merge inserted + updated. */
  rows: number;
  details: Record<string, number>;
}

/** Moves the staging table's rows into the target by the write mode. */
export async function moveRows(client: pg.Client, plan: PostgresPlan, staging: string, lineage: { runId: string; extractedAt: Date }): Promise<MovedRows> {
  const lineageValues = plan.lineage ? [lineage.runId, lineage.extractedAt.toISOString()] : [];
  const insert = selectFromStaging(plan, 's');
  switch (plan.writeMode) {
    case 'replace': {
      const deleted = await client.query(`DELETE FROM ${plan.sqlTarget}`);
      const inserted = await client.query(`INSERT INTO ${plan.sqlTarget} (${insert.columns}) SELECT ${insert.values} FROM ${staging} s`, lineageValues);
      return { rows: inserted.rowCount ?? 0, details: { deletedRows: deleted.rowCount ?? 0 } };
    }
    case 'append': {
      const inserted = await client.query(`INSERT INTO ${plan.sqlTarget} (${insert.columns}) SELECT ${insert.values} FROM ${staging} s`, lineageValues);
      return { rows: inserted.rowCount ?? 0, details: {} };
    }
    case 'partition': {
      const days = partitionDays(plan, staging);
      const deleted = await client.query(`DELETE FROM ${plan.sqlTarget} t WHERE ${days.where}`, days.values);
      const inserted = await client.query(`INSERT INTO ${plan.sqlTarget} (${insert.columns}) SELECT ${insert.values} FROM ${staging} s`);
      return { rows: inserted.rowCount ?? 0, details: { deletedRows: deleted.rowCount ?? 0 } };
    }
    case 'merge':
      return merge(client, plan, staging, lineageValues);
  }
}

/**
 * `merge`: the run's rows (the latest by `latestBy` of each key) update the rows whose key they
 * share, only where a value differs (an unchanged row is not rewritten: no dead tuple, and its
 * lineage keeps the run that last changed it), and are inserted where no row has their key.
 */
async function merge(client: pg.Client, plan: PostgresPlan, staging: string, lineageValues: string[]): Promise<MovedRows> {
  const { keys, latestBy } = plan.merge!;
  const keyList = keys.map(quoteIdentifier).join(', ');
  const source = latestBy ? `(SELECT DISTINCT ON (${keyList}) * FROM ${staging} ORDER BY ${keyList}, ${quoteIdentifier(latestBy)} DESC NULLS LAST)` : staging;
  const matches = keys.map((key) => `t.${quoteIdentifier(key)} = s.${quoteIdentifier(key)}`).join(' AND ');
  const values = plan.columns.filter((column) => !keys.includes(column.name));
  let updated = 0;
  if (values.length > 0 || plan.lineage) {
    const sets = [
      ...values.map((column) => `${quoteIdentifier(column.name)} = s.${quoteIdentifier(column.name)}`),
      '"_run_id" = $1::text',
      '"_extracted_at" = $2::timestamptz',
    ];
    const changed = values.length === 0 ? 'false' : `(${list(values, 't.')}) IS DISTINCT FROM (${list(values, 's.')})`;
    const result = await client.query(`UPDATE ${plan.sqlTarget} t SET ${sets.join(', ')} FROM ${source} s WHERE ${matches} AND ${changed}`, lineageValues);
    updated = result.rowCount ?? 0;
  }
  const insert = selectFromStaging(plan, 's');
  const inserted = await client.query(
    `INSERT INTO ${plan.sqlTarget} (${insert.columns}) SELECT ${insert.values} FROM ${source} s WHERE NOT EXISTS (SELECT 1 FROM ${plan.sqlTarget} t WHERE ${matches})`,
    lineageValues,
  );
  const insertedRows = inserted.rowCount ?? 0;
  return { rows: insertedRows + updated, details: { insertedRows, updatedRows: updated } };
}
