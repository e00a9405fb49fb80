import { readdir, readFile } from 'node:fs/promises';
import { gunzipSync } from 'node:zlib';
import { parse } from 'csv-parse/sync';
import { stringify } from 'csv-stringify/sync';
import { pino } from 'pino';
import type { CsvSinkConfig } from '../../../src/config/job-schema.js';
import { CsvSink } from '../../../src/sinks/csv/csv-sink.js';
import type { SinkResult, SinkRunContext, SinkWriter } from '../../../src/sinks/sink.js';
import { CSV_DIALECT } from '../../../src/sinks/csv/csv-dialect.js';
import type { Column, TypedRow, TypedValue } from '../../../src/transform/column.js';

export const silentLogger = pino({ level: 'silent' });

export function makeContext(columns: readonly Column[], overrides: Partial<SinkRunContext> = {}): SinkRunContext {
  return {
    jobName: 'weekly_incidents',
    tileId: 'tile-42',
    runId: '20261121T213005Z-9f2c1a',
    startedAt: new Date('2026-11-21T21:30:05Z'),
    columns,
    logger: silentLogger,
    ...overrides,
  };
}

export function makeSink(directory: string, config: Partial<CsvSinkConfig> = {}, timezone = 'UTC'): CsvSink {
  return new CsvSink({ config: { type: 'csv', gzip: false, ...config }, directory, timezone });
}

export function column(header: string, type: Column['type']): Column {
  return { name: header.toLowerCase(), header, type, sourceDataType: 'test' };
}

/**
 * Reads our CSV back with a real parser, applying the file's null convention: an unquoted empty
 * field is null, a quoted empty field is the empty string.
 */
export function parseCsv(text: string): (string | null)[][] {
  return parse(text, {
    cast: (value, context) => (value === '' && !context.quoting ? null : value),
  }) as (string | null)[][];
}

/** A written file's text, gunzipped when asked (parse it with parseCsv). */
export async function readText(path: string, gzip = false): Promise<string> {
  const bytes = await readFile(path);
  return (gzip ? gunzipSync(bytes) : bytes).toString('utf8');
}

/** Every entry in a directory (files and folders), recursively, for asserting that no temp file is left behind. */
export async function listEntries(directory: string): Promise<string[]> {
  return (await readdir(directory, { recursive: true })).sort();
}

/** Both publish phases, as the pipeline runs them for a single sink. */
export async function commit(writer: SinkWriter): Promise<SinkResult> {
  await writer.prepare();
  return writer.publish();
}

/**
 * The bytes a CSV file of these rows must hold: a record of texts per row (String for numbers and
 * bigints, `toISOString` for TIMESTAMP, strings as they are, null for null), every record
 * stringified whole by csv-stringify with the sink's dialect. The sink's own encoder only calls
 * csv-stringify for strings it has not seen; this is what it must be indistinguishable from.
 */
export function referenceCsv(columns: readonly Column[], rows: readonly TypedRow[]): string {
  const formatters = columns.map((c): ((value: Exclude<TypedValue, null>) => string) => {
    if (c.type === 'TIMESTAMP') return (value) => new Date(value as number).toISOString();
    return c.type === 'FLOAT64' || c.type === 'INT64' ? (value) => String(value) : (value) => value as string;
  });
  const records = rows.map((row) => row.map((value, index) => (value === null ? null : formatters[index]!(value))));
  return stringify([columns.map((c) => c.header), ...records], CSV_DIALECT);
}
