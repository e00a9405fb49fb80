import type { ColumnBuffer } from './column-buffers.js';
import { ByteSink } from './byte-sink.js';
import type { PageCodec } from './page-codecs.js';
import { CompactType, ThriftWriter } from './thrift-compact.js';

const DATA_PAGE = 0;
const PLAIN = 0;
const RLE = 3;

/**
 * One column's chunk of the current row group: its pages, compressed as they are cut (so a row
 * group holds compressed bytes, plus one uncompressed page per column), until the row group is
 * written out column after column, as Parquet lays a row group out.
 */
export class ColumnChunk {
  pages: Uint8Array[] = [];
  values = 0;
  uncompressedBytes = 0;
  compressedBytes = 0;

  /** Encodes the buffer's page (data page V1: levels, then values), compresses it, resets the buffer. */
  cutPage(buffer: ColumnBuffer, codec: PageCodec, body: ByteSink): void {
    const count = buffer.count;
    if (count === 0) return;
    body.length = 0;
    body.reserve(4);
    body.length = 4;
    writeLevels(buffer, body);
    body.bytes.writeUInt32LE(body.length - 4, 0);
    body.append(buffer.values());
    const uncompressed = body.length;
    const compressed = codec.compress(body.bytes.subarray(0, uncompressed));
    const header = pageHeader(count, uncompressed, compressed.length);
    this.pages.push(header, compressed);
    this.values += count;
    this.uncompressedBytes += header.length + uncompressed;
    this.compressedBytes += header.length + compressed.length;
    buffer.reset();
  }

  reset(): void {
    this.pages = [];
    this.values = 0;
    this.uncompressedBytes = 0;
    this.compressedBytes = 0;
  }
}

/**
 * Definition levels in the RLE/bit-packed hybrid at bit width 1: a single RLE run when the page has
 * no nulls or only nulls (the common cases, 2-4 bytes), else one bit-packed run whose bits are
 * the buffer's level bits as they are (least significant bit first, as the hybrid packs them).
 */
function writeLevels(buffer: ColumnBuffer, body: ByteSink): void {
  const count = buffer.count;
  if (buffer.nulls === 0 || buffer.nulls === count) {
    body.varint(count * 2);
    body.byte(buffer.nulls === 0 ? 1 : 0);
    return;
  }
  const groups = Math.ceil(count / 8);
  body.varint(groups * 2 + 1);
  body.append(buffer.levels.subarray(0, groups));
}

function pageHeader(values: number, uncompressed: number, compressed: number): Uint8Array {
  const writer = new ThriftWriter();
  writer.i32(1, DATA_PAGE).i32(2, uncompressed).i32(3, compressed);
  writer.struct(5).i32(1, values).i32(2, PLAIN).i32(3, RLE).i32(4, RLE).end();
  writer.end();
  return writer.sink.take();
}

/** The ColumnChunk struct of the footer for a chunk written at `offset`. */
export function writeColumnChunkMeta(
  writer: ThriftWriter,
  chunk: ColumnChunk,
  column: { name: string; physicalType: number },
  codecId: number,
  offset: number,
): void {
  writer.listStruct().i64(2, offset);
  writer.struct(3).i32(1, column.physicalType);
  writer.list(2, CompactType.I32, 2).listI32(PLAIN).listI32(RLE);
  writer.list(3, CompactType.Binary, 1).listString(column.name);
  writer.i32(4, codecId).i64(5, chunk.values).i64(6, chunk.uncompressedBytes).i64(7, chunk.compressedBytes);
  writer.i64(9, offset);
  writer.end().end();
}
