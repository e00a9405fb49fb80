import { gunzipSync, zstdDecompressSync } from 'node:zlib';
import type { TypedRow, TypedValue } from '../../../transform/column.js';
import { formatCivilDate } from '../../../value-types/civil-date.js';
import type { ColumnType } from '../../../value-types/column-types.js';
import { parquetFooterLength } from './parquet-footer.js';
import { ParquetFileInvalidError } from './parquet-errors.js';
import { DECIMAL_SCALE, PhysicalType } from './parquet-schema.js';
import { snappyUncompress } from './snappy.js';
import { CompactType, ThriftDecodeError, ThriftReader } from './thrift-compact.js';

/**
 * Typed rows back out of a flat Parquet file, for an Iceberg `merge` that rewrites a data file
 * without some keys' rows: this encoder's files (PLAIN values, RLE/bit-packed definition levels,
 * data pages V1, any of its codecs) and the usual shapes other Iceberg writers give the same types
 * (dictionary pages, data pages V2, REQUIRED columns). Columns are found by their `field_id` (as an
 * Iceberg reader binds them), a column the file lacks reads as nulls; anything else (nested
 * columns, other encodings) is refused as a ParquetFileInvalidError, never guessed.
 */
export interface DecodedColumn {
  fieldId: number;
  type: ColumnType;
}

interface Leaf {
  name: string;
  type: number;
  typeLength: number;
  repetition: number;
  fieldId: number | undefined;
}

interface Chunk {
  type: number;
  codec: number;
  numValues: number;
  dataPageOffset: number;
  dictionaryPageOffset: number | undefined;
}

const REQUIRED = 0;
const Encoding = { PLAIN: 0, PLAIN_DICTIONARY: 2, RLE: 3, RLE_DICTIONARY: 8 } as const;
const PageType = { DATA_PAGE: 0, DICTIONARY_PAGE: 2, DATA_PAGE_V2: 3 } as const;

export function readParquetRows(bytes: Uint8Array, columns: readonly DecodedColumn[], source = 'parquet file'): TypedRow[] {
  try {
    return decode(bytes, columns, source);
  } catch (error) {
    if (error instanceof ThriftDecodeError || error instanceof RangeError || error instanceof TypeError)
      throw new ParquetFileInvalidError(source, `it does not decode: ${error.message}`);
    throw error;
  }
}

function decode(bytes: Uint8Array, columns: readonly DecodedColumn[], source: string): TypedRow[] {
  const footerLength = parquetFooterLength(bytes, source);
  const reader = new ThriftReader(bytes, bytes.length - 8 - footerLength, bytes.length - 8);
  const { leaves, rowGroups } = readFileMetaData(reader, source);
  const slots = columns.map((column) => leaves.findIndex((leaf) => leaf.fieldId === column.fieldId));
  const rows: TypedRow[] = [];
  for (const group of rowGroups) {
    const values = columns.map((column, index) => {
      const slot = slots[index]!;
      if (slot < 0) return new Array<TypedValue>(group.numRows).fill(null);
      const chunk = group.chunks[slot];
      if (!chunk) throw new ParquetFileInvalidError(source, 'a row group lacks a column chunk');
      const read = readChunk(bytes, chunk, leaves[slot]!, column.type, source);
      if (read.length !== group.numRows) throw new ParquetFileInvalidError(source, `a column chunk holds ${read.length} values for ${group.numRows} rows`);
      return read;
    });
    for (let row = 0; row < group.numRows; row++) rows.push(values.map((column) => column[row]!));
  }
  return rows;
}

function readFileMetaData(reader: ThriftReader, source: string): { leaves: Leaf[]; rowGroups: { numRows: number; chunks: Chunk[] }[] } {
  let elements: (Leaf & { children: number })[] = [];
  const rowGroups: { numRows: number; chunks: Chunk[] }[] = [];
  reader.enterStruct();
  for (let field = reader.field(); field.type !== 0; field = reader.field()) {
    if (field.id === 2 && field.type === CompactType.List) elements = listOf(reader, () => readSchemaElement(reader));
    else if (field.id === 4 && field.type === CompactType.List) rowGroups.push(...listOf(reader, () => readRowGroup(reader)));
    else reader.skip(field.type);
  }
  const [root, ...leaves] = elements;
  if (!root || root.children !== leaves.length || leaves.some((leaf) => leaf.children > 0))
    throw new ParquetFileInvalidError(source, 'its schema is not one flat list of columns');
  return { leaves, rowGroups };
}

function listOf<T>(reader: ThriftReader, read: () => T): T[] {
  const { size } = reader.listHeader();
  return Array.from({ length: size }, read);
}

function readSchemaElement(reader: ThriftReader): Leaf & { children: number } {
  const element = { name: '', type: -1, typeLength: 0, repetition: 1, fieldId: undefined as number | undefined, children: 0 };
  reader.enterStruct();
  for (let field = reader.field(); field.type !== 0; field = reader.field()) {
    if (field.id === 1 && field.type === CompactType.I32) element.type = reader.int();
    else if (field.id === 2 && field.type === CompactType.I32) element.typeLength = reader.int();
    else if (field.id === 3 && field.type === CompactType.I32) element.repetition = reader.int();
    else if (field.id === 4 && field.type === CompactType.Binary) element.name = reader.string();
    else if (field.id === 5 && field.type === CompactType.I32) element.children = reader.int();
    else if (field.id === 9 && field.type === CompactType.I32) element.fieldId = reader.int();
    else reader.skip(field.type);
  }
  return element;
}

function readRowGroup(reader: ThriftReader): { numRows: number; chunks: Chunk[] } {
  const group = { numRows: 0, chunks: [] as Chunk[] };
  reader.enterStruct();
  for (let field = reader.field(); field.type !== 0; field = reader.field()) {
    if (field.id === 1 && field.type === CompactType.List) group.chunks = listOf(reader, () => readColumnChunk(reader));
    else if (field.id === 3 && field.type === CompactType.I64) group.numRows = reader.int();
    else reader.skip(field.type);
  }
  return group;
}

function readColumnChunk(reader: ThriftReader): Chunk {
  const chunk: Chunk = { type: -1, codec: 0, numValues: 0, dataPageOffset: 0, dictionaryPageOffset: undefined };
  reader.enterStruct();
  for (let field = reader.field(); field.type !== 0; field = reader.field()) {
    if (field.id !== 3 || field.type !== CompactType.Struct) {
      reader.skip(field.type);
      continue;
    }
    reader.enterStruct();
    for (let meta = reader.field(); meta.type !== 0; meta = reader.field()) {
      if (meta.id === 1 && meta.type === CompactType.I32) chunk.type = reader.int();
      else if (meta.id === 4 && meta.type === CompactType.I32) chunk.codec = reader.int();
      else if (meta.id === 5 && meta.type === CompactType.I64) chunk.numValues = reader.int();
      else if (meta.id === 9 && meta.type === CompactType.I64) chunk.dataPageOffset = reader.int();
      else if (meta.id === 11 && meta.type === CompactType.I64) chunk.dictionaryPageOffset = reader.int();
      else reader.skip(meta.type);
    }
  }
  return chunk;
}

interface PageHeader {
  type: number;
  uncompressedSize: number;
  compressedSize: number;
  numValues: number;
  encoding: number;
  /** Data page V2: the level bytes (never compressed) and whether the values are. */
  levelsLength: number;
  repetitionLength: number;
  compressed: boolean;
}

function readPageHeader(reader: ThriftReader): PageHeader {
  const header: PageHeader = {
    type: -1,
    uncompressedSize: 0,
    compressedSize: 0,
    numValues: 0,
    encoding: 0,
    levelsLength: 0,
    repetitionLength: 0,
    compressed: true,
  };
  reader.enterStruct();
  for (let field = reader.field(); field.type !== 0; field = reader.field()) {
    if (field.id === 1 && field.type === CompactType.I32) header.type = reader.int();
    else if (field.id === 2 && field.type === CompactType.I32) header.uncompressedSize = reader.int();
    else if (field.id === 3 && field.type === CompactType.I32) header.compressedSize = reader.int();
    else if ((field.id === 5 || field.id === 7 || field.id === 8) && field.type === CompactType.Struct) {
      reader.enterStruct();
      for (let inner = reader.field(); inner.type !== 0; inner = reader.field()) {
        const v2 = field.id === 8;
        if (inner.id === 1 && inner.type === CompactType.I32) header.numValues = reader.int();
        else if (inner.id === (v2 ? 4 : 2) && inner.type === CompactType.I32) header.encoding = reader.int();
        else if (v2 && inner.id === 5 && inner.type === CompactType.I32) header.levelsLength = reader.int();
        else if (v2 && inner.id === 6 && inner.type === CompactType.I32) header.repetitionLength = reader.int();
        else if (v2 && inner.id === 7 && (inner.type === CompactType.BoolTrue || inner.type === CompactType.BoolFalse))
          header.compressed = inner.type === CompactType.BoolTrue;
        else reader.skip(inner.type);
      }
    } else reader.skip(field.type);
  }
  return header;
}

function uncompress(codec: number, body: Uint8Array, size: number, source: string): Uint8Array {
  switch (codec) {
    case 0:
      return body;
    case 1:
      return snappyUncompress(body, size);
    case 2:
      return gunzipSync(body);
    case 6:
      return zstdDecompressSync(body);
    default:
      throw new ParquetFileInvalidError(source, `compression codec ${codec} is not one this reader reads`);
  }
}

function readChunk(bytes: Uint8Array, chunk: Chunk, leaf: Leaf, type: ColumnType, source: string): TypedValue[] {
  const out: TypedValue[] = [];
  let dictionary: TypedValue[] | undefined;
  let offset =
    chunk.dictionaryPageOffset !== undefined && chunk.dictionaryPageOffset > 0
      ? Math.min(chunk.dictionaryPageOffset, chunk.dataPageOffset)
      : chunk.dataPageOffset;
  const optional = leaf.repetition !== REQUIRED;
  while (out.length < chunk.numValues) {
    const reader = new ThriftReader(bytes, offset);
    const header = readPageHeader(reader);
    const start = reader.position;
    const raw = bytes.subarray(start, start + header.compressedSize);
    offset = start + header.compressedSize;
    if (header.type === PageType.DICTIONARY_PAGE) {
      const body = uncompress(chunk.codec, raw, header.uncompressedSize, source);
      dictionary = plainValues(body, 0, header.numValues, leaf, type, source).values;
      continue;
    }
    let body: Uint8Array;
    let position = 0;
    let present: boolean[];
    if (header.type === PageType.DATA_PAGE) {
      body = uncompress(chunk.codec, raw, header.uncompressedSize, source);
      if (optional) {
        const length = new DataView(body.buffer, body.byteOffset + position, 4).getUint32(0, true);
        present = hybrid(body.subarray(position + 4, position + 4 + length), 1, header.numValues).map((level) => level === 1);
        position += 4 + length;
      } else present = new Array<boolean>(header.numValues).fill(true);
    } else if (header.type === PageType.DATA_PAGE_V2) {
      const levels = header.repetitionLength + header.levelsLength;
      const definition = raw.subarray(header.repetitionLength, levels);
      present = optional ? hybrid(definition, 1, header.numValues).map((level) => level === 1) : new Array<boolean>(header.numValues).fill(true);
      const values = raw.subarray(levels);
      body = header.compressed ? uncompress(chunk.codec, values, header.uncompressedSize - levels, source) : values;
    } else throw new ParquetFileInvalidError(source, `page type ${header.type} is not one this reader reads`);
    const count = present.filter(Boolean).length;
    let values: TypedValue[];
    if (header.encoding === Encoding.PLAIN) values = plainValues(body, position, count, leaf, type, source).values;
    else if (header.encoding === Encoding.PLAIN_DICTIONARY || header.encoding === Encoding.RLE_DICTIONARY) {
      if (!dictionary) throw new ParquetFileInvalidError(source, 'a dictionary-encoded page without a dictionary page');
      const width = body[position]!;
      const dict = dictionary;
      values = hybrid(body.subarray(position + 1), width, count).map((index) => dict[index] ?? null);
    } else throw new ParquetFileInvalidError(source, `encoding ${header.encoding} is not one this reader reads`);
    let next = 0;
    for (const isPresent of present) out.push(isPresent ? values[next++]! : null);
  }
  return out;
}

/** The RLE/bit-packed hybrid (the format's "Run Length Encoding / Bit-Packing Hybrid"): `count` values of `width` bits. */
function hybrid(bytes: Uint8Array, width: number, count: number): number[] {
  const out: number[] = [];
  let position = 0;
  const byteWidth = Math.ceil(width / 8);
  while (out.length < count && position < bytes.length) {
    let header = 0;
    let shift = 0;
    for (;;) {
      const byte = bytes[position++]!;
      header |= (byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) break;
      shift += 7;
    }
    if ((header & 1) === 0) {
      const run = header >>> 1;
      let value = 0;
      for (let index = 0; index < byteWidth; index++) value |= bytes[position++]! << (8 * index);
      for (let index = 0; index < run && out.length < count; index++) out.push(value);
    } else {
      const values = (header >>> 1) * 8;
      // Corrupt bytes must fail, not loop over a run they cannot hold.
      if (position + (values * width) / 8 > bytes.length) throw new RangeError('a bit-packed run runs past the end');
      let bit = 0;
      for (let index = 0; index < values; index++) {
        let value = 0;
        for (let b = 0; b < width; b++, bit++) if (bytes[position + (bit >>> 3)]! & (1 << (bit & 7))) value |= 1 << b;
        if (out.length < count) out.push(value);
      }
      position += (values * width) / 8;
    }
  }
  if (out.length < count) throw new RangeError(`the hybrid encoding holds ${out.length} values, ${count} expected`);
  return out;
}

function plainValues(body: Uint8Array, start: number, count: number, leaf: Leaf, type: ColumnType, source: string): { values: TypedValue[] } {
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
  const values: TypedValue[] = [];
  let position = start;
  const expect = (physical: number) => {
    if (leaf.type !== physical)
      throw new ParquetFileInvalidError(source, `column ${JSON.stringify(leaf.name)} has physical type ${leaf.type}, not what a ${type} is read from`);
  };
  for (let index = 0; index < count; index++) {
    switch (type) {
      case 'INT64':
        expect(PhysicalType.INT64);
        values.push(view.getBigInt64(position, true));
        position += 8;
        break;
      case 'TIMESTAMP':
        expect(PhysicalType.INT64);
        // Iceberg's timestamptz is microseconds; a tile's TIMESTAMP is milliseconds.
        values.push(Number(view.getBigInt64(position, true)) / 1000);
        position += 8;
        break;
      case 'DATE':
        expect(PhysicalType.INT32);
        values.push(formatCivilDate(view.getInt32(position, true)));
        position += 4;
        break;
      case 'FLOAT64':
        expect(PhysicalType.DOUBLE);
        values.push(view.getFloat64(position, true));
        position += 8;
        break;
      case 'NUMERIC': {
        expect(PhysicalType.FIXED_LEN_BYTE_ARRAY);
        values.push(decimalText(body.subarray(position, position + leaf.typeLength)));
        position += leaf.typeLength;
        break;
      }
      case 'STRING': {
        expect(PhysicalType.BYTE_ARRAY);
        const length = view.getUint32(position, true);
        values.push(Buffer.from(body.buffer, body.byteOffset + position + 4, length).toString('utf8'));
        position += 4 + length;
        break;
      }
    }
  }
  return { values };
}

/** A big-endian two's-complement unscaled decimal (scale 9, NUMERIC's) as plain text without trailing zeros. */
function decimalText(bytes: Uint8Array): string {
  let unscaled = 0n;
  for (const byte of bytes) unscaled = (unscaled << 8n) | BigInt(byte);
  if (bytes.length > 0 && bytes[0]! & 0x80) unscaled -= 1n << BigInt(bytes.length * 8);
  const negative = unscaled < 0n;
  const magnitude = negative ? -unscaled : unscaled;
  const scale = 10n ** BigInt(DECIMAL_SCALE);
  const fraction = (magnitude % scale).toString().padStart(DECIMAL_SCALE, '0').replace(/0+$/, '');
  return `${negative ? '-' : ''}${magnitude / scale}${fraction ? `.${fraction}` : ''}`;
}
