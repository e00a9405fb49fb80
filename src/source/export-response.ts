import { z } from 'zod';

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
export const regularErrorSchema = z
  .object({ error: z.object({ status: z.number().int(), message: z.string() }).loose() })
  .loose();

export type Navigation = z.infer<typeof navigationSchema>;

export interface ExportPage {
  pageNumber: number;
  navigation: Navigation;
  headers: string[];
  dataTypes: string[];
  /** Positional rows aligned with `headers`, whatever shape the API used. */
  rows: unknown[][];
}

export type PageParse = { ok: true; page: ExportPage } | { ok: false; problem: string };

/**
 * Validates one page body and normalises its rows to positional arrays. The spec does not say
 * whether rows are arrays or objects keyed by header, so both are accepted; anything else (or
 * an array of the wrong length, or an object with a key that is not a header) is refused with
 * the row's index, because guessing would silently misalign columns.
 */
export function parseExportPage(body: unknown, pageNumber: number): PageParse {
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
        return { ok: false, problem: `row ${i} has ${row.length} values for ${width} headers` };
      }
      positional[i] = row;
    } else if (row !== null && typeof row === 'object') {
      headerIndex ??= new Map(headers.map((header, index) => [header, index]));
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
  return { ok: true, page: { pageNumber, navigation, headers, dataTypes, rows: positional } };
}
