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
      statistics: { creationTime: String(Date.now()) },
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
  'tables.insert': (request) => ({ status: 200, body: { ...(request.json as object), creationTime: String(Date.now()) } }),
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
