import type { Readable, Transform } from 'node:stream';
import type { Column, TypedRow } from '../../transform/column.js';
import type { SinkConfig } from '../../config/job-schema.js';
import type { PublishGuardConfig } from '../../config/publish-guard-schema.js';

/**
 * The seam between the file machinery of this folder (path templates, the two-phase local and
 * gs:// writers, temp names and their sweep, manifests, window state, workspace checks) and one
 * file format. A format says how rows become bytes and how to read back which columns a file
 * declares; everything about where the bytes go and when readers see them is this folder's.
 * csv/ is "the CSV format + its descriptor"; another format is one more such folder.
 */

/** What every file sink's config has; a format adds its own options (CSV: `gzip`). */
export interface FileSinkConfig {
  type: SinkConfig['type'];
  /** The path template; the format's default when absent. */
  path?: string | undefined;
  /** Publish `<file>.manifest.json` with each file (manifest.ts). */
  manifest?: boolean | undefined;
  /** The sink's publish guard (config/publish-guard-schema.ts). */
  guard?: PublishGuardConfig;
}

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
 * A file as stored now, local or gs://, to read its declared columns from. A line-oriented format
 * reads from the start; a format with a footer reads the tail (`size()` tells where it is).
 */
export interface StoredFile {
  /** Its path or gs:// URL, for messages about what was read there. */
  readonly location: string;
  /** Its size in bytes (asked only when a format needs it: one more request for an object). */
  size(): Promise<number>;
  /** Bytes [start, end] (both inclusive, as fs and Cloud Storage ranges are); all of it by default. */
  read(range?: { start: number; end?: number }): Readable;
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

export interface FileFormat<C extends FileSinkConfig = FileSinkConfig> extends FormatNames {
  /** The `content-type` of a gs:// object in this format. */
  contentType(config: C): string;
  /** The path template when the config has none: one file per job, or per window (`{date}`). */
  defaultPathTemplate(config: C, windowed: boolean): string;
  /**
   * A stream every encoded byte passes through before the destination (CSV: gzip when asked);
   * undefined when there is none (a format that compresses inside the file).
   */
  wrapper(config: C): Transform | undefined;
  /** Whether the stored bytes are gzip-wrapped: the manifest's `gzip` field and the summary's. */
  gzipped(config: C): boolean;
  createEncoder(columns: readonly Column[], config: C): FileEncoder;
  /** The names a file of this format declares for `columns` (CSV: the headers): what `plan` compares `readColumns` with. */
  columnNames(columns: readonly Column[]): string[];
  /** The column names an existing file declares (CSV: its header record), for `plan`. */
  readColumns(file: StoredFile, config: C): Promise<string[]>;
  /** The data rows a stored file holds (CSV: its records counted; Parquet: the footer's num_rows), for the publish guard of a file without a manifest. */
  countRows(file: StoredFile, config: C): Promise<number>;
}
