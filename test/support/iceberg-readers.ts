import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { underCi } from './ci.js';

/**
 * The independent Iceberg readers (`npm run setup:iceberg-py`: pyiceberg 0.12.0, DuckDB 1.4.4 with
 * its iceberg extension, fastavro, pyarrow in .tools/iceberg-py), asked through one Python script,
 * `iceberg_read.py` beside this file: a JSON request in, a JSON answer out, every value as text (see
 * the script's opening comment), so no 64-bit integer passes through a JavaScript double.
 */

/** Where `npm run setup:iceberg-py` builds the venv. */
export const PROJECT_LOCAL_ICEBERG_PY = fileURLToPath(new URL('../../.tools/iceberg-py', import.meta.url));
const READER = fileURLToPath(new URL('./iceberg_read.py', import.meta.url));

/** The venv's python ($ICEBERG_PY_VENV or the project-local venv), or null when absent (a failure under CI). */
export function icebergPythonOrSkip(env: NodeJS.ProcessEnv = process.env, projectLocal = PROJECT_LOCAL_ICEBERG_PY): string | null {
  const venv = env.ICEBERG_PY_VENV || projectLocal;
  // The stamp is written last by the installer: a venv without it is a half-finished install.
  if (existsSync(join(venv, '.requirements.sha256'))) return join(venv, 'bin', 'python');
  if (underCi(env))
    throw new Error(`CI is set but the Iceberg readers are not installed in ${venv}: run \`npm run setup:iceberg-py\` (python3 with venv needed).`);
  return null;
}

/** What the readers give back for a table: column names and rows of text (null for a null). */
export interface ReadRows {
  columns: string[];
  /** Each column's type as the reader holds it (pyarrow's for pyiceberg, DuckDB's SQL types); absent where a reader does not say. */
  types?: string[];
  rows: (string | null)[][];
}

export interface AvroRead {
  /** The header's `avro.schema`, exactly as the file holds it. */
  schema: string;
  codec: string;
  metadata: Record<string, string>;
  records: unknown[];
}

export interface ParquetFieldsRead {
  fields: { name: string; type: string; fieldId: number | null }[];
}

export interface IcebergTableRead {
  formatVersion: number;
  location: string;
  metadataLocation: string;
  currentSnapshotId: string | null;
  snapshots: { id: string; parent: string | null; operation: string | null; summary: Record<string, string> }[];
  fields: { id: number; name: string; type: string; required: boolean }[];
  partitionSpec: { sourceId: number; fieldId: number; name: string; transform: string }[];
}

/** A filter on one column, its value as the readers' text (a timestamp in microseconds), compared in the column's type. */
export interface ScanFilter {
  column: string;
  op: '=' | '>=' | '<=';
  value: string;
}

/** A table as pyiceberg is told where it is: catalog properties, the catalog's name (a SQL catalog's `catalog_name`), `ns.table`. */
export interface PyicebergTable {
  catalog: Record<string, string>;
  catalogName?: string;
  table: string;
}

type Requests = {
  avro: [{ path: string }, AvroRead];
  'parquet-fields': [{ path: string }, ParquetFieldsRead];
  'pyiceberg-scan': [PyicebergTable & { snapshotId?: string; filter?: string }, ReadRows];
  'pyiceberg-table': [PyicebergTable, IcebergTableRead];
  'pyiceberg-filtered': [PyicebergTable & { filters: ScanFilter[] }, { results: ReadRows[] }];
  'duckdb-filtered': [{ metadata: string; filters: ScanFilter[] }, { results: ReadRows[] }];
  'duckdb-scan': [{ metadata: string; s3?: { endpoint: string; region: string; keyId: string; secret: string } }, ReadRows];
  'pyarrow-write': [
    { path: string; fields: { name: string; type: string; fieldId: number }[]; rows: (string | null)[][]; options: Record<string, unknown> },
    { rowGroups: number; encodings: string[] },
  ];
  'pyiceberg-write': [PyicebergTable & { fields: { name: string; type: string }[]; rows: (string | null)[][] }, { snapshotId: string }];
};

/** Runs one request through the reader script; its stderr is in the error when it fails. */
export async function readIceberg<Op extends keyof Requests>(python: string, op: Op, request: Requests[Op][0]): Promise<Requests[Op][1]> {
  const child = spawn(python, [READER], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' } });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
  child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
  child.stdin.end(JSON.stringify({ op, ...request }));
  const [code] = (await once(child, 'close')) as [number | null];
  if (code !== 0) throw new Error(`iceberg_read.py ${op} exited ${String(code)}:\n${Buffer.concat(err).toString('utf8').slice(-4_000)}`);
  return JSON.parse(Buffer.concat(out).toString('utf8')) as Requests[Op][1];
}
