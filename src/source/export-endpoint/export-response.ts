import { z } from 'zod';
import { ExactNumber } from '../../value-types/exact-number.js';
import { countNoun } from '../../count-noun.js';
import { excerpt } from '../../secret-scrubber.js';

/** The spec's Export result, validated at the edge; extra members are allowed (spec: "minimum returned"). */
const navigationSchema = z
  .object({
    hasPrev: z.boolean(),
    hasNext: z.boolean(),
    rowsCount: z.number().int().min(0),
    totalRows: z.number().int().min(0),
  })
  .loose();

export const exportResultSchema = z
  .object({
    ok: z.literal(true),
    result: z
      .object({
        navigation: navigationSchema,
        headers: z.array(z.string()),
        dataTypes: z.array(z.string()),
        rows: z.array(z.unknown()),
      })
      .loose(),
  })
  .loose();

/** The spec's Regular error object. */
export const regularErrorSchema = z.object({ error: z.object({ status: z.number().int(), message: z.string() }).loose() }).loose();

export type Navigation = z.infer<typeof navigationSchema>;

export interface ExportPage {
  /** The page we asked for (not what the answer claims). */
  pageNumber: number;
  /**
   * `result.query.options.pageNumber` as the API echoed it (spec: "query: the query that was
   * executed"), when it did; checked against `pageNumber` by PageConsistency.
   */
  echoedPageNumber?: unknown;
  navigation: Navigation;
  headers: string[];
  dataTypes: string[];
  /** Positional rows aligned with `headers`, whatever shape the API used. */
  rows: unknown[][];
}

/** `serviceMessage`: the API said `ok: false` and why, in its own words. */
export type PageParse = { ok: true; page: ExportPage } | { ok: false; problem: string; serviceMessage?: string };

const isRecord = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/**
 * An answer that says `ok: false` is the service reporting a failure with HTTP 200; its message
 * (a Regular error object's, or a bare string) is what the person on call needs, not a schema
 * complaint about `ok`.
 */
function refusalOf(body: Record<string, unknown>): PageParse {
  const { error } = body;
  const message = typeof error === 'string' ? error : isRecord(error) && typeof error.message === 'string' ? error.message : undefined;
  if (message === undefined || message.trim() === '') {
    return { ok: false, problem: `ok: false without an error message${error === undefined ? '' : ` (error: ${excerpt(JSON.stringify(error), 160)})`}` };
  }
  return { ok: false, problem: `ok: false: ${message}`, serviceMessage: message };
}

function echoedPageNumberOf(query: unknown): { found: boolean; value?: unknown } {
  if (!isRecord(query) || !isRecord(query.options) || !('pageNumber' in query.options)) return { found: false };
  return { found: true, value: query.options.pageNumber };
}

/** The first header that occurs twice, with both positions. */
function repeatedHeader(headers: readonly string[]): { header: string; first: number; again: number } | undefined {
  const seen = new Map<string, number>();
  for (const [index, header] of headers.entries()) {
    const first = seen.get(header);
    if (first !== undefined) return { header, first, again: index };
    seen.set(header, index);
  }
  return undefined;
}

/**
 * A page's columns whose numbers must keep their exact text, by index, from its headers and
 * dataTypes; undefined: all of them.
 */
export type NumberTextColumns = (headers: readonly string[], dataTypes: readonly string[]) => readonly number[] | undefined;

const isStringArray = (value: unknown): value is string[] => Array.isArray(value) && value.every((item) => typeof item === 'string');

/**
 * For parseJsonBody: whether an export page, as `JSON.parse` read it, must be read again exactly:
 * yes when a column `columnsOf` names holds anything but a string or null in some row (a number, or
 * an object that may hold one). Numbers elsewhere are navigation counts (safe integers, checked by
 * the schema) and values of FLOAT64/TIMESTAMP/DATE columns, which a double reads as they are meant.
 * A body of any other shape (an error, rows keyed by header) answers yes: it is read exactly, as
 * every body was before.
 */
export function readExactPageWhen(columnsOf: NumberTextColumns): (value: unknown) => boolean {
  let lastKey: string | undefined;
  let lastHeaders: unknown;
  let lastDataTypes: unknown;
  let lastColumns: readonly number[] | undefined;
  return (value) => {
    if (!isRecord(value) || !isRecord(value.result)) return true;
    const { headers, dataTypes, rows } = value.result;
    if (!isStringArray(headers) || !isStringArray(dataTypes) || !Array.isArray(rows)) return true;
    // Every page of a run has the same columns; map them once. (A page parsed in slices asks once
    // a slice, with the same arrays.)
    if (headers !== lastHeaders || dataTypes !== lastDataTypes) {
      const key = JSON.stringify([headers, dataTypes]);
      if (key !== lastKey) {
        lastKey = key;
        lastColumns = columnsOf(headers, dataTypes);
      }
      lastHeaders = headers;
      lastDataTypes = dataTypes;
    }
    const columns = lastColumns;
    if (columns === undefined) return true;
    for (const row of rows) {
      if (!Array.isArray(row)) return true;
      for (const index of columns) {
        const cell: unknown = row[index];
        if (cell !== null && cell !== undefined && typeof cell !== 'string') return true;
      }
    }
    return false;
  };
}

/**
 * Validates one page body and normalises its rows to positional arrays. The spec does not say
 * whether rows are arrays or objects keyed by header, so both are accepted; anything else (or
 * an array of the wrong length, or an object with a key that is not a header) is refused with
 * the row's index, because guessing would silently misalign columns.
 */
export function parseExportPage(body: unknown, pageNumber: number): PageParse {
  if (isRecord(body) && body.ok === false) return refusalOf(body);
  const parsed = exportResultSchema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    return { ok: false, problem: `${issue.path.join('.') || 'body'}: ${issue.message}` };
  }
  const { navigation, headers, dataTypes, rows } = parsed.data.result;
  const width = headers.length;
  const positional: unknown[][] = new Array(rows.length);
  let headerIndex: Map<string, number> | undefined;
  for (let i = 0; i < rows.length; i += 1) {
    const row = rows[i];
    if (Array.isArray(row)) {
      if (row.length !== width) {
        return { ok: false, problem: `row ${i} has ${countNoun(row.length, 'value')} for ${countNoun(width, 'header')}` };
      }
      positional[i] = row;
    } else if (row instanceof ExactNumber) {
      // A long number literal is an object here, but a row it is not.
      return { ok: false, problem: `row ${i} is a number, not an array or an object` };
    } else if (row !== null && typeof row === 'object') {
      if (headerIndex === undefined) {
        // Keyed by header, a repeated header cannot say which column a value belongs to (JSON
        // objects keep one value per key), so refuse rather than guess. Arrays are positional
        // and may repeat headers freely.
        const repeated = repeatedHeader(headers);
        if (repeated) {
          return {
            ok: false,
            problem: `header ${JSON.stringify(repeated.header)} occurs twice (columns ${repeated.first} and ${repeated.again}) and rows are objects keyed by header, so values cannot be placed`,
          };
        }
        headerIndex = new Map(headers.map((header, index) => [header, index]));
      }
      const values: unknown[] = new Array(width).fill(null);
      for (const [key, value] of Object.entries(row)) {
        const index = headerIndex.get(key);
        if (index === undefined) return { ok: false, problem: `row ${i} has key ${JSON.stringify(key)} that is not a header` };
        values[index] = value;
      }
      positional[i] = values;
    } else {
      return { ok: false, problem: `row ${i} is ${row === null ? 'null' : typeof row}, not an array or an object` };
    }
  }
  const page: ExportPage = { pageNumber, navigation, headers, dataTypes, rows: positional };
  const echo = echoedPageNumberOf(parsed.data.result.query);
  if (echo.found) page.echoedPageNumber = echo.value;
  return { ok: true, page };
}
