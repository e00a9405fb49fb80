import { Cron } from 'croner';
import { z } from 'zod';
import { COLUMN_TYPES } from '../transform/column.js';

/**
 * The schema of one `jobs/*.yaml` file: one tile, what to export, when and where.
 * The `query` is the spec's Export query shape, sent to the API as written (only
 * `options.pageNumber` and `options.itemsPerPage` are set per request).
 */

const filter = z
  .object({
    operator: z.string().min(1).describe('Filter operator; seen: in, ct, gt, rw'),
    values: z.array(z.string()).describe('Operands; for rw: [n1, unit1, n2, unit2]'),
    beforeAggregate: z.boolean().optional(),
  })
  .loose();

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
  .loose();

export const exportQuerySchema = z
  .object({
    items: z.array(queryItem).min(1, 'a query needs at least one item'),
    options: z
      .object({
        pageNumber: z.number().int().min(0).optional(),
        itemsPerPage: z.number().int().positive().optional(),
        ignoreRepeatedRows: z.boolean().optional(),
      })
      .loose()
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

const csvSink = z
  .object({
    type: z.literal('csv'),
    path: z
      .string()
      .min(1)
      .optional()
      .describe('Output path template; placeholders {name} {tile} {date} {runId}. Relative paths are under the CSV directory of the environment config. Default {name}.csv'),
    gzip: z.boolean().default(false),
  })
  .strict();

const bigquerySink = z
  .object({
    type: z.literal('bigquery'),
    table: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]{0,1023}$/, 'letters, digits and underscores, not starting with a digit')
      .optional()
      .describe('Table name; default: the job name'),
    dataset: z.string().optional().describe('Overrides the environment default dataset'),
    writeMode: z.enum(['replace', 'append', 'partition']).default('replace'),
    schema: z.enum(['freeze', 'add']).default('freeze').describe('freeze: any change fails; add: new nullable columns are allowed'),
  })
  .strict();

export const sinkSchema = z.discriminatedUnion('type', [csvSink, bigquerySink]);

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
    timezone: ianaTimezone
      .optional()
      .describe('Zone for datetimes without an offset and for {date}; default: the schedule timezone, else UTC'),
    query: exportQuerySchema,
    sinks: z.array(sinkSchema).min(1, 'a job needs at least one sink'),
    columns: z
      .record(
        z.string(),
        z.object({ type: z.enum(COLUMN_TYPES) }).strict(),
      )
      .default({})
      .describe('Per-header type overrides, e.g. {"Incidents": {type: INT64}}'),
    backfill: z
      .object({
        item: z
          .string()
          .min(1)
          .describe('Header or ref of the query item (a datetime) that a backfill window filters with rw'),
        bucketColumn: z
          .string()
          .min(1)
          .optional()
          .describe('Header of the output column holding each row\'s date bucket (a grouped function: date item); makes windows exact'),
      })
      .strict()
      .optional()
      .describe('How `tilehouse backfill` splits this tile into date windows'),
    onInvalidValue: z
      .enum(['fail', 'null'])
      .default('fail')
      .describe('fail: a value that does not parse fails the tile; null: it becomes null and is counted'),
  })
  .strict();

export type JobConfig = z.infer<typeof jobSchema>;
export type ExportQuery = z.infer<typeof exportQuerySchema>;
export type SinkConfig = z.infer<typeof sinkSchema>;
export type CsvSinkConfig = z.infer<typeof csvSink>;
export type BigQuerySinkConfig = z.infer<typeof bigquerySink>;
