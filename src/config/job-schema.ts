import { Cron } from 'croner';
import { z } from 'zod';
import { COLUMN_TYPES, OVERRIDE_TYPES } from '../value-types/column-types.js';
import { isCalendarDate } from '../value-types/civil-date.js';
import { windowItemProblems } from './window-rules.js';
import { incrementalSinkIssues, sinkSchema, type SinkConfig } from './sink-schemas.js';

/**
 * The schema of one `jobs/*.yaml` file: one tile, what to export, when and where.
 * The `query` is the spec's Export query shape, sent to the API as written (only
 * `options.pageNumber` and `options.itemsPerPage` are set per request). Its shape is strict: the
 * spec lists every field of a query item, a filter and the options, and a key outside them is a
 * typo the API would silently ignore (`itemsPerpage`, `hiden`), so it is refused with its line.
 */

const filter = z
  .object({
    operator: z.string().min(1).describe('Filter operator; seen: in, ct, gt, rw'),
    values: z.array(z.string()).describe('Operands; for rw: [n1, unit1, n2, unit2]'),
    beforeAggregate: z.boolean().optional(),
  })
  .strict();

const queryItem = z
  .object({
    header: z.string().min(1).describe('Column title'),
    formula: z.string().min(1).describe('Expression, e.g. [incident.number] or round([ref:a] * 100)'),
    dataType: z.string().min(1).describe('Seen: number, text, datetime'),
    order: z.enum(['asc', 'desc']).optional(),
    orderSequence: z.number().int().optional(),
    grouped: z.boolean().optional(),
    aggregate: z.string().optional(),
    function: z.string().optional(),
    format: z.string().optional(),
    hidden: z.boolean().optional(),
    ref: z.string().optional(),
    filters: z.array(filter).default([]),
  })
  .strict();

export const exportQuerySchema = z
  .object({
    items: z.array(queryItem).min(1, 'a query needs at least one item'),
    options: z
      .object({
        pageNumber: z.number().int().min(0).optional(),
        itemsPerPage: z
          .number()
          .int()
          .positive()
          .max(10_000)
          .optional()
          .describe('Ignored: every request asks for source.itemsPerPage rows (tilehouse validate warns when they differ)'),
        ignoreRepeatedRows: z.boolean().optional(),
      })
      .strict()
      .default({}),
  })
  .strict();

const ianaTimezone = z.string().refine(
  (zone) => {
    try {
      new Intl.DateTimeFormat('en-US', { timeZone: zone });
      return true;
    } catch {
      return false;
    }
  },
  { message: 'not an IANA time zone (e.g. UTC, Europe/Berlin)' },
);

/**
 * `columns` keys name the headers of the export, which are the visible query items' headers: an
 * override for any other header would fail every run at page 0, so it is refused here, with the
 * headers there are, and so is a type the item's dataType cannot be read as.
 */
function checkColumnOverrides(
  job: { query: { items: Array<{ header: string; dataType: string; hidden?: boolean | undefined }> }; columns: Record<string, { type: string }> },
  ctx: z.RefinementCtx,
): void {
  const visible = job.query.items.filter((item) => item.hidden !== true);
  for (const [header, override] of Object.entries(job.columns)) {
    const item = visible.find((candidate) => candidate.header === header);
    if (item === undefined) {
      const hidden = job.query.items.some((candidate) => candidate.header === header);
      ctx.addIssue({
        code: 'custom',
        path: ['columns', header],
        input: override,
        message: hidden
          ? 'this query item is hidden: the export has no such column'
          : `no visible query item has this header; headers: ${visible.map((candidate) => JSON.stringify(candidate.header)).join(', ')}`,
      });
      continue;
    }
    const allowed = OVERRIDE_TYPES[item.dataType.trim().toLowerCase()];
    if (allowed !== undefined && !allowed.some((type) => type === override.type)) {
      ctx.addIssue({
        code: 'custom',
        path: ['columns', header, 'type'],
        input: override.type,
        message: `the item's dataType is ${item.dataType}, which can be read as ${allowed.join(', ')}`,
      });
    }
  }
}

/** YYYY-MM-DD that is a real day (2026-02-30 is refused, not rolled over to March). */
const calendarDateText = z.string().check((ctx) => {
  if (!isCalendarDate(ctx.value)) {
    ctx.issues.push({ code: 'custom', input: ctx.value, message: 'not a calendar date YYYY-MM-DD' });
  }
});

interface IncrementalShape {
  query: { items: Array<{ header: string; dataType: string; hidden?: boolean | undefined; ref?: string | undefined }> };
  sinks: SinkConfig[];
  backfill?: { item: string; bucketColumn?: string | undefined } | undefined;
  incremental?: { item?: string | undefined; bucketColumn?: string | undefined } | undefined;
}

/**
 * An incremental job runs day windows through the backfill machinery and reads what its sinks
 * already hold, so the combinations that cannot work are refused with their line: no datetime
 * item to filter, a backfill section that names another item, a CSV sink that writes one file
 * for every day or has no manifest to tell a finished day by, a BigQuery sink that would not
 * take a day exported twice as once (see INCREMENTAL_WRITE_MODE_PROBLEM).
 */
function checkIncremental(job: IncrementalShape, ctx: z.RefinementCtx): void {
  const incremental = job.incremental;
  if (incremental === undefined) return;
  for (const key of ['item', 'bucketColumn'] as const) {
    const own = incremental[key];
    const backfill = job.backfill?.[key];
    if (own !== undefined && backfill !== undefined && own !== backfill) {
      ctx.addIssue({
        code: 'custom',
        path: ['incremental', key],
        input: own,
        message: `backfill.${key} is ${JSON.stringify(backfill)}: the two must name the same (or leave this one out)`,
      });
    }
  }
  const item = incremental.item ?? job.backfill?.item;
  const bucket = incremental.bucketColumn ?? job.backfill?.bucketColumn;
  if (item === undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['incremental'],
      input: incremental,
      message: 'name the datetime query item the day windows filter: incremental.item (or backfill.item)',
    });
  }
  // Each problem at the section that named the setting (incremental:, else the backfill: it defaults to).
  const problems = windowItemProblems(job.query.items, item ?? '', bucket, 'incremental').filter((problem) => item !== undefined || problem.key !== 'item');
  for (const { key, value, message } of problems) {
    ctx.addIssue({ code: 'custom', path: [incremental[key] === undefined ? 'backfill' : 'incremental', key], input: value, message });
  }
  for (const [index, sink] of job.sinks.entries()) {
    for (const issue of incrementalSinkIssues(sink, index)) ctx.addIssue({ code: 'custom', ...issue });
  }
}

export const jobSchema = z
  .object({
    name: z
      .string()
      .regex(/^[a-z][a-z0-9_]{0,62}$/, 'lower-case letters, digits and underscores, starting with a letter (max 63)')
      .describe('Names output files and tables'),
    tile: z.string().min(1).describe('The tile id, as shown in the reporting module'),
    description: z.string().optional(),
    schedule: z
      .object({
        cron: z
          .string()
          .min(1)
          .check((ctx) => {
            // croner is the scheduler that will run it, so it is also the judge of what is valid.
            try {
              new Cron(ctx.value, { paused: true });
            } catch (error) {
              ctx.issues.push({ code: 'custom', input: ctx.value, message: `not a valid cron expression (${(error as Error).message})` });
            }
          })
          .describe('Cron expression: 5 fields, or 6 with seconds first'),
        timezone: ianaTimezone.default('UTC'),
      })
      .strict()
      .optional(),
    timezone: ianaTimezone.optional().describe('Zone for datetimes without an offset and for {date}; default: the schedule timezone, else UTC'),
    query: exportQuerySchema,
    sinks: z.array(sinkSchema).min(1, 'a job needs at least one sink'),
    tempStorage: z
      .string()
      .regex(/^[1-9]\d*(?:Ki|Mi|Gi|Ti)$/, 'a Kubernetes quantity in binary units, e.g. 512Mi or 4Gi')
      .optional()
      .describe(
        "Local disk this job's Kubernetes pod gets for temp files and local outputs (tilehouse k8s: the /tmp emptyDir's sizeLimit and the container's ephemeral-storage); default 1Gi. See k8s/README.md for sizing",
      ),
    columns: z
      .record(z.string(), z.object({ type: z.enum(COLUMN_TYPES) }).strict())
      .default({})
      .describe('Per-header type overrides, e.g. {"Incidents": {type: INT64}}'),
    backfill: z
      .object({
        item: z.string().min(1).describe('Header or ref of the query item (a datetime) that a backfill window filters with rw'),
        bucketColumn: z
          .string()
          .min(1)
          .optional()
          .describe("Header of the output column holding each row's date bucket (a grouped function: date item); makes windows exact"),
      })
      .strict()
      .optional()
      .describe('How `tilehouse backfill` splits this tile into date windows'),
    incremental: z
      .object({
        item: z.string().min(1).optional().describe('Header or ref of the query item (a datetime) the day windows filter with rw; default: backfill.item'),
        bucketColumn: z
          .string()
          .min(1)
          .optional()
          .describe("Header of the output column holding each row's date bucket; makes windows exact; default: backfill.bucketColumn"),
        startFrom: calendarDateText.describe(
          'The first day the first run exports (YYYY-MM-DD, the job timezone); required, so a new job never silently exports everything or nothing',
        ),
        lookbackDays: z
          .number()
          .int()
          .min(0)
          .max(366)
          .default(1)
          .describe(
            'Days before the first unpublished one that every run exports again, for rows that arrive late (default 1: the day the previous run caught while it was still going)',
          ),
        maxWindows: z
          .number()
          .int()
          .min(1)
          .max(3660)
          .default(31)
          .describe('At most this many day windows per run, oldest first; the rest is left for the next run and reported (default 31)'),
      })
      .strict()
      .optional()
      .describe(
        "Makes every run incremental: day windows from the first one its sinks have not published (the run ledger, CSV manifests) up to the source's today, each its own idempotent publish",
      ),
    onInvalidValue: z.enum(['fail', 'null']).default('fail').describe('fail: a value that does not parse fails the tile; null: it becomes null and is counted'),
  })
  .strict()
  .superRefine(checkColumnOverrides)
  .superRefine(checkIncremental);

export type JobConfig = z.infer<typeof jobSchema>;
export type ExportQuery = z.infer<typeof exportQuerySchema>;
export type { SinkConfig } from './sink-schemas.js';
export type { CsvSinkConfig } from './csv-sink-schema.js';
export type { BigQuerySinkConfig } from './bigquery-sink-schema.js';
