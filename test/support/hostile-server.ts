import { numberTextColumns } from '../../src/transform/columns.js';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { Agent } from 'undici';
import { afterAll, afterEach } from 'vitest';
import { ExportClient } from '../../src/source/export-endpoint/export-client.js';
import type { RequestTimeouts } from '../../src/source/http.js';
import { RetryBudget } from '../../src/retry.js';
import type { RetryPolicy } from '../../src/source/retry-policy.js';
import { SessionToken } from '../../src/source/session-token.js';
import { fetchToken, type TokenRequest } from '../../src/source/token-client.js';

/** One scripted answer. Everything is optional: the default is an empty 200. */
export interface HostileAnswer {
  status?: number;
  headers?: Record<string, string>;
  /** JSON to send (serialised here); ignored when `body` is set. */
  json?: unknown;
  /** Exact bytes or text to send. */
  body?: string | Uint8Array;
  /** Compress the body with this coding and say so in content-encoding (unless `undeclared`). */
  encoding?: 'gzip' | 'br' | 'deflate';
  /** Compress but send no content-encoding header. */
  undeclared?: boolean;
  /** Wait this long before sending the status line and headers. */
  delayMs?: number;
  /** Send the body chunked, `bytes` at a time, one piece every `everyMs`. */
  trickle?: { bytes: number; everyMs: number };
  /** Send only this many bytes of the (encoded) body, then end the response as if complete. */
  truncateTo?: number;
  /** Invert the bytes in the middle third of the (encoded) body: a corrupt stream of full length. */
  corrupt?: boolean;
}

export interface RecordedRequest {
  endpoint: 'token' | 'export';
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  /** The request body as received. */
  body: string;
  /** The body as JSON, or undefined when it is not JSON. */
  json: unknown;
  /** For export requests: `options.pageNumber` of the body. */
  pageNumber?: number;
  /** For export requests: `options.itemsPerPage` of the body. */
  itemsPerPage?: number;
  /** Milliseconds since the server started. */
  at: number;
}

export interface HostileScript {
  /** Answers to POST /oauth/token; `index` counts token requests from 0. Default: a valid token. */
  token?: (request: RecordedRequest, index: number) => HostileAnswer;
  /** Answers to every other request; `index` counts export requests from 0. */
  page: (request: RecordedRequest, index: number) => HostileAnswer;
}

export interface HostileServer {
  url: string;
  /** Every request, in arrival order, with its body. */
  requests: RecordedRequest[];
  /** The page numbers of the export requests, in arrival order. */
  pagesAsked(): number[];
  close(): Promise<void>;
}

export const VALID_TOKEN: HostileAnswer = { json: { access_token: 'hostile-token', token_type: 'Bearer', expires_in: 60 } };

function encode(answer: HostileAnswer): Buffer {
  const raw = answer.body !== undefined ? Buffer.from(answer.body) : answer.json !== undefined ? Buffer.from(JSON.stringify(answer.json)) : Buffer.alloc(0);
  if (answer.encoding === 'gzip') return gzipSync(raw);
  if (answer.encoding === 'br') return brotliCompressSync(raw);
  if (answer.encoding === 'deflate') return deflateSync(raw);
  return raw;
}

function send(res: ServerResponse, answer: HostileAnswer): void {
  let bytes = encode(answer);
  if (answer.truncateTo !== undefined) bytes = bytes.subarray(0, answer.truncateTo);
  if (answer.corrupt) {
    bytes = Buffer.from(bytes);
    for (let index = Math.floor(bytes.length / 3); index < Math.floor((2 * bytes.length) / 3); index++) bytes[index] = bytes[index]! ^ 0xff;
  }
  const headers: Record<string, string> = { 'content-type': 'application/json', ...answer.headers };
  if (answer.encoding && !answer.undeclared) headers['content-encoding'] ??= answer.encoding;
  const { trickle } = answer;
  if (trickle === undefined) headers['content-length'] ??= String(bytes.length);
  res.writeHead(answer.status ?? 200, headers);
  if (trickle === undefined) {
    res.end(bytes);
    return;
  }
  let offset = 0;
  const timer = setInterval(() => {
    if (res.destroyed) return clearInterval(timer);
    res.write(bytes.subarray(offset, offset + trickle.bytes));
    offset += trickle.bytes;
    if (offset >= bytes.length) {
      clearInterval(timer);
      res.end();
    }
  }, trickle.everyMs);
  res.on('close', () => clearInterval(timer));
}

/**
 * A source that misbehaves exactly as a test scripts, per request: status, headers, body bytes,
 * compression (declared or not), a delay before the headers, a body that trickles. It records
 * every request with its body, so a test can assert on what was asked.
 */
export async function startHostileServer(script: HostileScript): Promise<HostileServer> {
  const started = Date.now();
  const requests: RecordedRequest[] = [];
  let tokens = 0;
  let exports = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch {
        json = undefined;
      }
      const isToken = req.url?.startsWith('/oauth/token') ?? false;
      const options = (json as { options?: { pageNumber?: unknown; itemsPerPage?: unknown } } | undefined)?.options;
      const recorded: RecordedRequest = {
        endpoint: isToken ? 'token' : 'export',
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body,
        json,
        at: Date.now() - started,
      };
      if (!isToken && typeof options?.pageNumber === 'number') recorded.pageNumber = options.pageNumber;
      if (!isToken && typeof options?.itemsPerPage === 'number') recorded.itemsPerPage = options.itemsPerPage;
      requests.push(recorded);
      const answer = isToken ? (script.token?.(recorded, tokens++) ?? VALID_TOKEN) : script.page(recorded, exports++);
      if (answer.delayMs) {
        const timer = setTimeout(() => send(res, answer), answer.delayMs);
        res.on('close', () => clearTimeout(timer));
      } else {
        send(res, answer);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    pagesAsked: () => requests.filter((r) => r.endpoint === 'export').map((r) => r.pageNumber ?? -1),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface Table {
  headers: string[];
  dataTypes: string[];
  rows: unknown[][];
}

/**
 * The page of `table` a request asks for, as a faithful API would answer it; `echo` adds
 * `result.query` (the request's own query, as the sandbox does).
 */
export function tablePage(
  table: Table,
  request: RecordedRequest,
  options: { echo?: boolean; pageNumber?: number } = {},
): { ok: true; result: Record<string, unknown> } {
  const pageNumber = options.pageNumber ?? request.pageNumber ?? 0;
  const size = request.itemsPerPage ?? 50;
  const rows = table.rows.slice(pageNumber * size, (pageNumber + 1) * size);
  const result: Record<string, unknown> = {
    navigation: { hasPrev: pageNumber > 0, hasNext: (pageNumber + 1) * size < table.rows.length, rowsCount: rows.length, totalRows: table.rows.length },
    headers: table.headers,
    dataTypes: table.dataTypes,
    rows,
    sourceImported: false,
  };
  if (options.echo) result.query = request.json;
  return { ok: true, result };
}

export const HOSTILE_QUERY = {
  items: [
    { header: 'Type', formula: '[incident.type]', dataType: 'text', filters: [] },
    { header: 'Incidents', formula: '[incident.number]', dataType: 'number', filters: [] },
  ],
  options: {},
};

/** Fast waits, same policy; `maxDelayMs` is also the longest Retry-After the client accepts. */
export function fastPolicy(overrides: Partial<RetryPolicy> = {}): RetryPolicy {
  return { maxAttempts: 3, baseDelayMs: 2, maxDelayMs: 50, budget: new RetryBudget(20), ...overrides };
}

const TIMEOUTS: RequestTimeouts = { headersMs: 2000, bodyMs: 2000, totalMs: 5000 };

/** The token request as the pipeline makes it, pointed at the hostile server. */
export function tokenRequest(server: HostileServer, dispatcher: Agent, overrides: Partial<TokenRequest> = {}): TokenRequest {
  return {
    authUrl: server.url,
    clientId: 'hostile-id',
    clientSecret: 'hostile-secret',
    audience: '127.0.0.1',
    jobName: 'hostile',
    dispatcher,
    timeouts: TIMEOUTS,
    retry: fastPolicy(),
    ...overrides,
  };
}

/** The export client wired as src/pipeline/source-session.ts wires it, against the hostile server. */
export function hostileClient(
  server: HostileServer,
  dispatcher: Agent,
  overrides: { itemsPerPage?: number; timeouts?: RequestTimeouts; retry?: RetryPolicy } = {},
): ExportClient {
  const retry = overrides.retry ?? fastPolicy();
  const timeouts = overrides.timeouts ?? TIMEOUTS;
  return new ExportClient({
    baseUrl: server.url,
    tileParam: 'tileId',
    tileId: 't-1',
    query: HOSTILE_QUERY,
    itemsPerPage: overrides.itemsPerPage ?? 2,
    jobName: 'hostile',
    dispatcher,
    timeouts,
    retry,
    token: new SessionToken(() => fetchToken(tokenRequest(server, dispatcher, { retry, timeouts }))),
    numberTextColumns: (headers, dataTypes) => numberTextColumns(headers, dataTypes, {}),
  });
}

export interface HostileServers {
  /** One undici Agent for the file, closed after its last test. */
  readonly dispatcher: Agent;
  /** Starts this test's server (closed after the test). */
  start(script: HostileScript): Promise<HostileServer>;
  /** Closes this test's server now, so the test can start another. */
  closeCurrent(): Promise<void>;
}

/** The hostile-source tests' set-up: a dispatcher for the file, and one server per test, closed after it even when the test failed. */
export function hostileServersEachTest(): HostileServers {
  const dispatcher = new Agent();
  afterAll(() => dispatcher.close());
  let current: HostileServer | undefined;
  const closeCurrent = async (): Promise<void> => {
    await current?.close();
    current = undefined;
  };
  afterEach(closeCurrent);
  return {
    dispatcher,
    async start(script) {
      current = await startHostileServer(script);
      return current;
    },
    closeCurrent,
  };
}
