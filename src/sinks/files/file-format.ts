import type { Transform } from 'node:stream';
import type { Column } from '../../transform/column.js';
import type { SinkConfig } from '../../config/job-schema.js';
import type { PublishGuardConfig } from '../../config/publish-guard-schema.js';
import type { FileEncoder, FormatNames, StoredFile } from '../stores/file-bytes.js';

// What a format hands a store and reads back from one: named here too, since a format imports them from its seam.
export type { FileChunk, FileEncoder, FormatNames, StoredFile } from '../stores/file-bytes.js';

/**
 * The seam between the file sink of this folder (path templates, the sink, window state,
 * workspace checks) and one file format. A format says how rows become bytes and how to read back
 * which columns a file declares; where the bytes go and when readers see them is the stores'
 * (../stores/: local, gs://, s3://). csv/ is "the CSV format + its descriptor"; another format
 * is one more such folder.
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

export interface FileFormat<C extends FileSinkConfig = FileSinkConfig> extends FormatNames {
  /** The `content-type` of an object in this format, for a store that keeps one. */
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
  /** The type a file of this format stores a column as, in the format's terms (lineage: Parquet's `DECIMAL(38,9)`). */
  storedType(column: Column): string;
  /** The column names an existing file declares (CSV: its header record), for `plan`. */
  readColumns(file: StoredFile, config: C): Promise<string[]>;
  /** The data rows a stored file holds (CSV: its records counted; Parquet: the footer's num_rows), for the publish guard of a file without a manifest. */
  countRows(file: StoredFile, config: C): Promise<number>;
}
