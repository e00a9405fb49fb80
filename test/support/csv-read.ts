import { readFile } from 'node:fs/promises';
import { parse } from 'csv-parse/sync';

/**
 * Parses a CSV file written by tilehouse with a real CSV parser, applying the documented null
 * convention: an unquoted empty field is null, a quoted empty field ("") is the empty string.
 */
export async function readCsv(file: string): Promise<{ header: string[]; rows: Array<Array<string | null>> }> {
  const text = await readFile(file, 'utf8');
  const records = parse(text, {
    cast: (value, context) => (value === '' && !context.quoting && context.header === false ? null : value),
    relax_column_count: false,
  }) as Array<Array<string | null>>;
  const [header, ...rows] = records;
  return { header: (header ?? []) as string[], rows };
}
