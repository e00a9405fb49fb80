import type { ColumnType } from '../../../value-types/column-types.js';
import { ParquetFileInvalidError } from './parquet-errors.js';
import { ConvertedType, LogicalTypeField, PhysicalType } from './parquet-schema.js';
import { CompactType, ThriftDecodeError, ThriftReader } from './thrift-compact.js';

const MAGIC = 'PAR1';

/** The footer's length, from a file's last 8 bytes (a little-endian length, then "PAR1"). */
export function parquetFooterLength(last8: Uint8Array, source = 'parquet file'): number {
  if (last8.length < 8) throw new ParquetFileInvalidError(source, `${last8.length} bytes, a Parquet file ends with 8`);
  const end = last8.subarray(last8.length - 8);
  const magic = String.fromCharCode(end[4]!, end[5]!, end[6]!, end[7]!);
  if (magic !== MAGIC) throw new ParquetFileInvalidError(source, `it ends with ${JSON.stringify(magic)}, not "PAR1"`);
  return new DataView(end.buffer, end.byteOffset, 8).getUint32(0, true);
}

interface SchemaElement {
  name?: string;
  type?: number;
  typeLength?: number;
  numChildren?: number;
  convertedType?: number;
  scale?: number;
  precision?: number;
  logical?: { kind: number; isAdjustedToUTC?: boolean; unit?: number };
}

/**
 * The columns (name, tilehouse type) a Parquet file written by ParquetEncoder declares, from the
 * file's last `footerLength + 8` bytes (more before them are ignored), for `plan` and schema
 * comparison. A column of a type tilehouse never writes is refused, not guessed.
 */
export function readParquetColumns(tail: Uint8Array, source = 'parquet file'): { name: string; type: ColumnType }[] {
  const footerLength = parquetFooterLength(tail, source);
  if (footerLength + 8 > tail.length) {
    throw new ParquetFileInvalidError(source, `its footer is ${footerLength} bytes but only ${tail.length - 8} precede the trailer`);
  }
  let elements: SchemaElement[];
  try {
    elements = readSchema(new ThriftReader(tail, tail.length - 8 - footerLength, tail.length - 8));
  } catch (error) {
    if (!(error instanceof ThriftDecodeError) && !(error instanceof TypeError)) throw error;
    throw new ParquetFileInvalidError(source, `its footer does not parse: ${error.message}`);
  }
  const [root, ...leaves] = elements;
  if (!root || root.numChildren !== leaves.length) {
    throw new ParquetFileInvalidError(source, 'its schema is not one flat list of columns');
  }
  return leaves.map((leaf) => ({ name: leaf.name ?? '', type: columnTypeOf(leaf, source) }));
}

/**
 * The rows a Parquet file holds: its footer's FileMetaData.num_rows (field 3), from the file's
 * last `footerLength + 8` bytes, for the publish guard of a file without a manifest.
 */
export function readParquetRowCount(tail: Uint8Array, source = 'parquet file'): number {
  const footerLength = parquetFooterLength(tail, source);
  if (footerLength + 8 > tail.length) {
    throw new ParquetFileInvalidError(source, `its footer is ${footerLength} bytes but only ${tail.length - 8} precede the trailer`);
  }
  try {
    const reader = new ThriftReader(tail, tail.length - 8 - footerLength, tail.length - 8);
    reader.enterStruct();
    for (let field = reader.field(); field.type !== 0; field = reader.field()) {
      if (field.id === 3 && field.type === CompactType.I64) return reader.int();
      reader.skip(field.type);
    }
  } catch (error) {
    if (!(error instanceof ThriftDecodeError) && !(error instanceof TypeError)) throw error;
    throw new ParquetFileInvalidError(source, `its footer does not parse: ${error.message}`);
  }
  throw new ParquetFileInvalidError(source, 'its footer has no num_rows');
}

function columnTypeOf(leaf: SchemaElement, source: string): ColumnType {
  const logical = leaf.logical?.kind;
  switch (leaf.type) {
    case PhysicalType.INT64:
      if (
        logical === LogicalTypeField.TIMESTAMP ||
        leaf.convertedType === ConvertedType.TIMESTAMP_MICROS ||
        leaf.convertedType === ConvertedType.TIMESTAMP_MILLIS
      )
        return 'TIMESTAMP';
      if (logical === undefined || logical === LogicalTypeField.INTEGER) return 'INT64';
      break;
    case PhysicalType.DOUBLE:
      return 'FLOAT64';
    case PhysicalType.INT32:
      if (logical === LogicalTypeField.DATE || leaf.convertedType === ConvertedType.DATE) return 'DATE';
      break;
    case PhysicalType.FIXED_LEN_BYTE_ARRAY:
      if (logical === LogicalTypeField.DECIMAL || leaf.convertedType === ConvertedType.DECIMAL) return 'NUMERIC';
      break;
    case PhysicalType.BYTE_ARRAY:
      if (logical === LogicalTypeField.STRING || leaf.convertedType === ConvertedType.UTF8) return 'STRING';
      break;
  }
  throw new ParquetFileInvalidError(
    source,
    `column ${JSON.stringify(leaf.name)} has physical type ${String(leaf.type)} and logical type ${String(logical)}, which tilehouse does not write`,
  );
}

/** FileMetaData field 2 (the schema); every other field is skipped. */
function readSchema(reader: ThriftReader): SchemaElement[] {
  let schema: SchemaElement[] | undefined;
  reader.enterStruct();
  for (let field = reader.field(); field.type !== 0; field = reader.field()) {
    if (field.id === 2 && field.type === CompactType.List) {
      const { elementType, size } = reader.listHeader();
      if (elementType !== CompactType.Struct) throw new ThriftDecodeError('the schema is not a list of structs');
      schema = [];
      for (let index = 0; index < size; index++) schema.push(readSchemaElement(reader));
    } else reader.skip(field.type);
  }
  if (!schema) throw new ThriftDecodeError('the footer has no schema');
  return schema;
}

function readSchemaElement(reader: ThriftReader): SchemaElement {
  const element: SchemaElement = {};
  reader.enterStruct();
  for (let field = reader.field(); field.type !== 0; field = reader.field()) {
    if (field.id === 4 && field.type === CompactType.Binary) element.name = reader.string();
    else if (field.id === 10 && field.type === CompactType.Struct) element.logical = readLogicalType(reader);
    else if (field.type === CompactType.I32 && INT_FIELDS[field.id]) element[INT_FIELDS[field.id]!] = reader.int();
    else reader.skip(field.type);
  }
  return element;
}

const INT_FIELDS: Record<number, 'type' | 'typeLength' | 'numChildren' | 'convertedType' | 'scale' | 'precision'> = {
  1: 'type',
  2: 'typeLength',
  5: 'numChildren',
  6: 'convertedType',
  7: 'scale',
  8: 'precision',
};

/** The LogicalType union: which member is set (its field id), and a timestamp's UTC flag. */
function readLogicalType(reader: ThriftReader): SchemaElement['logical'] {
  let logical: SchemaElement['logical'];
  reader.enterStruct();
  for (let field = reader.field(); field.type !== 0; field = reader.field()) {
    if (field.type !== CompactType.Struct) {
      reader.skip(field.type);
      continue;
    }
    logical = { kind: field.id };
    if (field.id === LogicalTypeField.TIMESTAMP) readTimestampType(reader, logical);
    else reader.skip(field.type);
  }
  return logical;
}

function readTimestampType(reader: ThriftReader, logical: NonNullable<SchemaElement['logical']>): void {
  reader.enterStruct();
  for (let field = reader.field(); field.type !== 0; field = reader.field()) {
    if (field.id === 1 && (field.type === CompactType.BoolTrue || field.type === CompactType.BoolFalse)) {
      logical.isAdjustedToUTC = field.type === CompactType.BoolTrue;
    } else reader.skip(field.type);
  }
}
