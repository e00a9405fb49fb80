import { z } from 'zod';
import { latestBySchema, mergeKeyIssues } from './merge-key-options.js';
import { publishGuardSchema } from './publish-guard-schema.js';
import type { SinkIssue } from './sink-issue.js';

/** A BigQuery sink in a job file (the BigQuery sink itself: src/sinks/bigquery/). */
export const bigquerySinkSchema = z
  .object({
    type: z.literal('bigquery'),
    table: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]{0,1023}$/, 'letters, digits and underscores, not starting with a digit')
      .optional()
      .describe('Table name; default: the job name'),
    dataset: z.string().optional().describe('Overrides the environment default dataset'),
    writeMode: z
      .enum(['replace', 'append', 'partition', 'merge'])
      .default('replace')
      .describe(
        'replace: the table is the latest run; append: rows are added; partition: one day partition per run; merge: rows update the table by primaryKey',
      ),
    schema: z.enum(['freeze', 'add']).default('freeze').describe('freeze: any change fails; add: new nullable columns are allowed'),
    partitionBy: z
      .object({
        column: z.string().min(1).describe('Output column name or header of a DATE or TIMESTAMP column'),
        granularity: z.enum(['day', 'month']).default('day'),
      })
      .strict()
      .optional()
      .describe('Column partitioning; with replace, a run replaces exactly the partitions its rows fall in. Not with writeMode: partition (ingestion time)'),
    requirePartitionFilter: z.boolean().optional().describe('Queries of the table must filter on the partition column (partitioned tables only)'),
    partitionExpirationDays: z
      .number()
      .positive()
      .optional()
      .describe('Partitions older than this many days are deleted by BigQuery (partitioned tables only)'),
    clusterBy: z
      .array(z.string().min(1))
      .min(1)
      .max(4, 'BigQuery clusters by at most 4 columns')
      .optional()
      .describe('Up to 4 output column names or headers, most filtered first; not FLOAT64'),
    primaryKey: z
      .array(z.string().min(1))
      .min(1)
      .optional()
      .describe(
        "writeMode merge only (and required there): the output column names or headers whose values identify a row. The MERGE matches keys over the whole table; with the partition column among them, only in the run's partitions (cheaper; for a date a row keeps)",
      ),
    latestBy: latestBySchema,
    guard: publishGuardSchema,
  })
  .strict()
  .superRefine((sink, ctx) => {
    mergeKeyIssues(sink, ctx, (name) => name.toLowerCase());
    // `partition` partitions by ingestion time (the run's day); partitionBy by a column of the
    // rows. A table has one partitioning, so the two cannot be combined.
    if (sink.partitionBy !== undefined && sink.writeMode === 'partition') {
      ctx.addIssue({
        code: 'custom',
        path: ['partitionBy'],
        input: sink.partitionBy,
        message: 'writeMode: partition already partitions by ingestion time; use writeMode replace or append with partitionBy',
      });
    }
    const partitioned = sink.partitionBy !== undefined || sink.writeMode === 'partition';
    for (const option of ['requirePartitionFilter', 'partitionExpirationDays'] as const) {
      if (sink[option] !== undefined && !partitioned) {
        ctx.addIssue({
          code: 'custom',
          path: [option],
          input: sink[option],
          message: 'only for a partitioned table: set partitionBy (or writeMode: partition)',
        });
      }
    }
    const seen = new Set<string>();
    for (const [index, name] of (sink.clusterBy ?? []).entries()) {
      if (seen.has(name.toLowerCase())) ctx.addIssue({ code: 'custom', path: ['clusterBy', index], input: name, message: 'listed twice' });
      seen.add(name.toLowerCase());
    }
  });

export type BigQuerySinkConfig = z.infer<typeof bigquerySinkSchema>;

/**
 * Why an incremental job's BigQuery sink cannot be in this write mode. Every day window may be
 * exported again (lookbackDays, a re-run after a failed day), so a day must land idempotently:
 * `partition` replaces that day's partition, `merge` updates its rows by primaryKey.
 */
const INCREMENTAL_WRITE_MODE_PROBLEM: Readonly<Record<string, string>> = {
  replace:
    'an incremental job exports one day per window, and replace would leave only the last day in the table: use writeMode: partition (one partition per day) or merge (rows updated by primaryKey)',
  append:
    'an incremental job may export a day again (lookbackDays, a re-run after a failed day), and append would add its rows twice: use writeMode: partition (one partition per day) or merge (rows updated by primaryKey)',
};

/**
 * Whether a BigQuery sink can take a windowed job's windows (backfill, incremental): one partition
 * per window, or each window merged by key, so a window exported again replaces or updates what it
 * wrote; `replace` would keep only the last window, `append` would add a re-run window twice.
 */
export function takesWindows(writeMode: BigQuerySinkConfig['writeMode']): boolean {
  return writeMode === 'partition' || writeMode === 'merge';
}

/** What an incremental job requires of a BigQuery sink: a write mode that takes a day exported twice as once. */
export function bigqueryIncrementalIssues(sink: BigQuerySinkConfig, index: number): SinkIssue[] {
  if (takesWindows(sink.writeMode)) return [];
  return [
    {
      path: ['sinks', index, 'writeMode'],
      input: sink.writeMode,
      message: INCREMENTAL_WRITE_MODE_PROBLEM[sink.writeMode] ?? 'an incremental job needs writeMode: partition or merge',
    },
  ];
}
