import { z } from 'zod';
import { publishGuardSchema } from './publish-guard-schema.js';
import type { SinkIssue } from './sink-issue.js';
import { writesOneFilePerWindow } from './window-rules.js';

/** A CSV sink in a job file (the CSV sink itself: src/sinks/csv/). */
export const csvSinkSchema = z
  .object({
    type: z.literal('csv'),
    path: z
      .string()
      .min(1)
      .optional()
      .describe(
        'Output path template; placeholders {name} {tile} {date} {runId}. Relative paths are under the CSV directory of the environment config. Default {name}.csv',
      ),
    gzip: z.boolean().default(false),
    manifest: z
      .boolean()
      .optional()
      .describe(
        'Default false: also publish <file>.manifest.json (rows, bytes, sha256, run id, columns) right after each file, so a consumer can check it has the whole run',
      ),
    guard: publishGuardSchema,
    // Named so that `writeMode: merge` (or append) on a CSV sink says why, not just "unrecognized key".
    writeMode: z
      .never({ error: 'a CSV sink has no writeMode: each run writes its own whole file (replace); append, partition and merge are BigQuery write modes' })
      .optional(),
  })
  .strict();

export type CsvSinkConfig = z.infer<typeof csvSinkSchema>;

/**
 * The path of a CSV sink that names none, the one place this rule is written: one file per job,
 * or one per window (`{date}`) for a windowed job; `.csv.gz` when gzip is on. Here, beside the
 * schema, since the incremental rule below names it too (the sink uses it through its format).
 */
export function defaultCsvPathTemplate(sink: { gzip?: boolean | undefined }, windowed: boolean): string {
  return `{name}${windowed ? '/{date}' : ''}.csv${sink.gzip === true ? '.gz' : ''}`;
}

/** What an incremental job requires of a CSV sink: one file per day, and a manifest to tell a finished day by. */
export function csvIncrementalIssues(sink: CsvSinkConfig, index: number): SinkIssue[] {
  const issues: SinkIssue[] = [];
  if (sink.path !== undefined && !writesOneFilePerWindow(sink.path)) {
    issues.push({
      path: ['sinks', index, 'path'],
      input: sink.path,
      message: `an incremental job writes one file per day: the path needs {date} (or leave it out: ${defaultCsvPathTemplate(sink, true)})`,
    });
  }
  if (sink.manifest !== true) {
    // Reported on the sink, whose line is known, since the key is usually absent.
    issues.push({ path: ['sinks', index], input: sink.manifest, message: 'an incremental job tells a finished day by its CSV manifest: set manifest: true' });
  }
  return issues;
}
