import type { ColumnType } from '../../value-types/column-types.js';
import { IcebergSchemaMismatchError } from './iceberg-errors.js';
import { columnTypeOfIceberg, type IcebergField, type IcebergSchema, icebergTypeOf } from './iceberg-schema.js';
import { currentSchema, type TableMetadata } from './table-metadata.js';

/**
 * The iceberg sink's schema contract (`schema`), as the BigQuery and PostgreSQL sinks take it:
 * `freeze` (the default) refuses any difference between the tile's columns and the table's current
 * schema; `add` takes new tile columns as new optional fields with fresh ids (the table's
 * `last-column-id` + 1, …, in the tile's order), appended to a new schema that the run's own commit
 * makes current. A removed or retyped column is refused under both, before anything is written:
 * Iceberg could drop or widen a field, but a loader that did so silently would lose a reader's
 * column or change its type under it. Field ids never move: a column keeps its field's id, so old
 * data files read the new field as null.
 */
export type SchemaContract = 'freeze' | 'add';

type Columns = readonly { name: string; type: ColumnType }[];

/** How the tile's columns differ from the table's current schema, by name, types as Iceberg names them. */
export interface SchemaDiff {
  /** In the tile, not in the table. */
  added: { name: string; type: string }[];
  /** In the table, not in the tile. */
  removed: { name: string; type: string }[];
  /** In both, with another type (or a type tilehouse does not write). */
  retyped: { name: string; from: string; to: string }[];
}

/** The schema a run's files are written with on a table, and what its commit adds to the table for it. */
export interface RunSchema {
  /** The table's current schema, or a new one: it and the added fields. */
  schema: IcebergSchema;
  /** Each column's field id, in the columns' order: the ids the run's Parquet columns carry. */
  fieldIds: number[];
  /** The fields the run's commit adds (none: the current schema is the run's). */
  added: IcebergField[];
  /** The table's `last-column-id` once the commit lands. */
  lastColumnId: number;
}

/** A field's type as text: a primitive's name, a nested type's JSON. */
function typeText(type: unknown): string {
  return typeof type === 'string' ? type : JSON.stringify(type);
}

export function schemaDiff(schema: IcebergSchema, columns: Columns): SchemaDiff {
  const byName = new Map(schema.fields.map((field) => [field.name, field]));
  const diff: SchemaDiff = { added: [], removed: [], retyped: [] };
  for (const column of columns) {
    const field = byName.get(column.name);
    const type = icebergTypeOf(column.type);
    if (!field) diff.added.push({ name: column.name, type });
    else if (typeof field.type !== 'string' || columnTypeOfIceberg(field.type) !== column.type)
      diff.retyped.push({ name: column.name, from: typeText(field.type), to: type });
  }
  for (const field of schema.fields)
    if (!columns.some((column) => column.name === field.name)) diff.removed.push({ name: field.name, type: typeText(field.type) });
  return diff;
}

/** e.g. `added: team (string); removed: owner (string); retyped: number long -> double`. */
function describeSchemaDiff(diff: SchemaDiff): string {
  const parts: string[] = [];
  const list = (fields: readonly { name: string; type: string }[]) => fields.map((field) => `${field.name} (${field.type})`).join(', ');
  if (diff.added.length > 0) parts.push(`added: ${list(diff.added)}`);
  if (diff.removed.length > 0) parts.push(`removed: ${list(diff.removed)}`);
  if (diff.retyped.length > 0) parts.push(`retyped: ${diff.retyped.map((change) => `${change.name} ${change.from} -> ${change.to}`).join(', ')}`);
  return parts.join('; ');
}

/** What the contract refuses of `diff` (undefined: nothing), and what to do about it. */
export function refusalOf(diff: SchemaDiff, contract: SchemaContract): { differences: string; hint: string } | undefined {
  const changed = diff.removed.length > 0 || diff.retyped.length > 0;
  if (!changed && (diff.added.length === 0 || contract === 'add')) return undefined;
  const hint = changed
    ? "a removed or retyped column is never applied: restore the tile's column, or change the table by hand (its field ids stay)"
    : 'to take new columns as new optional fields, set schema: add on this sink';
  return { differences: describeSchemaDiff(diff), hint };
}

/** The schema of a run the table holds already (it writes nothing): the current one, nothing checked. */
export function heldRunSchema(metadata: TableMetadata): RunSchema {
  return { schema: currentSchema(metadata), fieldIds: [], added: [], lastColumnId: metadata['last-column-id'] };
}

/**
 * The schema a run writes on the table as `metadata` has it, under the contract: the current one
 * when the tile's columns are its fields, else (`add`) a new schema with the new fields; a
 * difference the contract refuses throws `iceberg_schema_mismatch`, naming each column and its types.
 */
export function runSchemaOn(table: string, metadata: TableMetadata, columns: Columns, contract: SchemaContract): RunSchema {
  const current = currentSchema(metadata);
  const diff = schemaDiff(current, columns);
  const refused = refusalOf(diff, contract);
  if (refused) throw new IcebergSchemaMismatchError(table, `${refused.differences}; ${refused.hint}; nothing was written`, contract);
  let lastColumnId = metadata['last-column-id'];
  const added = diff.added.map((field) => ({ id: ++lastColumnId, name: field.name, required: false, type: field.type }));
  const schema: IcebergSchema =
    added.length === 0
      ? current
      : { ...current, 'schema-id': Math.max(...metadata.schemas.map((candidate) => candidate['schema-id'])) + 1, fields: [...current.fields, ...added] };
  const ids = new Map(schema.fields.map((field) => [field.name, field.id]));
  return { schema, fieldIds: columns.map((column) => ids.get(column.name)!), added, lastColumnId };
}
