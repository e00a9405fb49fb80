import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { parse as parseYaml, stringify } from 'yaml';
import { exportPage, startScriptedSource, type ScriptedAnswer } from '../../support/scripted-source.js';
import { canonicalDecimal, duckdb, duckTypes, parquetSchema, quoted, sqlString, wholeMillis } from './encoder/duckdb-read-back.js';

/**
 * Test support for the Parquet sink: a workspace whose CSV and Parquet sinks share one output
 * directory, a scripted source serving pages a test writes (values the sandbox never produces),
 * and DuckDB's reading of a file the sink wrote, as text comparable with the CSV sink's.
 */

export const ENV = { TEST_CLIENT_ID: 'id', TEST_CLIENT_SECRET: 'x9-test-client-secret' };

export interface ParquetWorkspace {
  configFile: string;
  jobsDir: string;
  outDir: string;
}

/** env.yaml (CSV and Parquet directories: `outDir`, or `parquetDirectory` for Parquet) and one YAML per job. */
export async function parquetWorkspace(
  root: string,
  baseUrl: string,
  jobs: Array<Record<string, unknown>>,
  parquetDirectory?: string,
): Promise<ParquetWorkspace> {
  const outDir = path.join(root, 'out');
  const jobsDir = path.join(root, 'jobs');
  await mkdir(jobsDir, { recursive: true });
  const configFile = path.join(root, 'env.yaml');
  const source = { baseUrl, authUrl: baseUrl, clientId: '${TEST_CLIENT_ID}', clientSecret: '${TEST_CLIENT_SECRET}', requestTimeoutMs: 2000 };
  await writeFile(configFile, stringify({ source, sinks: { csv: { directory: outDir }, parquet: { directory: parquetDirectory ?? outDir } } }));
  for (const job of jobs) await writeFile(path.join(jobsDir, `${String(job.name)}.yaml`), stringify(job));
  return { configFile, jobsDir, outDir };
}

export interface ScriptedTable {
  headers: string[];
  dataTypes: string[];
  /** The pages in order, each a list of rows as the API sends them. */
  pages: unknown[][][];
}

/** A source answering `table` page by page (token included). */
export async function startTableSource(table: ScriptedTable) {
  const totalRows = table.pages.reduce((sum, page) => sum + page.length, 0);
  return startScriptedSource({
    page: (pageNumber): ScriptedAnswer => {
      const rows = table.pages[pageNumber] ?? [];
      const body = exportPage(
        rows,
        { hasPrev: pageNumber > 0, hasNext: pageNumber < table.pages.length - 1, totalRows },
        { headers: table.headers, dataTypes: table.dataTypes },
      );
      return { status: 200, body: JSON.stringify(body) };
    },
  });
}

/**
 * Every row of a Parquet file as DuckDB reads it, in file order, each value as the text the CSV
 * sink writes for it (null stays null): INT64 and DOUBLE as JavaScript prints them, DECIMAL in the
 * canonical form (no trailing zeros), TIMESTAMP as ISO 8601 UTC with milliseconds, DATE as YYYY-MM-DD.
 */
export async function parquetAsCsvText(file: string): Promise<{ names: string[]; rows: Array<Array<string | null>> }> {
  const db = await duckdb();
  const columns = [...(await duckTypes(file))].map(([name, type]) => ({ name, type }));
  const select = columns.map((column) => textExpression(column.name, column.type)).join(', ');
  const reader = await db.runAndReadAll(`SELECT ${select} FROM read_parquet(${sqlString(file)}, file_row_number = true) ORDER BY file_row_number`);
  const rows = reader.getRows().map((row) => columns.map((column, index) => asCsvText(column.type, row[index])));
  return { names: columns.map((column) => column.name), rows };
}

function textExpression(name: string, type: string): string {
  if (type.startsWith('TIMESTAMP')) return `epoch_us(${quoted(name)})`;
  if (type.startsWith('DECIMAL') || type === 'DATE') return `CAST(${quoted(name)} AS VARCHAR)`;
  return quoted(name);
}

function asCsvText(type: string, value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (type.startsWith('TIMESTAMP')) return new Date(wholeMillis(value as bigint)).toISOString();
  if (type.startsWith('DECIMAL')) return canonicalDecimal(value as string);
  return String(value);
}

/** parquet_schema() of a file: one entry per leaf, by name (the root left out). */
export async function leafSchema(
  file: string,
): Promise<Map<string, { type: unknown; converted: unknown; repetition: unknown; scale: unknown; precision: unknown; length: unknown; logical: string }>> {
  const leaves = await parquetSchema(file);
  return new Map(
    [...leaves].map(([name, row]) => [
      name,
      {
        type: row['type'],
        converted: row['converted_type'],
        repetition: row['repetition_type'],
        scale: row['scale'],
        precision: row['precision'],
        length: row['type_length'],
        logical: String(row['logical_type']),
      },
    ]),
  );
}

/** The footer's key-value metadata as text. */
export async function keyValueMetadata(file: string): Promise<Record<string, string>> {
  const db = await duckdb();
  const reader = await db.runAndReadAll(`SELECT decode(key) AS key, decode(value) AS value FROM parquet_kv_metadata(${sqlString(file)})`);
  return Object.fromEntries(reader.getRowObjectsJS().map((row) => [String(row['key']), String(row['value'])]));
}

/** DuckDB's row count of a file (it reads the whole footer and every row group's metadata). */
export async function parquetRowCount(file: string): Promise<number> {
  const db = await duckdb();
  const reader = await db.runAndReadAll(`SELECT count(*) AS n FROM read_parquet(${sqlString(file)})`);
  return Number(reader.getRowObjectsJS()[0]!['n']);
}

/** Gives a workspace written by cli-harness's writeWorkspace a Parquet directory (default: its CSV directory). */
export async function addParquetDirectory(ws: { configFile: string; outDir: string }, directory = ws.outDir): Promise<void> {
  const config = parseYaml(await readFile(ws.configFile, 'utf8')) as { sinks: Record<string, unknown> };
  config.sinks['parquet'] = { directory };
  await writeFile(ws.configFile, stringify(config));
}

/**
 * A source of `pageCount` pages made by `rowsOf(page)` on request, each answered after `delayMs`
 * (pages too big to hold all at once in the test), counting the page requests it received.
 */
export async function startGeneratedSource(table: {
  headers: string[];
  dataTypes: string[];
  pageCount: number;
  rowsPerPage: number;
  rowsOf: (page: number) => unknown[][];
  delayMs: number;
}) {
  let pageRequests = 0;
  const totalRows = table.pageCount * table.rowsPerPage;
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    let raw = '';
    request.on('data', (chunk: Buffer) => (raw += chunk.toString()));
    request.on('end', () => {
      if (request.url?.startsWith('/oauth/token')) {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ access_token: 'generated-token', token_type: 'Bearer', expires_in: 600 }));
        return;
      }
      pageRequests += 1;
      const page = (JSON.parse(raw) as { options: { pageNumber: number } }).options.pageNumber;
      const body = exportPage(
        table.rowsOf(page),
        { hasPrev: page > 0, hasNext: page < table.pageCount - 1, totalRows },
        { headers: table.headers, dataTypes: table.dataTypes },
      );
      setTimeout(() => {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(JSON.stringify(body));
      }, table.delayMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    pageRequests: () => pageRequests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
