import type { Readable } from 'node:stream';
import type { SinkConfig } from '../../config/job-schema.js';
import type { TypedRow } from '../../transform/column.js';

/**
 * What a store is handed to write and hands back to read, whatever the format (the format's side
 * of the seam is files/file-format.ts, which names these too): the encoder's chunks, the names
 * its messages use, a file as stored now.
 */

/** One piece of a file's bytes. Text goes to the stream as it is (no copy into a Buffer first). */
export type FileChunk = string | Uint8Array;

/**
 * Encodes one run's rows: a fresh encoder per run, so a format may keep state across pages
 * (a Parquet row group, its footer's offsets). Each method returns the chunks to write, in order;
 * the writer waits for the destination to drain between them, so memory is bounded by what the
 * encoder itself holds.
 */
export interface FileEncoder {
  /** The bytes before any row (CSV: the header record); may be none. */
  start(): Iterable<FileChunk>;
  encode(rows: readonly TypedRow[]): Iterable<FileChunk>;
  /** The bytes after the last row (Parquet: the last row group and the footer); may be none. */
  end(): Iterable<FileChunk>;
}

/**
 * A file as stored now, in any store, to read its declared columns from. A line-oriented format
 * reads from the start; a format with a footer reads the tail (`size()` tells where it is).
 */
export interface StoredFile {
  /** Its path or URL, for messages about what was read there. */
  readonly location: string;
  /** Its size in bytes (asked only when a format needs it: one more request for an object). */
  size(): Promise<number>;
  /** Bytes [start, end] (both inclusive, as fs and Cloud Storage ranges are); all of it by default. */
  read(range?: { start: number; end?: number }): Readable;
  /**
   * When it was last written and by which run, as its store records it without a manifest (a
   * local file: its modification time only; a gs:// or s3:// object: its update time and the
   * run id its metadata carries), for `status`.
   */
  written?(): Promise<{ at: string; runId?: string | undefined }>;
  /**
   * All its bytes, in order, through one buffer filled again for each call of `visit` (which must
   * not keep it): a whole-file scan then holds that buffer, not the file's size in buffers waiting
   * for a collection. Where a store has none, `read()` serves.
   */
  scan?(visit: (bytes: Buffer) => void): Promise<void>;
  /** What changes when the file is replaced (a local file's inode, size and mtime; an object's generation or ETag). */
  version?(): Promise<string>;
}

/** The names a format's messages and codes use: `csv` in codes and logs, `CSV` in sentences. */
export interface FormatNames {
  /** The sink kind's type, and the `format` its errors name (`csv`, `parquet`). */
  readonly name: SinkConfig['type'];
  /** How sentences name its files (`CSV files cannot be written there`). */
  readonly label: string;
}
