import { z } from 'zod';
import { publishGuardSchema } from './publish-guard-schema.js';
import type { SinkIssue } from './sink-issue.js';

/** The codecs a Parquet sink compresses its pages with (`none`: stored as they are). */
export const PARQUET_SINK_COMPRESSIONS = ['snappy', 'zstd', 'gzip', 'none'] as const;

/** A Parquet sink in a job file (the sink itself: src/sinks/parquet/). */
export const parquetSinkSchema = z
  .object({
    type: z.literal('parquet'),
    path: z
      .string()
      .min(1)
      .optional()
      .describe(
        'Output path template; placeholders {name} {tile} {date} {runId}. Relative paths are under the Parquet directory of the environment config. Default {name}.parquet',
      ),
    compression: z
      .enum(PARQUET_SINK_COMPRESSIONS)
      .default('snappy')
      .describe('Codec of every data page: snappy (default: what BigQuery, Spark and DuckDB read fastest), zstd (smaller, slower to write), gzip, or none'),
    // Named so that a CSV sink's `gzip: true`, carried over, says where compression went.
    gzip: z
      .never({ error: 'a Parquet sink compresses inside the file (the footer stays readable): use compression: gzip, zstd, snappy (default) or none' })
      .optional(),
    manifest: z
      .boolean()
      .optional()
      .describe(
        'Default false: also publish <file>.manifest.json (rows, bytes, sha256, run id, columns) right after each file, so a consumer can check it has the whole run',
      ),
    guard: publishGuardSchema,
    // Named so that `writeMode: merge` (or append) on a Parquet sink says why, not just "unrecognized key".
    writeMode: z
      .never({ error: 'a Parquet sink has no writeMode: each run writes its own whole file (replace); append, partition and merge are BigQuery write modes' })
      .optional(),
  })
  .strict();

export type ParquetSinkConfig = z.infer<typeof parquetSinkSchema>;

/**
 * The path of a Parquet sink that names none: one file per job, or one per window (`{date}`) for a
 * windowed job. Here, beside the schema, since the incremental rule below names it too.
 */
export function defaultParquetPathTemplate(windowed: boolean): string {
  return `{name}${windowed ? '/{date}' : ''}.parquet`;
}

/** What an incremental job requires of a Parquet sink: one file per day, and a manifest to tell a finished day by. */
export function parquetIncrementalIssues(sink: ParquetSinkConfig, index: number): SinkIssue[] {
  const issues: SinkIssue[] = [];
  if (sink.path !== undefined && !sink.path.includes('{date}')) {
    issues.push({
      path: ['sinks', index, 'path'],
      input: sink.path,
      message: `an incremental job writes one file per day: the path needs {date} (or leave it out: ${defaultParquetPathTemplate(true)})`,
    });
  }
  if (sink.manifest !== true) {
    // Reported on the sink, whose line is known, since the key is usually absent.
    issues.push({
      path: ['sinks', index],
      input: sink.manifest,
      message: 'an incremental job tells a finished day by its Parquet manifest: set manifest: true',
    });
  }
  return issues;
}
