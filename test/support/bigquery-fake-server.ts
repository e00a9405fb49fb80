import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { BigQuery } from '@google-cloud/bigquery';
import { localBigQueryClient } from './bigquery-emulator.js';

/**
 * A scripted stand-in for the BigQuery REST API on loopback, for behaviour the emulator cannot
 * show (it has no copy jobs, ignores partition decorators, keeps added columns out of its storage,
 * answers a reused job id with 500 instead of 409, finishes every job at once, ignores cancels,
 * and never fails transiently). The sink talks to it through the real client, so the tests see
 * the exact HTTP requests the client sends, multipart load uploads included.
 */
export interface RecordedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  /** Parsed JSON body, or for a multipart upload, its JSON metadata part. */
  json: unknown;
  /** The data part of a multipart upload (the NDJSON file). */
  upload?: string;
  /** Which API call this was, e.g. `jobs.insert`; see `route`. */
  call: ApiCall;
}

/**
 * `jobs.insert` is a load (a multipart upload); `jobs.copy` is a jobs.insert whose configuration
 * is a copy (a plain JSON POST).
 */
export type ApiCall =
  | 'datasets.get'
  | 'datasets.insert'
  | 'tables.get'
  | 'tables.insert'
  | 'tables.patch'
  | 'tables.delete'
  | 'jobs.insert'
  | 'jobs.copy'
  | 'jobs.get'
  | 'jobs.cancel'
  | 'other';

export interface Reply {
  status: number;
  body?: unknown;
}

/** Answers per API call; `attempt` counts calls of that kind (1-based). Defaults: see below. */
export type FakeRoutes = Partial<Record<ApiCall, (request: RecordedRequest, attempt: number) => Reply | Promise<Reply>>>;

export interface FakeBigQuery {
  endpoint: { apiEndpoint: string; projectId: string };
  requests: RecordedRequest[];
  client(): BigQuery;
  /** Requests of one kind, in order. */
  calls(call: ApiCall): RecordedRequest[];
  close(): Promise<void>;
}

export const FAKE_PROJECT_ID = 'fake-project';

let lastTime = 0;

/**
 * BigQuery's clock for `creationTime`s (ms since the epoch, as text): never the same value twice,
 * so "created before" never depends on two calls sharing a millisecond.
 */
export function fakeClock(): string {
  lastTime = Math.max(Date.now(), lastTime + 1);
  return String(lastTime);
}

/** BigQuery's error envelope, as the client parses it into an ApiError. */
export function apiError(status: number, reason: string, message: string): Reply {
  return { status, body: { error: { code: status, message, errors: [{ reason, message, domain: 'global' }] } } };
}

/** A job resource in the given state, echoing the job id of the request. */
export function jobResource(
  jobId: string,
  state: 'PENDING' | 'RUNNING' | 'DONE',
  errorResult?: { reason: string; message: string },
): Reply {
  return {
    status: 200,
    body: {
      kind: 'bigquery#job',
      jobReference: { projectId: FAKE_PROJECT_ID, jobId, location: 'US' },
      status: errorResult ? { state, errorResult, errors: [errorResult] } : { state },
      statistics: { creationTime: fakeClock() },
    },
  };
}

/** The job id a recorded jobs.insert, jobs.copy, jobs.get or jobs.cancel request is about. */
export function jobIdOf(request: RecordedRequest): string {
  if (request.call === 'jobs.get') return decodeURIComponent(request.path.split('/').at(-1) ?? '');
  if (request.call === 'jobs.cancel') return decodeURIComponent(request.path.split('/').at(-2) ?? '');
  return (request.json as { jobReference?: { jobId?: string } }).jobReference?.jobId ?? '';
}

/** The table a recorded tables.* request is about. */
export function tableIdOf(request: RecordedRequest): string {
  if (request.call === 'tables.insert') return (request.json as { tableReference?: { tableId?: string } }).tableReference?.tableId ?? '';
  return decodeURIComponent(request.path.split('/').at(-1) ?? '');
}

const DEFAULT_ROUTES: Required<Omit<FakeRoutes, 'other'>> = {
  'datasets.get': () => ({ status: 200, body: { location: 'US' } }),
  'datasets.insert': (request) => ({ status: 200, body: request.json }),
  'tables.get': () => apiError(404, 'notFound', 'Not found: Table'),
  'tables.insert': (request) => ({ status: 200, body: { ...(request.json as object), creationTime: fakeClock() } }),
  'tables.patch': (request) => ({ status: 200, body: request.json }),
  'tables.delete': () => ({ status: 204 }),
  'jobs.insert': (request) => jobResource(jobIdOf(request), 'DONE'),
  'jobs.copy': (request) => jobResource(jobIdOf(request), 'DONE'),
  'jobs.get': (request) => jobResource(jobIdOf(request), 'DONE'),
  'jobs.cancel': (request) => ({ status: 200, body: { kind: 'bigquery#jobCancelResponse', job: jobResource(jobIdOf(request), 'DONE').body } }),
};

export async function startFakeBigQuery(routes: FakeRoutes = {}): Promise<FakeBigQuery> {
  const requests: RecordedRequest[] = [];
  const attempts = new Map<ApiCall, number>();

  const server = createServer((request, response) => {
    void handle(request, response).catch((error: unknown) => {
      response.writeHead(500, { 'content-type': 'text/plain' }).end(String(error));
    });
  });

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const body = Buffer.concat(await request.toArray());
    const url = new URL(request.url ?? '/', 'http://localhost');
    let call = route(request.method ?? 'GET', url.pathname);
    const recorded: RecordedRequest = { method: request.method ?? 'GET', path: url.pathname, query: url.searchParams, json: undefined, call };
    const contentType = request.headers['content-type'] ?? '';
    if (contentType.startsWith('multipart/')) {
      const [metadata, data] = multipartParts(body, contentType);
      recorded.json = JSON.parse(metadata ?? 'null');
      recorded.upload = data ?? '';
    } else if (body.length > 0) {
      recorded.json = JSON.parse(body.toString('utf8'));
    }
    if (call === 'jobs.copy' && (recorded.json as { configuration?: { copy?: unknown } } | undefined)?.configuration?.copy === undefined) {
      call = 'other';
    }
    recorded.call = call;
    requests.push(recorded);
    const attempt = (attempts.get(call) ?? 0) + 1;
    attempts.set(call, attempt);
    const handler = routes[call] ?? (call === 'other' ? undefined : DEFAULT_ROUTES[call]);
    const reply = handler ? await handler(recorded, attempt) : apiError(404, 'notFound', `fake BigQuery has no route for ${request.method} ${url.pathname}`);
    if (reply.status === 204) response.writeHead(204).end();
    else response.writeHead(reply.status, { 'content-type': 'application/json' }).end(JSON.stringify(reply.body ?? {}));
  }

  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const endpoint = { apiEndpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, projectId: FAKE_PROJECT_ID };
  return {
    endpoint,
    requests,
    client: () => localBigQueryClient(endpoint),
    calls: (call) => requests.filter((request) => request.call === call),
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

function route(method: string, path: string): ApiCall {
  const p = '/projects/[^/]+';
  if (method === 'POST' && new RegExp(`^/upload/bigquery/v2${p}/jobs$`).test(path)) return 'jobs.insert';
  if (method === 'POST' && new RegExp(`^/bigquery/v2${p}/jobs$`).test(path)) return 'jobs.copy';
  if (method === 'GET' && new RegExp(`^/bigquery/v2${p}/jobs/[^/]+$`).test(path)) return 'jobs.get';
  if (method === 'POST' && new RegExp(`^/bigquery/v2${p}/jobs/[^/]+/cancel$`).test(path)) return 'jobs.cancel';
  const table = new RegExp(`^/bigquery/v2${p}/datasets/[^/]+/tables/[^/]+$`).test(path);
  if (method === 'GET' && table) return 'tables.get';
  if (method === 'PATCH' && table) return 'tables.patch';
  if (method === 'DELETE' && table) return 'tables.delete';
  if (method === 'POST' && new RegExp(`^/bigquery/v2${p}/datasets/[^/]+/tables$`).test(path)) return 'tables.insert';
  if (method === 'GET' && new RegExp(`^/bigquery/v2${p}/datasets/[^/]+$`).test(path)) return 'datasets.get';
  if (method === 'POST' && new RegExp(`^/bigquery/v2${p}/datasets$`).test(path)) return 'datasets.insert';
  return 'other';
}

/** The bodies of a multipart/related request, in order (metadata JSON, then the data). */
function multipartParts(body: Buffer, contentType: string): string[] {
  const boundary = /boundary="?([^";]+)"?/.exec(contentType)?.[1];
  if (!boundary) return [];
  return body
    .toString('utf8')
    .split(`--${boundary}`)
    .slice(1, -1)
    .map((part) => {
      const separator = part.indexOf('\r\n\r\n');
      return part.slice(separator + 4).replace(/\r\n$/, '');
    });
}

export interface EmulatorWithCopyJobs {
  endpoint: { apiEndpoint: string; projectId: string };
  client(): BigQuery;
  /** The copy jobs.insert requests the proxy carried out itself, in order. */
  copies: RecordedRequest[];
  close(): Promise<void>;
}

/**
 * The BigQuery emulator behind a loopback proxy that adds the one thing the publish step needs
 * and the emulator lacks: copy jobs (goccy/bigquery-emulator 0.8.1 refuses any jobs.insert that
 * is not a query, load or extract with "unspecified job configuration query").
 *
 * Every other request goes to the emulator unchanged, so loads, staging tables, schemas and rows
 * are the emulator's own. A copy is carried out with the emulator's own SQL: WRITE_TRUNCATE (or a
 * missing destination under CREATE_IF_NEEDED) drops and re-creates the destination with the
 * source's schema, as a truncating copy takes the source's schema; then `INSERT INTO dest (cols)
 * SELECT cols FROM source`. Unlike BigQuery this is not atomic, and it refuses partition
 * decorators (the emulator has no partitions). A reused job id is answered 409 duplicate, as
 * BigQuery does (the emulator says 500 for loads); copies' outcomes are served to jobs.get by the
 * proxy. What this shows is the sink's
 * flow over real storage; the copy request's exact shape is tested against the scripted fake.
 */
export async function startEmulatorWithCopyJobs(emulator: { apiEndpoint: string; projectId: string }): Promise<EmulatorWithCopyJobs> {
  const upstream = localBigQueryClient(emulator);
  const copyJobs = new Map<string, unknown>();
  const copies: RecordedRequest[] = [];

  const server = createServer((request, response) => {
    void handle(request, response).catch((error: unknown) => {
      response.writeHead(500, { 'content-type': 'text/plain' }).end(String(error));
    });
  });

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const body = Buffer.concat(await request.toArray());
    const url = new URL(request.url ?? '/', 'http://localhost');
    const call = route(request.method ?? 'GET', url.pathname);
    const json = call === 'jobs.copy' && body.length > 0 ? (JSON.parse(body.toString('utf8')) as CopyJobRequest) : undefined;
    const send = (reply: Reply): void => {
      response.writeHead(reply.status, { 'content-type': 'application/json' }).end(JSON.stringify(reply.body ?? {}));
    };

    if (json?.configuration?.copy) {
      copies.push({ method: 'POST', path: url.pathname, query: url.searchParams, json, call });
      const jobId = json.jobReference?.jobId ?? `copy_${copyJobs.size + 1}`;
      if (copyJobs.has(jobId)) return send(apiError(409, 'duplicate', `Already Exists: Job ${emulator.projectId}:US.${jobId}`));
      const job = await runCopy(upstream, { ...json, jobReference: { projectId: emulator.projectId, jobId, location: 'US' } });
      copyJobs.set(jobId, job);
      return send({ status: 200, body: job });
    }
    if (call === 'jobs.get' || call === 'jobs.cancel') {
      const jobId = decodeURIComponent(url.pathname.split('/').at(call === 'jobs.get' ? -1 : -2) ?? '');
      const job = copyJobs.get(jobId);
      if (job !== undefined) return send({ status: 200, body: call === 'jobs.get' ? job : { kind: 'bigquery#jobCancelResponse', job } });
    }
    const headers = Object.fromEntries(
      Object.entries(request.headers).filter(([name, value]) => typeof value === 'string' && !HOP_BY_HOP_HEADERS.has(name)),
    ) as Record<string, string>;
    const answer = await fetch(`${emulator.apiEndpoint}${request.url ?? '/'}`, {
      method: request.method ?? 'GET',
      headers,
      ...(body.length > 0 ? { body } : {}),
    });
    const answerBody = Buffer.from(await answer.arrayBuffer());
    // The emulator refuses a reused job id with 500 "job … is already created"; BigQuery says 409
    // duplicate, which is what the sink's adoption logic reads.
    const reused = answer.status === 500 && /failed to add job: job (\S+) is already created/.exec(answerBody.toString('utf8'));
    if (reused) return send(apiError(409, 'duplicate', `Already Exists: Job ${emulator.projectId}:US.${reused[1]}`));
    response.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' }).end(answerBody);
  }

  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const endpoint = { apiEndpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, projectId: emulator.projectId };
  return {
    endpoint,
    client: () => localBigQueryClient(endpoint),
    copies,
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

// Headers of one connection, not of the request; fetch refuses some of them (transfer-encoding).
const HOP_BY_HOP_HEADERS = new Set(['host', 'content-length', 'connection', 'keep-alive', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'expect']);

type TableReference = { projectId: string; datasetId: string; tableId: string };
interface CopyJobRequest {
  jobReference?: { projectId?: string; jobId?: string; location?: string };
  configuration?: {
    copy?: { sourceTable: TableReference; destinationTable: TableReference; writeDisposition?: string; createDisposition?: string };
  };
}

/** Carries out one copy job with the emulator's SQL; resolves with the finished job resource. */
async function runCopy(client: BigQuery, job: CopyJobRequest): Promise<unknown> {
  const copy = job.configuration!.copy!;
  const { sourceTable: from, destinationTable: to } = copy;
  const done = (status: Record<string, unknown>, statistics: Record<string, unknown> = {}) => ({
    kind: 'bigquery#job',
    jobReference: job.jobReference,
    configuration: { jobType: 'COPY', copy },
    status: { state: 'DONE', ...status },
    statistics: { creationTime: String(Date.now()), ...statistics },
  });
  const failed = (reason: string, message: string) => done({ errorResult: { reason, message }, errors: [{ reason, message }] });
  if (to.tableId.includes('$')) return failed('invalid', `copy shim: the emulator has no partitions, cannot copy into ${to.tableId}`);

  const source = client.dataset(from.datasetId, { projectId: from.projectId }).table(from.tableId);
  const destination = client.dataset(to.datasetId, { projectId: to.projectId }).table(to.tableId);
  const [sourceExists] = await source.exists();
  if (!sourceExists) return failed('notFound', `Not found: Table ${from.projectId}:${from.datasetId}.${from.tableId}`);
  const [destinationExists] = await destination.exists();
  if (!destinationExists && copy.createDisposition === 'CREATE_NEVER') {
    return failed('notFound', `Not found: Table ${to.projectId}:${to.datasetId}.${to.tableId}`);
  }
  if (destinationExists) {
    const [target] = await destination.getMetadata();
    if ((target as { type?: string }).type === 'VIEW') return failed('invalid', `Cannot copy into ${to.tableId}: it is a view`);
  }
  const [metadata] = await source.getMetadata();
  const fields = ((metadata as { schema?: { fields?: { name: string }[] } }).schema?.fields ?? []) as { name: string }[];
  const name = (table: TableReference) => `\`${table.projectId}.${table.datasetId}.${table.tableId}\``;
  const [[count]] = (await client.query(`SELECT COUNT(*) AS n FROM ${name(from)}`)) as [[{ n: number }]];
  if (copy.writeDisposition === 'WRITE_EMPTY' && destinationExists) {
    const [[existing]] = (await client.query(`SELECT COUNT(*) AS n FROM ${name(to)}`)) as [[{ n: number }]];
    if (existing.n > 0) return failed('duplicate', `Already Exists: Table ${to.tableId} is not empty`);
  }
  try {
    if (!destinationExists || copy.writeDisposition === 'WRITE_TRUNCATE') {
      if (destinationExists) await destination.delete();
      await destination.create({ schema: (metadata as { schema?: unknown }).schema });
    }
    const columns = fields.map((field) => `\`${field.name}\``).join(', ');
    if (count.n > 0) await client.query(`INSERT INTO ${name(to)} (${columns}) SELECT ${columns} FROM ${name(from)}`);
  } catch (error) {
    return failed('invalid', `copy shim: ${(error as Error).message}`);
  }
  return done({}, { copy: { copiedRows: String(count.n) } });
}
