import type { ColumnType } from '../../../value-types/column-types.js';
import { CompactType, type ThriftWriter } from './thrift-compact.js';

/** Parquet's Type enum (physical types). */
export const PhysicalType = { INT32: 1, INT64: 2, DOUBLE: 5, BYTE_ARRAY: 6, FIXED_LEN_BYTE_ARRAY: 7 } as const;
/** Parquet's ConvertedType enum: the legacy annotations, still written for readers older than logical types. */
export const ConvertedType = { UTF8: 0, DECIMAL: 5, DATE: 6, TIMESTAMP_MILLIS: 9, TIMESTAMP_MICROS: 10 } as const;
/** Field ids of Parquet's LogicalType union. */
export const LogicalTypeField = { STRING: 1, DECIMAL: 5, DATE: 6, TIMESTAMP: 8, INTEGER: 10 } as const;

/** NUMERIC is BigQuery's NUMERIC: DECIMAL(38,9), 16 bytes (what BigQuery's own Parquet export writes). */
export const DECIMAL_PRECISION = 38;
export const DECIMAL_SCALE = 9;
export const DECIMAL_BYTES = 16;

const OPTIONAL = 1;

export function physicalTypeOf(type: ColumnType): number {
  switch (type) {
    case 'INT64':
    case 'TIMESTAMP':
      return PhysicalType.INT64;
    case 'FLOAT64':
      return PhysicalType.DOUBLE;
    case 'DATE':
      return PhysicalType.INT32;
    case 'NUMERIC':
      return PhysicalType.FIXED_LEN_BYTE_ARRAY;
    case 'STRING':
      return PhysicalType.BYTE_ARRAY;
  }
}

/** A column's type as the footer declares it, in Parquet's own terms (its logical type over its physical one). */
export function parquetTypeName(type: ColumnType): string {
  switch (type) {
    case 'INT64':
      return 'INT64';
    case 'FLOAT64':
      return 'DOUBLE';
    case 'NUMERIC':
      return `DECIMAL(${DECIMAL_PRECISION},${DECIMAL_SCALE})`;
    case 'TIMESTAMP':
      return 'TIMESTAMP(MICROS,true)';
    case 'DATE':
      return 'DATE';
    case 'STRING':
      return 'STRING';
  }
}

/**
 * The footer's schema: a root group, then one OPTIONAL leaf per column (SchemaElement structs),
 * each with its `field_id` (9) when the column has one: Iceberg's readers bind a data file's
 * columns to the table's by that id, never by name, so an Iceberg data file without it reads as
 * all nulls (or is refused) unless the table carries a name mapping.
 */
export function writeSchema(writer: ThriftWriter, columns: readonly { name: string; type: ColumnType; fieldId?: number }[]): void {
  writer.list(2, CompactType.Struct, columns.length + 1);
  writer.listStruct().string(4, 'schema').i32(5, columns.length).end();
  for (const column of columns) {
    writer.listStruct().i32(1, physicalTypeOf(column.type));
    if (column.type === 'NUMERIC') writer.i32(2, DECIMAL_BYTES);
    writer.i32(3, OPTIONAL).string(4, column.name);
    // Thrift's compact protocol writes a struct's fields in ascending id order (it encodes deltas):
    // converted_type, scale, precision (6-8), then field_id (9), then logicalType (10).
    writeConvertedType(writer, column.type);
    if (column.fieldId !== undefined) writer.i32(9, column.fieldId);
    writeLogicalType(writer, column.type);
    writer.end();
  }
}

/** converted_type (6), scale (7) and precision (8) of a leaf. */
function writeConvertedType(writer: ThriftWriter, type: ColumnType): void {
  switch (type) {
    case 'INT64':
    case 'FLOAT64':
      // Plain INT64 is signed 64-bit and DOUBLE needs nothing: no annotation is the widest-read form.
      return;
    case 'NUMERIC':
      writer.i32(6, ConvertedType.DECIMAL).i32(7, DECIMAL_SCALE).i32(8, DECIMAL_PRECISION);
      return;
    case 'TIMESTAMP':
      writer.i32(6, ConvertedType.TIMESTAMP_MICROS);
      return;
    case 'DATE':
      writer.i32(6, ConvertedType.DATE);
      return;
    case 'STRING':
      writer.i32(6, ConvertedType.UTF8);
      return;
  }
}

/** logicalType (10) of a leaf. */
function writeLogicalType(writer: ThriftWriter, type: ColumnType): void {
  switch (type) {
    case 'INT64':
    case 'FLOAT64':
      return;
    case 'NUMERIC':
      writer.struct(10).struct(LogicalTypeField.DECIMAL).i32(1, DECIMAL_SCALE).i32(2, DECIMAL_PRECISION).end().end();
      return;
    case 'TIMESTAMP':
      // Logical type written too: with only the converted type DuckDB reads the column as zone-less.
      writer.struct(10).struct(LogicalTypeField.TIMESTAMP).bool(1, true).struct(2).empty(2).end().end().end();
      return;
    case 'DATE':
      writer.struct(10).empty(LogicalTypeField.DATE).end();
      return;
    case 'STRING':
      writer.struct(10).empty(LogicalTypeField.STRING).end();
      return;
  }
}
