import { randomBytes } from 'node:crypto';
import type { ColumnType } from '../../value-types/column-types.js';
import { IcebergSchemaMismatchError } from './iceberg-errors.js';
import { columnTypeOfIceberg } from './iceberg-schema.js';
import { currentSchema, type TableMetadata } from './table-metadata.js';

/** What every write mode's snapshot needs of the table: the columns' field ids, a fresh snapshot id. */

/** Each column's field id in the table's current schema; a name or type the schema lacks is refused. */
export function fieldIdsOf(name: string, metadata: TableMetadata, columns: readonly { name: string; type: ColumnType }[]): number[] {
  const schema = currentSchema(metadata);
  const byName = new Map(schema.fields.map((field) => [field.name, field]));
  const ids = columns.map((column) => {
    const field = byName.get(column.name);
    if (!field)
      throw new IcebergSchemaMismatchError(
        name,
        `column ${JSON.stringify(column.name)} is not in the table (fields: ${schema.fields.map((f) => f.name).join(', ')})`,
      );
    const type = typeof field.type === 'string' ? columnTypeOfIceberg(field.type) : undefined;
    if (type !== column.type)
      throw new IcebergSchemaMismatchError(
        name,
        `column ${JSON.stringify(column.name)} is ${column.type} in the tile but ${JSON.stringify(field.type)} in the table`,
      );
    return field.id;
  });
  const extra = schema.fields.filter((field) => !columns.some((column) => column.name === field.name));
  if (extra.length > 0) throw new IcebergSchemaMismatchError(name, `the table has fields the tile lacks: ${extra.map((field) => field.name).join(', ')}`);
  return ids;
}

/** A random positive 63-bit id, as Java's writers choose them. */
export function newSnapshotId(): bigint {
  const id = BigInt.asUintN(63, randomBytes(8).readBigUInt64BE());
  return id === 0n ? 1n : id;
}
