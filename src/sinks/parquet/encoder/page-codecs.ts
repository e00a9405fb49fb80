import { gzipSync, zstdCompressSync } from 'node:zlib';
import { SnappyCompressor } from './snappy.js';

export type ParquetCompression = 'snappy' | 'gzip' | 'zstd' | 'uncompressed';

export const PARQUET_COMPRESSIONS: readonly ParquetCompression[] = ['snappy', 'gzip', 'zstd', 'uncompressed'];

/** Parquet's CompressionCodec enum. */
const CODEC_IDS: Record<ParquetCompression, number> = { uncompressed: 0, snappy: 1, gzip: 2, zstd: 6 };

export interface PageCodec {
  readonly id: number;
  /** The compressed bytes of a page body, owned by the caller (the body's buffer is reused). */
  compress(body: Uint8Array): Uint8Array;
}

export function pageCodec(compression: ParquetCompression): PageCodec {
  const id = CODEC_IDS[compression];
  switch (compression) {
    case 'uncompressed':
      // A copy: the body is a view of a Buffer reused for the next page (and Buffer#slice would not copy).
      return { id, compress: (body) => new Uint8Array(body) };
    case 'snappy': {
      const snappy = new SnappyCompressor();
      return { id, compress: (body) => snappy.compress(body).slice() };
    }
    case 'gzip':
      return { id, compress: (body) => gzipSync(body) };
    case 'zstd':
      return { id, compress: (body) => zstdCompressSync(body) };
  }
}
