import { z } from 'zod';

/**
 * A recording of what a tenant answered (`tilehouse probe --record FILE`, issue 19), and what the
 * sandbox replays (`--replay FILE`). One module holds the format so the writer (the probe) and the
 * reader (the sandbox's replay, which imports it from here; src/ never imports the sandbox) cannot
 * drift apart.
 *
 * A recording holds the *shape* of every answer, not its data: navigation, headers, dataTypes, the
 * echoed query, row counts, and per column the JSON types and pattern classes of its values (with
 * lengths). Values are kept only when asked (`--with-values`). Credentials never: no request
 * headers at all, response headers without cookies or auth, the token answer without its token,
 * and the written text passes the secret scrubber as a last guard.
 */

export const RECORDING_FORMAT = 'tilehouse-recording/1';

/**
 * The pattern class of one value. Numbers: `integer`, `decimal`, and in datetime columns
 * `epoch-ms` / `epoch-s`. Strings: `empty`, `numeric` (a number as text), `iso-utc`
 * (…Z), `iso-offset` (…+02:00), `iso-local` (no zone), `date` (YYYY-MM-DD), `year-month`,
 * `percentage` (12.5%), `url`, `text`. Objects: `timestamp-object` ({"$date": ms}), `object`.
 */
export const VALUE_CLASSES = [
  'null',
  'boolean',
  'integer',
  'decimal',
  'epoch-ms',
  'epoch-s',
  'empty',
  'numeric',
  'iso-utc',
  'iso-offset',
  'iso-local',
  'date',
  'year-month',
  'percentage',
  'url',
  'text',
  'timestamp-object',
  'object',
  'array',
] as const;
export type ValueClass = (typeof VALUE_CLASSES)[number];

const valueShapeSchema = z
  .object({
    /** The JSON type as received. */
    type: z.enum(['null', 'boolean', 'number', 'string', 'object', 'array']),
    class: z.enum(VALUE_CLASSES),
    /** Values of this shape in the column on this page. */
    count: z.number().int().positive(),
    /** Strings: the shortest and longest (UTF-16 code units). Numbers: the length of their JSON text. */
    minLength: z.number().int().min(0).optional(),
    maxLength: z.number().int().min(0).optional(),
  })
  .strict();
export type ValueShape = z.infer<typeof valueShapeSchema>;

const headersSchema = z.record(z.string(), z.string());

const exchangeSchema = z
  .object({
    endpoint: z.enum(['token', 'export']),
    method: z.string(),
    /** The path, with only the tile parameter of the query string kept. */
    path: z.string(),
    /** The page the request body asked for (export only). */
    pageNumber: z.number().int().min(0).nullable(),
    /** null: no answer (the connection failed). */
    status: z.number().int().nullable(),
    statusText: z.string().optional(),
    headers: headersSchema,
    /** A failed answer's message (Regular error object or OAuth error), scrubbed. */
    error: z.string().optional(),
    /** Milliseconds from sending to the end of the body. */
    elapsedMs: z.number().min(0),
  })
  .strict();
export type RecordedExchange = z.infer<typeof exchangeSchema>;

const navigationSchema = z
  .object({ hasPrev: z.boolean(), hasNext: z.boolean(), rowsCount: z.number().int().min(0), totalRows: z.number().int().min(0) })
  .loose();

const pageSchema = z
  .object({
    /** The page asked for. */
    pageNumber: z.number().int().min(0),
    itemsPerPage: z.number().int().positive(),
    navigation: navigationSchema,
    headers: z.array(z.string()),
    dataTypes: z.array(z.string()),
    rowShape: z.enum(['array', 'object']),
    /** `result.query` as the tenant echoed it; absent when it sent none. */
    query: z.unknown().optional(),
    /** Rows actually on the page (navigation.rowsCount is what it claimed). */
    rows: z.number().int().min(0),
    /** Per header, in header order: the shapes of its values on this page. */
    columns: z.array(z.array(valueShapeSchema)),
    /** The rows as received, only with --with-values. */
    values: z.array(z.unknown()).optional(),
  })
  .strict();
export type RecordedPage = z.infer<typeof pageSchema>;

/** How the tenant behaves, derived from the pages; what the replay imitates and the report compares. */
const behaviourSchema = z
  .object({
    /** `request`: the echo's pageNumber follows the request; `saved-query`: it does not (the tile's saved query); `absent`; `mixed`. */
    echo: z.enum(['request', 'saved-query', 'absent', 'mixed']),
    /** `page-above-zero`: hasPrev = pageNumber > 0, as the sandbox does. */
    hasPrev: z.enum(['page-above-zero', 'always-false', 'always-true', 'other']),
    compression: z.string(),
    /** Rows the tenant serves per page when it served fewer than asked on a page that is not the last. */
    pageSizeCap: z.number().int().positive().optional(),
    rowShape: z.enum(['array', 'object', 'mixed']),
    /** Server Date minus our clock at the token answer, ms (absent: no Date header). */
    dateOffsetMs: z.number().optional(),
    /**
     * Page 0 read a second time, at the end: true when its rows came back identical, false when
     * they differ although totalRows did not (the source orders rows differently per request, so
     * pages may overlap or skip rows). Absent: not read again (a failed probe, older recordings),
     * or totalRows changed in between (the table changed: nothing to say about the order).
     */
    rowOrderStable: z.boolean().optional(),
  })
  .strict();
export type RecordedBehaviour = z.infer<typeof behaviourSchema>;

export const recordingSchema = z
  .object({
    format: z.literal(RECORDING_FORMAT),
    recordedAt: z.string(),
    /** The tilehouse version that wrote it. */
    tilehouse: z.string(),
    job: z.string(),
    tile: z.string(),
    tileParam: z.string(),
    /** The job's query as sent (it is the tile's query, from the job file: not a secret). */
    query: z.unknown(),
    itemsPerPage: z.number().int().positive(),
    /** The most pages the probe was allowed to read. */
    pagesAsked: z.number().int().positive(),
    withValues: z.boolean(),
    token: z
      .object({
        status: z.number().int().nullable(),
        headers: headersSchema,
        tokenType: z.string().optional(),
        expiresIn: z.number().optional(),
        /** The answer's member names (never their values). */
        fields: z.array(z.string()),
      })
      .strict()
      .optional(),
    exchanges: z.array(exchangeSchema),
    pages: z.array(pageSchema),
    behaviour: behaviourSchema.optional(),
    /** Whether tilehouse's page checks accepted the pages read (a run would refuse the tile otherwise). */
    checks: z
      .object({
        accepted: z.boolean(),
        check: z.string().optional(),
        pageNumber: z.number().int().optional(),
        detail: z.string().optional(),
        /** The page-identity evidence the pages gave, as a run's summary names it (`pageIdentity`). */
        pageIdentity: z.enum(['echo', 'rows-digest', 'single-page']).optional(),
      })
      .strict(),
    /** Why the probe stopped early: the source failed (exit 1). */
    failure: z.object({ code: z.string(), message: z.string() }).strict().optional(),
  })
  .strict();
export type Recording = z.infer<typeof recordingSchema>;

/** Parses a recording's text; throws a message naming the field that is wrong. */
export function parseRecording(text: string, file: string): Recording {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new Error(`${file}: not JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  const format = (json as { format?: unknown } | null)?.format;
  if (format !== RECORDING_FORMAT) throw new Error(`${file}: format ${JSON.stringify(format)} is not ${JSON.stringify(RECORDING_FORMAT)}`);
  const parsed = recordingSchema.safeParse(json);
  if (!parsed.success) {
    throw new Error(`${file}: not a recording: ${parsed.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`).join('; ')}`);
  }
  return parsed.data;
}

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?/;
// Epoch bounds: 2001-09-09 .. 2286-11-20 in ms; the same span in seconds.
const EPOCH_MS = [1e12, 1e13] as const;
const EPOCH_S = [1e9, 1e10] as const;

/** The pattern class of a string value. */
function stringClass(value: string): ValueClass {
  if (value === '') return 'empty';
  if (/^-?\d+(?:\.\d+)?$/.test(value)) return 'numeric';
  if (ISO.test(value)) {
    const rest = value.replace(ISO, '');
    if (rest === 'Z') return 'iso-utc';
    if (/^[+-]\d{2}:?\d{2}$/.test(rest)) return 'iso-offset';
    if (rest === '') return 'iso-local';
    return 'text';
  }
  if (/^\d{4}-\d{2}-\d{2}$/.test(value)) return 'date';
  if (/^\d{4}-\d{2}$/.test(value)) return 'year-month';
  if (/^-?[\d,]*\.?\d+%$/.test(value)) return 'percentage';
  if (/^https?:\/\/\S+$/.test(value)) return 'url';
  return 'text';
}

/** The shape of one value; `dataType` decides whether an integer is an epoch. */
export function classifyValue(value: unknown, dataType: string | undefined): { type: ValueShape['type']; class: ValueClass; length?: number } {
  if (value === null || value === undefined) return { type: 'null', class: 'null' };
  if (typeof value === 'boolean') return { type: 'boolean', class: 'boolean' };
  if (typeof value === 'number') {
    const length = JSON.stringify(value).length;
    if (!Number.isInteger(value)) return { type: 'number', class: 'decimal', length };
    if (dataType === 'datetime' && Math.abs(value) >= EPOCH_MS[0] && Math.abs(value) < EPOCH_MS[1]) return { type: 'number', class: 'epoch-ms', length };
    if (dataType === 'datetime' && Math.abs(value) >= EPOCH_S[0] && Math.abs(value) < EPOCH_S[1]) return { type: 'number', class: 'epoch-s', length };
    return { type: 'number', class: 'integer', length };
  }
  if (typeof value === 'string') return { type: 'string', class: stringClass(value), length: value.length };
  if (Array.isArray(value)) return { type: 'array', class: 'array' };
  if (typeof value === 'object' && '$date' in value) return { type: 'object', class: 'timestamp-object' };
  return { type: 'object', class: 'object' };
}

/** The shapes of one column's values, most frequent first (ties in order of first appearance). */
export function columnShapes(values: readonly unknown[], dataType: string | undefined): ValueShape[] {
  const shapes = new Map<string, ValueShape>();
  for (const value of values) {
    const { type, class: valueClass, length } = classifyValue(value, dataType);
    const key = `${type}/${valueClass}`;
    let shape = shapes.get(key);
    if (shape === undefined) {
      shape = { type, class: valueClass, count: 0 };
      shapes.set(key, shape);
    }
    shape.count += 1;
    if (length !== undefined) {
      shape.minLength = Math.min(shape.minLength ?? length, length);
      shape.maxLength = Math.max(shape.maxLength ?? length, length);
    }
  }
  return [...shapes.values()].sort((a, b) => b.count - a.count);
}

/** Response headers that may carry a credential or a session: never recorded. */
const SECRET_HEADER = /^(?:set-cookie|cookie|authorization|proxy-authorization|www-authenticate|proxy-authenticate)$|token|secret|session|api-?key|auth/i;

/** A response's headers without the ones that may carry a credential; multi-valued headers joined. */
export function recordableHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || SECRET_HEADER.test(name)) continue;
    kept[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return kept;
}
