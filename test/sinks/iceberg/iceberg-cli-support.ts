// What the fault tests of `tilehouse run` into an Iceberg table share: a workspace with a CSV sink
// and an iceberg sink on one catalog, the CSV of a run as the readers give text back, the table
// read by pyiceberg and DuckDB (which must agree), and a REST proxy that misbehaves on commits.
import { once } from 'node:events';
import { readFile, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import path from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import { expect } from 'vitest';
import { parse, stringify } from 'yaml';
import type { Sandbox } from '../../../sandbox/index.js';
import { SANDBOX_TILE } from '../../../sandbox/index.js';
import { type Workspace, writeWorkspace } from '../../support/cli-harness.js';
import { type PyicebergTable, readIceberg } from '../../support/iceberg-readers.js';
import { readBoth, sortedLines } from './iceberg-test-rows.js';

/** Two columns the sink maps (Number INT64, Description STRING) and a filter, so two nights differ. */
export function faultJob(name: string, table: string, mode: 'replace' | 'append', above = 0): Record<string, unknown> {
  return {
    name,
    tile: SANDBOX_TILE,
    query: {
      items: [
        {
          header: 'Number',
          formula: '[incident.number]',
          dataType: 'number',
          order: 'asc',
          orderSequence: 0,
          filters: [{ operator: 'gt', values: [String(above)] }],
        },
        { header: 'Description', formula: '[incident.description]', dataType: 'text', filters: [] },
      ],
      options: { pageNumber: 0, itemsPerPage: 50, ignoreRepeatedRows: false },
    },
    columns: { Number: { type: 'INT64' } },
    sinks: [
      { type: 'csv', path: '{name}-{runId}.csv' },
      { type: 'iceberg', table, writeMode: mode },
    ],
  };
}

/** A workspace whose `sinks.iceberg` is the given catalog and warehouse location. */
export async function icebergWorkspace(
  root: string,
  sandbox: Sandbox,
  jobs: Record<string, unknown>[],
  iceberg: { catalog: Record<string, unknown>; location: string },
  source: Record<string, unknown> = {},
): Promise<Workspace> {
  const ws = await writeWorkspace(root, sandbox, jobs, source);
  const environment = parse(await readFile(ws.configFile, 'utf8')) as { sinks: Record<string, unknown> };
  environment.sinks.iceberg = iceberg;
  await writeFile(ws.configFile, stringify(environment));
  return ws;
}

/** The CSV a run wrote, as the readers give text back: null for an unquoted empty field; with append's lineage run id (the timestamp column left out). */
export async function csvRows(ws: Workspace, job: string, runId: string, lineage = false): Promise<(string | null)[][]> {
  const text = await readFile(path.join(ws.outDir, `${job}-${runId}.csv`), 'utf8');
  const records = parseCsv(text, { cast: (value, context) => (value === '' && !context.quoting ? null : value), from_line: 2 }) as (string | null)[][];
  return records.map((record) => (lineage ? [...record, runId] : record));
}

/** The table's rows as pyiceberg and DuckDB read them (the two must agree), without `_extracted_at`; and its snapshots' run ids. */
export async function tableState(python: string, table: PyicebergTable): Promise<{ rows: string[]; runIds: (string | undefined)[]; metadataLocation: string }> {
  const { pyiceberg, duckdb } = await readBoth(python, table);
  expect(duckdb.columns, 'DuckDB reads the columns pyiceberg reads').toEqual(pyiceberg.columns);
  const keep = pyiceberg.columns.map((name, index) => (name === '_extracted_at' ? -1 : index)).filter((index) => index >= 0);
  const project = (rows: (string | null)[][]) => sortedLines(rows.map((row) => keep.map((index) => row[index]!)));
  const rows = project(pyiceberg.rows);
  expect(project(duckdb.rows), 'DuckDB reads the rows pyiceberg reads').toEqual(rows);
  const described = await readIceberg(python, 'pyiceberg-table', table);
  return { rows, runIds: described.snapshots.map((snapshot) => snapshot.summary['tilehouse.run-id']), metadataLocation: described.metadataLocation };
}

/**
 * What the proxy does to the next commit (a POST to a table's path): `conflict` answers 409 unsent
 * (another writer won), `lost-503` forwards it and answers 503 (the server applied it), `cut` forwards
 * it, cuts the connection and refuses every later connection (the catalog unreachable), `stall`
 * forwards it and holds the answer until the writer gave up on it, `drop` holds it unsent. `onCommit`
 * hears of a `stall` once the server applied the commit, of a `drop` before it is sent (a test kills its writer there).
 */
export type CommitFault = 'pass' | 'conflict' | 'lost-503' | 'cut' | 'stall' | 'drop';

export interface RestCommitProxy {
  origin: string;
  /** Faults for the next commits, in order. */
  faults: CommitFault[];
  /** Commits the proxy saw, and those it forwarded to the server. */
  readonly commits: number;
  readonly forwarded: number;
  /** After `cut`: every request is cut until this is set false. */
  unreachable: boolean;
  /** Called when a `stall`ed commit was applied or a `drop`ped one arrived. */
  onCommit: ((fault: CommitFault) => void) | undefined;
  /** Commits are held until this many wait, then all go on at once (two writers' commits on one parent); 0: none held. */
  barrier: number;
  close(): Promise<void>;
}

/** A proxy of the tests' own in front of the Apache Iceberg REST server that misbehaves on commits only. */
export async function startRestCommitProxy(upstream: string): Promise<RestCommitProxy> {
  const target = new URL(upstream);
  const state = {
    faults: [] as CommitFault[],
    commits: 0,
    forwarded: 0,
    unreachable: false,
    barrier: 0,
    onCommit: undefined as ((fault: CommitFault) => void) | undefined,
  };
  let waiting: (() => void)[] = [];
  const sockets = new Set<Socket>();
  const forward = (incoming: IncomingMessage, body: Buffer) =>
    new Promise<{ status: number; headers: IncomingMessage['headers']; body: Buffer }>((resolve, reject) => {
      const outgoing = httpRequest(
        { host: target.hostname, port: target.port, path: incoming.url, method: incoming.method, headers: incoming.headers },
        (answer) => {
          const chunks: Buffer[] = [];
          answer.on('data', (chunk: Buffer) => chunks.push(chunk));
          answer.on('end', () => resolve({ status: answer.statusCode ?? 502, headers: answer.headers, body: Buffer.concat(chunks) }));
        },
      );
      outgoing.on('error', reject);
      outgoing.end(body);
    });
  const server: Server = createServer(async (incoming, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of incoming) chunks.push(chunk as Buffer);
    if (state.unreachable) {
      incoming.socket.destroy();
      return;
    }
    const body = Buffer.concat(chunks);
    const isCommit = incoming.method === 'POST' && /\/namespaces\/[^/]+\/tables\/[^/]+$/.test(incoming.url ?? '');
    const fault = isCommit ? (state.faults.shift() ?? 'pass') : 'pass';
    if (isCommit) state.commits++;
    if (isCommit && state.barrier > 0) {
      const held = new Promise<void>((resolve) => waiting.push(resolve));
      if (waiting.length >= state.barrier) {
        state.barrier = 0;
        for (const release of waiting) release();
        waiting = [];
      }
      await held;
    }
    if (fault === 'conflict') {
      response
        .writeHead(409, { 'content-type': 'application/json' })
        .end(JSON.stringify({ error: { message: 'Requirement failed: branch main has changed', type: 'CommitFailedException', code: 409 } }));
      return;
    }
    if (fault === 'drop') {
      // Never sent: the writer waits until it is killed or gives up.
      state.onCommit?.(fault);
      return;
    }
    const answer = await forward(incoming, body);
    if (isCommit) state.forwarded++;
    if (fault === 'lost-503') {
      response.writeHead(503, { 'content-type': 'text/plain' }).end('service unavailable (the answer was lost)');
      return;
    }
    if (fault === 'cut') {
      state.unreachable = true;
      incoming.socket.destroy();
      return;
    }
    if (fault === 'stall') {
      // Never answered: the writer's request timeout ends the wait; the socket closes with the proxy.
      state.onCommit?.(fault);
      return;
    }
    const { 'transfer-encoding': _chunked, 'content-length': _length, ...headers } = answer.headers;
    response.writeHead(answer.status, headers).end(answer.body);
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    get faults() {
      return state.faults;
    },
    get commits() {
      return state.commits;
    },
    get forwarded() {
      return state.forwarded;
    },
    get unreachable() {
      return state.unreachable;
    },
    set unreachable(value: boolean) {
      state.unreachable = value;
    },
    get onCommit() {
      return state.onCommit;
    },
    set onCommit(value: ((fault: CommitFault) => void) | undefined) {
      state.onCommit = value;
    },
    get barrier() {
      return state.barrier;
    },
    set barrier(value: number) {
      state.barrier = value;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
