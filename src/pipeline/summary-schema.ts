import { z } from 'zod';
import { TARGET_KINDS } from '../error-codes.js';
import { PAGE_IDENTITIES } from '../source/export-endpoint/index.js';
import { sinkTypes } from '../sinks/registry.js';
import { COLUMN_TYPES } from '../value-types/column-types.js';
import { isCalendarDate } from '../value-types/civil-date.js';
import type { BackfillSummary } from './windows/run-windows.js';
import type { RunSummary, JobRunSummary } from './job-summary.js';

/**
 * The machine-readable summary of `run` and `backfill` (`--json`, `--summary-json FILE`,
 * `$TILEHOUSE_SUMMARY_FILE`): the contract with orchestrators (Argo, Airflow, Dagster Pipes,
 * Cloud Run jobs), committed as schema/run-summary.schema.json. Fields are only ever added; a
 * change that removes or retypes one bumps `schemaVersion`.
 */

export const SUMMARY_SCHEMA_VERSION = 1;

const count = z.number().int().min(0);
// The regex stays for the JSON Schema (`pattern`); the refinement is the real rule.
const calendarDate = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/)
  .refine(isCalendarDate, { message: 'not a calendar date YYYY-MM-DD' });

const sinkResultSchema = z
  .object({
    sink: z.enum(sinkTypes),
    target: z.string().describe('File path, or project.dataset.table[$partition]'),
    rows: count.describe('Rows the target took from this publish; for a publish adopted from an earlier process of the same run id, what that one wrote'),
    details: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).optional(),
    keptEarlierPublish: z
      .boolean()
      .optional()
      .describe('The target already held a publish of this run id with other rows and kept it: this run published nothing there'),
    adopted: z
      .boolean()
      .optional()
      .describe(
        'Nothing committed here: the target already held a publish of this run id (an earlier try of a --run-id), which it keeps; `rows` is what that publish wrote. A re-run adopts in every target or publishes in none',
      ),
    expiredRows: count
      .optional()
      .describe("Rows of this publish in partitions past the table's partition expiration: BigQuery drops them at once, and `rows` does not count them"),
    warnings: z.array(z.string()).optional().describe('What looks wrong at this target, each naming it'),
  })
  .strict();

const guardVerdictSchema = z
  .object({
    target: z.string(),
    verdict: z
      .enum(['pass', 'trip', 'off', 'unknown'])
      .describe('trip: the guard refused the publish (unless overridden); off: guard: false; unknown: what the target holds could not be read'),
    rule: z.enum(['empty', 'shrink', 'recent']).optional(),
    held: count.optional().describe('Rows the target holds (of what a publish replaces), or the median of its recent runs for rule recent'),
    exported: count.describe('Rows of this export'),
    reason: z.string(),
    setting: z.string().optional().describe('The sink setting that lets such a publish pass, e.g. guard.maxShrink'),
    changedSince: z
      .object({
        runId: z.string().describe('The run that wrote what the target holds'),
        changes: z.array(
          z
            .object({
              part: z.enum(['tile', 'source settings', 'query', 'column overrides', 'sinks', 'definition']),
              details: z.array(z.string()).optional().describe('What in the query, e.g. "filters on Number", "item Owner added"'),
            })
            .strict(),
        ),
      })
      .strict()
      .optional()
      .describe("The job's definition differs from the one of the run that wrote the target (known when the target records it: a manifest)"),
  })
  .strict();

const definitionSchema = z
  .object({
    fingerprint: z.string().describe('12 hex digits over every part'),
    parts: z
      .record(z.string(), z.string())
      .describe('8 hex digits of each part: query.item:<header>, query.filters:<header>, query.options, columns, sinks (hashes only, never the text)'),
  })
  .strict();

export const tileSummarySchema = z
  .object({
    job: z.string(),
    tile: z.string(),
    runId: z.string().describe("The run id this tile ran under (a backfill window's own)"),
    status: z.enum(['succeeded', 'failed', 'partially_published']),
    rows: count.describe('Rows written'),
    rowsDropped: count.describe('Rows read but outside a backfill window'),
    pages: count,
    bytes: count.describe('Response body bytes received from the source, as sent (compressed when it compressed)'),
    durationMs: count,
    columns: z.array(z.object({ name: z.string(), header: z.string(), type: z.enum(COLUMN_TYPES) }).strict()),
    outputs: z.array(sinkResultSchema).describe('The targets that hold this run'),
    targets: z
      .array(z.string())
      .describe('The targets this run published to, and for a partial publish those it meant to publish to beside them (see unpublished); a failed run: none'),
    attempted: z
      .array(z.string())
      .optional()
      .describe('A failed run: the targets it opened and did not publish to; each holds what it held unless mixed or outcomeUnknown names it'),
    definition: definitionSchema
      .optional()
      .describe("The fingerprint of the job's definition this run ran with (query, column overrides, sinks), compared with a target's to say what changed"),
    lineage: z
      .object({ namespace: z.string(), job: z.string(), runId: z.string() })
      .strict()
      .optional()
      .describe(
        "Lineage on: this try's OpenLineage run (the runId of its START and terminal event) and the job its events name; a retry with the same run id is a run of its own",
      ),
    bigqueryJobIds: z.array(z.string()).describe('BigQuery jobs of the published run: the publishing job, then the load'),
    unpublished: z.array(z.string()).optional().describe('Targets still holding the previous run after a partial publish'),
    mixed: z.array(z.string()).optional().describe('Targets a failed publish changed in part (some partitions new): neither run is whole there'),
    outcomeUnknown: z
      .array(z.string())
      .optional()
      .describe('Targets whose publish got no answer and could not be read afterwards: they hold the new run or the previous one'),
    leftBehind: z
      .array(z.string())
      .optional()
      .describe('What the cleanup of a failed or stopped run could not remove, each by name (a staging table, a temp object, a job that may still run)'),
    warnings: z.array(z.string()),
    nulledValues: count,
    retries: count,
    throttled: count.describe('429 answers from the source, token endpoint included'),
    tokenFetches: count.describe('Access tokens this tile fetched (0: it used the one of the run)'),
    reauthentications: count,
    restarts: count,
    pageIdentity: z
      .enum(PAGE_IDENTITIES)
      .optional()
      .describe(
        "What told the pages apart: echo (each page's answer echoed its own page number, once that echo was seen to follow the request), rows-digest (some page only by hasPrev and by rows unlike every earlier page's), single-page (one page); absent when the read did not finish",
      ),
    error: z
      .object({
        code: z.string().describe('The stable code (docs/error-codes.md)'),
        message: z.string(),
        retryable: z
          .boolean()
          .optional()
          .describe("The catalogue's word on the code (docs/error-codes.md): whether the same command, run again unchanged, may pass"),
        targetKind: z.enum(TARGET_KINDS).optional().describe("A failure at a sink's target: the target's kind (one code serves every kind)"),
        format: z.enum(['csv', 'parquet']).optional().describe('A failure at a file target: its format'),
      })
      .strict()
      .optional()
      .describe('Set unless status is succeeded'),
    timings: z
      .record(z.string(), count)
      .optional()
      .describe(
        "Where the tile's time went, in milliseconds: source (waiting on the token and page requests), reading (decoding, typing, writing to the sinks), prepare:<sink> and publish:<sink> (each sink's phases, by kind; <kind>#2 for a second of a kind)",
      ),
    guard: z
      .object({
        tripped: z.boolean().describe('A publish guard refused the publish (error publish_guard_tripped: nothing was published), unless overridden'),
        overridden: z.boolean().describe('--allow-shrink / TILEHOUSE_ALLOW_SHRINK: a tripped guard was overridden and the run published'),
        verdicts: z.array(guardVerdictSchema),
      })
      .strict()
      .optional()
      .describe("The publish guards' verdict on each target (absent: no sink has a guard, or the run failed before them)"),
  })
  .strict();

/** The scheduler's interval this run stands for (Airflow's data interval, Argo's scheduled time), echoed. */
const nominalWindowSchema = z
  .object({ start: z.string(), end: z.string() })
  .strict()
  .nullable()
  .describe('The nominal window passed in (--window-start/--window-end; a backfill: --from/--to), else null');

const common = {
  schemaVersion: z.literal(SUMMARY_SCHEMA_VERSION),
  exitCode: z
    .number()
    .int()
    .describe(
      'The exit code of the process, always: 0 ok, 1 failed, 3 partially published, 143 / 130 stopped by SIGTERM / SIGINT before the summary was written (whatever its tiles did)',
    ),
  runId: z.string(),
  window: nominalWindowSchema,
  startedAt: z.iso.datetime(),
  durationMs: count,
  tokenFetches: count.describe('Access tokens the whole run fetched'),
};

const dateWindowSchema = z.object({ from: calendarDate, to: calendarDate }).strict();

/** Whose clock placed the day windows (source.clock). */
const windowClockSchema = z
  .discriminatedUnion('basis', [
    z
      .object({
        basis: z.literal('source'),
        offsetSeconds: z.number().int().nullable().describe("The source's clock minus ours, measured from the token answer's Date (null: not measured)"),
      })
      .strict(),
    z
      .object({ basis: z.literal('local') })
      .strict()
      .describe("source.clock: local: this machine's clock, the source's was not read"),
  ])
  .describe('Whose clock placed the day windows');

/** What an incremental job's run covered (`incremental:` in its file): the windows and why those. */
export const catchUpReportSchema = z
  .object({
    job: z.string(),
    today: calendarDate.nullable().describe("The source's today in the job's timezone (null: the run stopped before it knew)"),
    firstUnpublished: calendarDate.nullable().describe('The first day some target had not published, from startFrom on (today + 1: all were)'),
    firstRun: z.boolean().describe('No target held any day since startFrom: the run started at startFrom'),
    lookbackDays: count,
    maxWindows: count,
    reason: z.string().describe('Which windows and why, as plan prints it'),
    windows: z.array(dateWindowSchema).describe('The day windows this run exported, oldest first; each is also a tile in tiles (run id RUNID-YYYYMMDD)'),
    failed: z.array(dateWindowSchema).describe('Of windows, those that did not succeed: the next run starts again at the first of them'),
    left: z.array(dateWindowSchema).describe('Windows past maxWindows, left for the next run (the run still exits 0 and warns)'),
    open: z
      .array(dateWindowSchema)
      .optional()
      .describe("Of windows, those that had not ended on the source's clock when exported (today's): recorded as open, so the next run exports them again"),
    warnings: z
      .array(z.string())
      .optional()
      .describe('What looked wrong although a window succeeded (an empty window: backfill_window_empty, a failure with --strict)'),
    clock: windowClockSchema.optional(),
    error: z
      .object({ code: z.string(), message: z.string() })
      .strict()
      .optional()
      .describe('Set when nothing was run: state unreadable (incremental_state_unreadable) or targets disagree (incremental_state_ambiguous)'),
  })
  .strict();

export const runSummarySchema = z
  .object({
    command: z.literal('run'),
    ...common,
    tiles: z.array(tileSummarySchema),
    succeeded: count,
    failed: count,
    partiallyPublished: count,
    incremental: z
      .array(catchUpReportSchema)
      .optional()
      .describe('One entry per incremental job of the run: the windows it covered; absent when the run had none'),
  })
  .strict();

export const backfillSummarySchema = z
  .object({
    command: z.literal('backfill'),
    ...common,
    job: z.string(),
    from: calendarDate,
    to: calendarDate,
    step: z.enum(['day', 'week', 'month']),
    shard: z
      .object({ index: count, count: z.number().int().min(1), windows: count.describe('Windows of the whole backfill') })
      .strict()
      .nullable()
      .describe('This process ran the windows of shard index of count (an Indexed Job or a Cloud Run job task), else null'),
    rows: count,
    exact: z.boolean().describe('False when the job names no backfill.bucketColumn: windows are exact to within a day'),
    clock: windowClockSchema.optional(),
    windows: z.array(
      z
        .object({
          window: dateWindowSchema,
          open: z
            .boolean()
            .optional()
            .describe("The window had not ended on the source's clock when its export started: recorded as open (manifest, run ledger), never counted as held"),
          summary: tileSummarySchema,
          warnings: z.array(z.string()),
        })
        .strict(),
    ),
    failed: z.array(dateWindowSchema),
    skipped: z.array(dateWindowSchema).describe('Windows --resume found done and did not run'),
    rerun: z.array(z.string()).describe('Commands that re-run only the failed windows'),
  })
  .strict();

export const summarySchema = z.discriminatedUnion('command', [runSummarySchema, backfillSummarySchema]);

export type RunSummaryDocument = z.infer<typeof runSummarySchema>;
export type BackfillSummaryDocument = z.infer<typeof backfillSummarySchema>;

type Common = Pick<RunSummaryDocument, 'exitCode' | 'window'>;

/** The summary document of a `run`: what `--json` prints and `--summary-json` writes. */
export function runSummaryDocument(summary: RunSummary, extra: Common & { incremental?: RunSummaryDocument['incremental'] }): RunSummaryDocument {
  const { runId, startedAt, durationMs, tokenFetches, tiles, succeeded, failed, partiallyPublished } = summary;
  const { incremental, ...common } = extra;
  return {
    command: 'run',
    schemaVersion: SUMMARY_SCHEMA_VERSION,
    ...common,
    runId,
    startedAt,
    durationMs,
    tokenFetches,
    tiles,
    succeeded,
    failed,
    partiallyPublished,
    ...(incremental === undefined || incremental.length === 0 ? {} : { incremental }),
  };
}

export interface BackfillDocumentInputs extends Common {
  summary: BackfillSummary;
  startedAt: Date;
  durationMs: number;
  from: string;
  to: string;
  step: BackfillSummaryDocument['step'];
  shard: BackfillSummaryDocument['shard'];
  rows: number;
  rerun: string[];
  skipped: BackfillSummaryDocument['skipped'];
}

export function backfillSummaryDocument(inputs: BackfillDocumentInputs): BackfillSummaryDocument {
  const { summary } = inputs;
  return {
    command: 'backfill',
    schemaVersion: SUMMARY_SCHEMA_VERSION,
    exitCode: inputs.exitCode,
    runId: summary.runId,
    window: inputs.window,
    startedAt: inputs.startedAt.toISOString(),
    durationMs: inputs.durationMs,
    tokenFetches: summary.tokenFetches,
    job: summary.job,
    from: inputs.from,
    to: inputs.to,
    step: inputs.step,
    shard: inputs.shard,
    rows: inputs.rows,
    exact: summary.exact,
    clock: summary.clock,
    windows: summary.windows.map(({ window, open, summary: tile, warnings }) => ({ window, open, summary: tile, warnings })),
    failed: summary.failed,
    skipped: inputs.skipped,
    rerun: inputs.rerun,
  };
}

// JobRunSummary is written by hand where it is built; this keeps it and the schema in step.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const tileSummaryMatches: Same<JobRunSummary, z.infer<typeof tileSummarySchema>> = true;
void tileSummaryMatches;

/** schema/run-summary.schema.json: what a summary file holds (`io: 'output'`). */
export function summaryJsonSchemaFile(): { file: string; text: string } {
  const schema = {
    ...z.toJSONSchema(summarySchema, { io: 'output', unrepresentable: 'any' }),
    $id: 'https://tilehouse.dev/schema/run-summary.schema.json',
    title: 'tilehouse run or backfill summary (--json, --summary-json, $TILEHOUSE_SUMMARY_FILE)',
  };
  return { file: 'schema/run-summary.schema.json', text: `${JSON.stringify(schema, null, 2)}\n` };
}
