import type { BigQuerySinkConfig } from '../../config/job-schema.js';
import { isLineageColumn } from './lineage.js';

/** A column as the contract compares it: name plus standard-SQL type. */
export interface SchemaField {
  name: string;
  type: string;
}

/** How the tile's columns differ from the table's, by name and type. */
export interface SchemaDiff {
  /** In the tile, not in the table. */
  added: SchemaField[];
  /** In the table, not in the tile. */
  removed: SchemaField[];
  /** In both, with different types. */
  retyped: { name: string; from: string; to: string }[];
}

export type SchemaContract = BigQuerySinkConfig['schema'];

export type SchemaDecision =
  | { action: 'created' }
  | { action: 'unchanged' }
  | { action: 'added'; columns: SchemaField[] }
  | { action: 'mismatch'; diff: SchemaDiff; hint: string };

/** The table's fields as returned by tables.get (`schema.fields`); only these keys matter here. */
export interface TableFieldLike {
  name?: string | null;
  type?: string | null;
  mode?: string | null;
}

/**
 * Decides whether a load may go ahead, before anything is loaded.
 *
 * Why check on our side at all: a WRITE_TRUNCATE load silently replaces the table's schema with the
 * load's, so BigQuery itself would never refuse a changed tile in `replace` mode; readers of the
 * table would just see columns vanish or change type.
 *
 * - no table yet → created by the load;
 * - `freeze` → any difference fails;
 * - `add` → new columns are allowed (all tilehouse columns are NULLABLE); removed or retyped ones fail.
 *
 * Lineage columns are compared only where the write mode writes them (`expected` holds them): a
 * table that once was appended to may keep `_run_id` after switching to `replace`.
 */
export function checkSchemaContract(
  existing: readonly TableFieldLike[] | undefined,
  expected: readonly SchemaField[],
  contract: SchemaContract,
): SchemaDecision {
  if (existing === undefined) return { action: 'created' };
  const expectedNames = new Set(expected.map((field) => field.name.toLowerCase()));
  const compared = existing.map(toSchemaField).filter((field) => !isLineageColumn(field.name) || expectedNames.has(field.name.toLowerCase()));
  const diff = diffSchema(compared, expected);
  const changed = diff.added.length + diff.removed.length + diff.retyped.length > 0;
  if (!changed) return { action: 'unchanged' };
  if (contract === 'add' && diff.removed.length === 0 && diff.retyped.length === 0) {
    return { action: 'added', columns: diff.added };
  }
  return { action: 'mismatch', diff, hint: hintFor(diff, contract) };
}

/** Column names compare case-insensitively, as BigQuery treats them. Order is ignored. */
export function diffSchema(existing: readonly SchemaField[], expected: readonly SchemaField[]): SchemaDiff {
  const byName = new Map(existing.map((field) => [field.name.toLowerCase(), field]));
  const expectedNames = new Set(expected.map((field) => field.name.toLowerCase()));
  const diff: SchemaDiff = { added: [], removed: [], retyped: [] };
  for (const field of expected) {
    const current = byName.get(field.name.toLowerCase());
    if (current === undefined) diff.added.push(field);
    else if (current.type !== field.type) diff.retyped.push({ name: current.name, from: current.type, to: field.type });
  }
  for (const field of existing) {
    if (!expectedNames.has(field.name.toLowerCase())) diff.removed.push(field);
  }
  return diff;
}

/** e.g. `added: region (STRING); removed: team (STRING); retyped: count INT64 -> FLOAT64`. */
export function describeSchemaDiff(diff: SchemaDiff): string {
  const parts: string[] = [];
  const list = (fields: SchemaField[]) => fields.map((field) => `${field.name} (${field.type})`).join(', ');
  if (diff.added.length > 0) parts.push(`added: ${list(diff.added)}`);
  if (diff.removed.length > 0) parts.push(`removed: ${list(diff.removed)}`);
  if (diff.retyped.length > 0) {
    parts.push(`retyped: ${diff.retyped.map((change) => `${change.name} ${change.from} -> ${change.to}`).join(', ')}`);
  }
  return parts.length > 0 ? parts.join('; ') : 'no differences';
}

/** The run summary's `schemaAction`: created, unchanged or added:<col>,<col>. */
export function schemaActionLabel(decision: Exclude<SchemaDecision, { action: 'mismatch' }>): string {
  return decision.action === 'added' ? `added:${decision.columns.map((field) => field.name).join(',')}` : decision.action;
}

// tables.get may answer with legacy SQL type names, whatever name the table was created with.
const STANDARD_TYPE: Record<string, string> = {
  INTEGER: 'INT64',
  FLOAT: 'FLOAT64',
  BOOLEAN: 'BOOL',
  DECIMAL: 'NUMERIC',
  BIGDECIMAL: 'BIGNUMERIC',
  STRUCT: 'RECORD',
};

export function standardType(type: string): string {
  const upper = type.toUpperCase();
  return STANDARD_TYPE[upper] ?? upper;
}

function toSchemaField(field: TableFieldLike): SchemaField {
  const type = standardType(field.type ?? 'UNKNOWN');
  return { name: field.name ?? '', type: field.mode === 'REPEATED' ? `ARRAY<${type}>` : type };
}

function hintFor(diff: SchemaDiff, contract: SchemaContract): string {
  const hints = ['Nothing was loaded.'];
  if (diff.added.length > 0 && contract === 'freeze') hints.push('To accept new columns, set `schema: add` on this sink.');
  if (diff.removed.length > 0 || diff.retyped.length > 0) {
    hints.push('Removed or retyped columns are never applied automatically: restore the tile, or migrate the table by hand.');
  }
  return hints.join(' ');
}
