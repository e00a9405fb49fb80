/**
 * A peer that drops or changes rows is no baseline: each peer's CSV is read back, its rows
 * counted, and one row (found by its Number) compared with tilehouse's CSV of the same export.
 * Tilehouse writes datetimes as ISO timestamps; the peers write the API's epoch milliseconds as
 * they come (neither types them), and dlt renames columns to snake_case: both count as equal.
 */
import { createReadStream } from 'node:fs';
import { parse } from 'csv-parse';

export interface CsvDigest {
  rows: number;
  header: string[];
  /** The row whose `keyColumn` holds `keyValue`, if any. */
  row: string[] | undefined;
}

/** dlt's column names are the headers in snake_case; compare every header that way. */
export function columnKey(name: string): string {
  return name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
}

/** Rows (header excluded) of one or more CSV files of the same table, and the row with the key. */
export async function digestCsv(files: readonly string[], keyColumn: string, keyValue: string): Promise<CsvDigest> {
  let rows = 0;
  let header: string[] = [];
  let row: string[] | undefined;
  for (const file of files) {
    let keyIndex = -1;
    let first = true;
    for await (const record of createReadStream(file).pipe(parse({ relax_column_count: false }))) {
      const fields = record as string[];
      if (first) {
        first = false;
        header = fields;
        keyIndex = fields.findIndex((name) => columnKey(name) === columnKey(keyColumn));
        if (keyIndex === -1) throw new Error(`${file}: no column ${keyColumn} in ${JSON.stringify(fields)}`);
        continue;
      }
      rows += 1;
      if (row === undefined && fields[keyIndex] === keyValue) row = fields;
    }
  }
  return { rows, header, row };
}

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

/** Whether a peer's cell holds tilehouse's value (see the file's comment for what counts as equal). */
export function sameValue(tilehouse: string, peer: string): boolean {
  if (tilehouse === peer) return true;
  if (tilehouse === '' || peer === '') return false;
  if (ISO.test(tilehouse) && /^-?\d+$/.test(peer)) return new Date(Number(peer)).toISOString() === new Date(tilehouse).toISOString();
  const a = Number(tilehouse);
  const b = Number(peer);
  return !Number.isNaN(a) && !Number.isNaN(b) && a === b;
}

/** What differs between tilehouse's row and a peer's (empty when they agree), column by column. */
export function rowDifferences(tilehouse: { header: string[]; row: string[] }, peer: { header: string[]; row: string[] }): string[] {
  const differences: string[] = [];
  tilehouse.header.forEach((name, index) => {
    const peerIndex = peer.header.findIndex((peerName) => columnKey(peerName) === columnKey(name));
    if (peerIndex === -1) differences.push(`${name}: no such column`);
    else if (!sameValue(tilehouse.row[index] ?? '', peer.row[peerIndex] ?? ''))
      differences.push(`${name}: ${JSON.stringify(peer.row[peerIndex])} where tilehouse wrote ${JSON.stringify(tilehouse.row[index])}`);
  });
  return differences;
}
