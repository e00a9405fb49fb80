import type { ColumnType } from '../../value-types/column-types.js';

/**
 * A tile's typed columns as an Iceberg schema (the table format specification's "Schemas and Data
 * Types"), each field with the id its Parquet column carries. Every field is optional: tilehouse
 * keeps a null apart from "" and never promises a column is filled.
 */
export interface IcebergField {
  id: number;
  name: string;
  required: boolean;
  type: string;
}

export interface IcebergSchema {
  type: 'struct';
  'schema-id': number;
  fields: IcebergField[];
}

/** INT64 → long, NUMERIC → decimal(38, 9) (BigQuery's NUMERIC), FLOAT64 → double, STRING → string, DATE → date, TIMESTAMP → timestamptz. */
export function icebergTypeOf(type: ColumnType): string {
  switch (type) {
    case 'INT64':
      return 'long';
    case 'NUMERIC':
      return 'decimal(38, 9)';
    case 'FLOAT64':
      return 'double';
    case 'STRING':
      return 'string';
    case 'DATE':
      return 'date';
    case 'TIMESTAMP':
      return 'timestamptz';
  }
}

/** The column type a field of this Iceberg type is written from, or undefined for a type tilehouse does not write. */
export function columnTypeOfIceberg(type: string): ColumnType | undefined {
  const normalised = type.replaceAll(' ', '');
  const found = (['INT64', 'NUMERIC', 'FLOAT64', 'STRING', 'DATE', 'TIMESTAMP'] as const).find(
    (column) => icebergTypeOf(column).replaceAll(' ', '') === normalised,
  );
  return found;
}

/** A new table's schema: field ids 1..n in column order. */
export function newIcebergSchema(columns: readonly { name: string; type: ColumnType }[]): IcebergSchema {
  return {
    type: 'struct',
    'schema-id': 0,
    fields: columns.map((column, index) => ({ id: index + 1, name: column.name, required: false, type: icebergTypeOf(column.type) })),
  };
}
