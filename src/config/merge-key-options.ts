import { z } from 'zod';
import type { ConfigProblem } from './config-error.js';
import type { SinkIssue } from './sink-issue.js';

/**
 * `primaryKey` and `latestBy`, as every kind that merges by key takes them (BigQuery, PostgreSQL,
 * Iceberg): `latestBy`'s schema and the rules between them and `writeMode`, written once; and the
 * kinds whose write modes are replace, append, partition (by a day column) and merge (PostgreSQL,
 * Iceberg): their `partitionBy` / `primaryKey` / `latestBy` fields and rules, and what windowed and
 * incremental jobs ask of those modes.
 */
export const latestBySchema = z
  .string()
  .min(1)
  .optional()
  .describe(
    'writeMode merge only: of rows with the same primaryKey in one run, the one with the highest value of this column wins; without it such rows fail the run',
  );

/** A merge needs primaryKey; primaryKey and latestBy only with merge; a key column named twice (`sameName` says when two names are one). */
export function mergeKeyIssues(
  sink: { writeMode: string; primaryKey?: string[] | undefined; latestBy?: string | undefined },
  ctx: z.RefinementCtx,
  sameName: (name: string) => string,
): void {
  if (sink.writeMode === 'merge' && sink.primaryKey === undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['writeMode'],
      input: sink.writeMode,
      message: 'writeMode: merge needs primaryKey: the columns whose values identify a row',
    });
  }
  for (const option of ['primaryKey', 'latestBy'] as const) {
    if (sink[option] !== undefined && sink.writeMode !== 'merge') {
      ctx.addIssue({ code: 'custom', path: [option], input: sink[option], message: `only with writeMode: merge (this sink's is ${sink.writeMode})` });
    }
  }
  const keys = new Set<string>();
  for (const [index, name] of (sink.primaryKey ?? []).entries()) {
    if (keys.has(sameName(name))) ctx.addIssue({ code: 'custom', path: ['primaryKey', index], input: name, message: 'listed twice' });
    keys.add(sameName(name));
  }
}

/** The write modes of a kind with day partitions and key merges (PostgreSQL, Iceberg). */
type KeyedWriteMode = 'replace' | 'append' | 'partition' | 'merge';

/** `partitionBy`, `primaryKey` and `latestBy` of such a kind; `partitionColumn` describes partitionBy.column (the kind's own day rule). */
export function keyedWriteFields(partitionColumn: string) {
  return {
    partitionBy: z
      .object({ column: z.string().min(1).describe(partitionColumn) })
      .strict()
      .optional()
      .describe('writeMode partition only (and required there): the column whose days a run replaces'),
    primaryKey: z
      .array(z.string().min(1))
      .min(1)
      .optional()
      .describe('writeMode merge only (and required there): the output column names or headers whose values identify a row'),
    latestBy: latestBySchema,
  };
}

/** mergeKeyIssues, and: partition needs partitionBy, partitionBy only with partition. */
export function keyedWriteIssues(
  sink: { writeMode: KeyedWriteMode; partitionBy?: unknown; primaryKey?: string[] | undefined; latestBy?: string | undefined },
  ctx: z.RefinementCtx,
  sameName: (name: string) => string,
): void {
  mergeKeyIssues(sink, ctx, sameName);
  if (sink.writeMode === 'partition' && sink.partitionBy === undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['writeMode'],
      input: sink.writeMode,
      message: 'writeMode: partition needs partitionBy.column: the DATE or TIMESTAMP column whose days a run replaces',
    });
  }
  if (sink.partitionBy !== undefined && sink.writeMode !== 'partition') {
    ctx.addIssue({
      code: 'custom',
      path: ['partitionBy'],
      input: sink.partitionBy,
      message: `only with writeMode: partition (this sink's is ${sink.writeMode})`,
    });
  }
}

/** Whether such a kind can take a windowed job's windows: the window's days replaced, or merged by key. */
export function keyedModeTakesWindows(writeMode: KeyedWriteMode): boolean {
  return writeMode === 'partition' || writeMode === 'merge';
}

/** What an incremental job requires of such a sink: a write mode that takes a day exported twice as once. */
export function keyedIncrementalIssues(sink: { writeMode: KeyedWriteMode }, index: number): SinkIssue[] {
  if (keyedModeTakesWindows(sink.writeMode)) return [];
  return [
    {
      path: ['sinks', index, 'writeMode'],
      input: sink.writeMode,
      message:
        sink.writeMode === 'append'
          ? 'an incremental job may export a day again (lookbackDays, a re-run after a failed day), and append would add its rows twice: use writeMode: partition (the day replaced) or merge (rows updated by primaryKey)'
          : 'an incremental job exports one day per window, and replace would leave only the last day in the table: use writeMode: partition (the day replaced) or merge (rows updated by primaryKey)',
    },
  ];
}

/** A descriptor's `forWindows` problems for such a sink (sinks[index] of `file`): replace and append are refused. */
export function keyedWindowsProblems(sink: { writeMode: KeyedWriteMode }, index: number, file: string): ConfigProblem[] {
  if (keyedModeTakesWindows(sink.writeMode)) return [];
  return [
    {
      file,
      field: `sinks[${index}].writeMode`,
      value: JSON.stringify(sink.writeMode),
      message: "a backfill replaces each window's days, or merges each window by key: use writeMode: partition or merge",
    },
  ];
}
