import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import { generateDataset } from './dataset.js';
import { answerExportRequest, ECHO_MODES, type EchoMode } from './export-endpoint.js';
import { createReplay } from './replay.js';
import type { Recording } from '../src/source/recording.js';
import type { ExportResult } from './export-page.js';
import { FaultBook, type AfterFaults, type FaultRule } from './faults.js';
import { authenticationError, parseJson, regularError, type HttpAnswer } from './http-answer.js';
import { QueryError } from './query-error.js';
import { evaluateQuery, type EvaluatedTable } from './query-evaluator.js';
import { parseExportQuery, type SandboxQuery } from './query-schema.js';
import type { Endpoint, RecordedRequest } from './request-log.js';
import { ResultCache } from './result-cache.js';
import { DEFAULT_TILE_IDS } from './tiles.js';
import { answerTokenRequest } from './token-endpoint.js';
import { TokenStore } from './token-store.js';
import { encodeRow, type DatetimeFormat, type RowShape } from './wire-format.js';

export interface SandboxOptions {
  /** Default '127.0.0.1'. */
  host?: string;
  /** Default 0: a free port chosen by the OS. */
  port?: number;
  /** Default 'sandbox-client'. */
  clientId?: string;
  /** Default 'sandbox-secret'. */
  clientSecret?: string;
  /** The only audience the token endpoint accepts. Default: the URL host name (what tilehouse defaults to). */
  audience?: string;
  /** The query-string item carrying the tile id. Default 'tileId'. */
  tileParam?: string;
  /** Known tile ids. Default DEFAULT_TILE_IDS. */
  tiles?: Iterable<string>;
  /** How many incidents to generate. Default 500. */
  incidents?: number;
  /** PRNG seed of the dataset. Default 42. */
  seed?: number;
  /** The dataset's "now": incidents are created in the 400 days before it; rw windows end at it. Default DEFAULT_NOW. */
  now?: Date;
  /** Lifetime of issued tokens on the real clock. Default 3600. */
  tokenLifetimeSeconds?: number;
  /** Added to every export request that is processed. Default 0. */
  latencyMs?: number;
  /** Export requests beyond this many in flight get 429. Default unlimited. */
  maxConcurrentExports?: number;
  /** Retry-After of a 429 from maxConcurrentExports. Default 0: "retry as soon as another request finished". */
  concurrencyRetryAfterSeconds?: number;
  /** How unformatted datetimes travel. Default 'epoch-ms'. */
  datetimeFormat?: DatetimeFormat;
  /** Rows as arrays aligned with headers, or objects keyed by header. Default 'array'. */
  rowShape?: RowShape;
  /** gzip every answer whose request accepts gzip (Accept-Encoding), as real services do. Default false. */
  compress?: boolean;
  /**
   * The link's speed in Mbit/s: each answer waits as long as its body (as sent, compressed or
   * not) takes to cross such a link, before it is sent. Default: no limit (loopback).
   */
  bandwidthMbps?: number;
  /** What `result.query` holds: the request (default), the tile's saved query (pageNumber 0 on every page), or nothing. See EchoMode. */
  echo?: EchoMode;
  /**
   * Serve a recording (`tilehouse probe --record FILE`) instead of the dataset: the export endpoint
   * answers from it (see replay.ts), the token endpoint issues tokens as usual (lifetime: the
   * recorded expires_in), answers are compressed as recorded and carry the recorded Date.
   */
  replay?: Recording;
}

export interface Sandbox {
  /** 'http://127.0.0.1:<port>': serves both /oauth/token and /api/v1/... */
  readonly url: string;
  readonly port: number;
  readonly audience: string;
  readonly clientId: string;
  readonly clientSecret: string;
  readonly tileParam: string;
  /** The dataset's "now". */
  readonly now: Date;
  /** Every request so far, in arrival order (a live view). */
  readonly requests: readonly RecordedRequest[];
  /** Every access token issued so far (a live view). */
  readonly issuedTokens: readonly string[];
  /** Adds a fault rule; it applies from the next request on. */
  inject(rule: FaultRule): void;
  clearFaults(): void;
  /** Forgets the recorded requests (faults and call counters are unaffected). */
  clearRequests(): void;
  /** The full (unpaged) result the export endpoint would return for this query, for test comparisons. Throws QueryError for a query the endpoint answers with 400. */
  evaluate(query: unknown, tileId?: string): { headers: string[]; dataTypes: string[]; rows: unknown[][] };
  close(): Promise<void>;
}

/** Fixed so that the demo writes the same files on every run. */
export const DEFAULT_NOW = new Date('2026-07-01T00:00:00Z');
export const TOKEN_PATH = '/oauth/token';
export const EXPORT_PATH = '/api/v1/topics/incident/execute';
const MAX_BODY_BYTES = 1024 * 1024;

export async function startSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const host = options.host ?? '127.0.0.1';
  const tileParam = options.tileParam ?? 'tileId';
  const clientId = options.clientId ?? 'sandbox-client';
  const clientSecret = options.clientSecret ?? 'sandbox-secret';
  const tokenLifetimeSeconds = positive(options.tokenLifetimeSeconds ?? options.replay?.token?.expiresIn ?? 3600, 'tokenLifetimeSeconds');
  const latencyMs = atLeastZero(options.latencyMs ?? 0, 'latencyMs');
  const maxConcurrentExports =
    options.maxConcurrentExports === undefined ? Number.POSITIVE_INFINITY : positive(options.maxConcurrentExports, 'maxConcurrentExports');
  const replay = options.replay === undefined ? undefined : createReplay(options.replay);
  const recordedCompression = replay?.recording.behaviour?.compression ?? 'none';
  // 'gzip' | 'br' | undefined: what answers are compressed with when the request accepts it.
  const compression = options.compress === true || /gzip/i.test(recordedCompression) ? 'gzip' : /\bbr\b/i.test(recordedCompression) ? 'br' : undefined;
  const compress = compression !== undefined;
  const echo = options.echo ?? 'request';
  if (!ECHO_MODES.includes(echo)) throw new RangeError(`echo must be one of ${ECHO_MODES.join(', ')} (got ${String(echo)})`);
  const bandwidthMbps = options.bandwidthMbps === undefined ? undefined : positive(options.bandwidthMbps, 'bandwidthMbps');
  const concurrencyRetryAfter = atLeastZero(options.concurrencyRetryAfterSeconds ?? 0, 'concurrencyRetryAfterSeconds');
  const wire = { datetimeFormat: options.datetimeFormat ?? 'epoch-ms', rowShape: options.rowShape ?? 'array' } as const;
  const tiles = new Set([...(options.tiles ?? DEFAULT_TILE_IDS), ...(replay ? [replay.tile] : [])]);
  const recordedDate = replay === undefined ? undefined : recordedServerDate(replay.recording);
  const now = options.now ?? recordedDate ?? DEFAULT_NOW;
  // A replayed tenant that sent no Date header gets none (node:http would add one).
  const sendDate = replay === undefined || recordedDate !== undefined || options.now !== undefined;
  const dataset = generateDataset({ size: options.incidents ?? 500, seed: options.seed ?? 42, now });

  const tokens = new TokenStore();
  const faults = new FaultBook();
  const cache = new ResultCache();
  let log: RecordedRequest[] = [];
  let seq = 0;
  let otherCalls = 0;
  let inFlightExports = 0;
  const lifetime = new AbortController();
  const urlHost = host.includes(':') ? `[${host}]` : host;
  // What tilehouse defaults the audience to: new URL(baseUrl).hostname.
  const audience = options.audience ?? new URL(`http://${urlHost}`).hostname;

  const evaluateCached = (query: SandboxQuery, tileId: string): EvaluatedTable =>
    cache.getOrEvaluate(`${tileId}\n${JSON.stringify([query.items, query.options.ignoreRepeatedRows])}`, () => evaluateQuery(query, { dataset, audience }));

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let record: RecordedRequest | undefined;
    try {
      await serve(req, res, (r) => (record = r));
    } catch (error) {
      if (lifetime.signal.aborted || res.destroyed || res.headersSent) {
        res.destroy();
        return;
      }
      // A bug in the sandbox must be loud in tests, not a hang.
      const message = `sandbox failure: ${error instanceof Error ? error.message : String(error)}`;
      const bytes = Buffer.from(JSON.stringify({ error: { status: 500, message } }));
      if (record) {
        record.status = 500;
        record.respondedAt = Date.now();
      }
      res.writeHead(500, { 'content-type': 'application/json; charset=utf-8', 'content-length': bytes.length });
      res.end(bytes);
    }
  }

  async function serve(req: IncomingMessage, res: ServerResponse, recorded: (record: RecordedRequest) => void): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://sandbox.invalid');
    const endpoint: Endpoint = url.pathname === TOKEN_PATH ? 'token' : url.pathname === EXPORT_PATH ? 'export' : 'other';
    const call = endpoint === 'other' ? ++otherCalls : faults.arrive(endpoint);
    const refused = endpoint === 'export' && inFlightExports >= maxConcurrentExports;
    if (endpoint === 'export' && !refused) {
      inFlightExports++;
      res.once('close', () => inFlightExports--);
    }
    const record: RecordedRequest = {
      seq: ++seq,
      endpoint,
      call,
      method: req.method ?? '',
      path: url.pathname + url.search,
      tileId: endpoint === 'export' ? url.searchParams.get(tileParam) : null,
      pageNumber: null,
      itemsPerPage: null,
      status: null,
      faults: [],
      receivedAt: Date.now(),
      respondedAt: null,
      inFlight: endpoint === 'export' && !refused ? inFlightExports : 0,
    };
    log.push(record);
    recorded(record);

    const send = (answer: HttpAnswer, malformed = false): void => {
      if (res.destroyed || res.writableEnded) return;
      let bytes = Buffer.from(JSON.stringify(answer.body));
      const encoding =
        compression === 'gzip' && acceptsGzip(req.headers['accept-encoding'])
          ? 'gzip'
          : compression === 'br' && acceptsCoding(req.headers['accept-encoding'], 'br')
            ? 'br'
            : undefined;
      if (encoding === 'gzip') bytes = gzipSync(bytes);
      if (encoding === 'br') bytes = brotliCompressSync(bytes);
      // A malformed answer is cut short after compression, as a dropped connection would cut it.
      if (malformed) bytes = bytes.subarray(0, Math.floor(bytes.length / 2));
      const write = (): void => {
        if (res.destroyed || res.writableEnded) return;
        record.status = answer.status;
        record.respondedAt = Date.now();
        res.writeHead(answer.status, {
          'content-type': 'application/json; charset=utf-8',
          'content-length': bytes.length,
          ...(compress ? { vary: 'accept-encoding' } : {}),
          ...(encoding ? { 'content-encoding': encoding } : {}),
          // The sandbox's clock stands still at its dataset's "now" (its rw windows end there), and
          // says so as every HTTP server does: a client computing windows must read it from here.
          ...(sendDate ? { date: now.toUTCString() } : {}),
          ...answer.headers,
        });
        res.end(bytes);
      };
      res.sendDate = sendDate;
      if (bandwidthMbps === undefined) return write();
      setTimeout(write, (bytes.length * 8) / (bandwidthMbps * 1000)).unref();
    };

    if (refused) {
      record.faults.push('concurrency-limit');
      return send(regularError(429, `too many concurrent export requests (limit ${maxConcurrentExports})`, { 'retry-after': String(concurrencyRetryAfter) }));
    }
    if (endpoint === 'other') return send(regularError(404, `no such endpoint: ${req.method} ${url.pathname}`));
    if (req.method !== 'POST') {
      const answer = endpoint === 'token' ? authenticationError(405, 'invalid_request', 'use POST') : regularError(405, 'method not allowed; use POST');
      return send({ ...answer, headers: { ...answer.headers, allow: 'POST' } });
    }
    const body = await readBody(req);
    if (body === null) {
      res.shouldKeepAlive = false;
      return send(regularError(413, `body larger than ${MAX_BODY_BYTES} bytes`));
    }
    let pageNumber: number | null = null;
    if (endpoint === 'export') {
      const options = (parseJson(body) as { options?: { pageNumber?: unknown; itemsPerPage?: unknown } } | undefined)?.options;
      pageNumber = Number.isInteger(options?.pageNumber) ? (options!.pageNumber as number) : null;
      record.pageNumber = pageNumber;
      record.itemsPerPage = Number.isInteger(options?.itemsPerPage) ? (options!.itemsPerPage as number) : null;
    }

    const before = faults.before(endpoint, call, pageNumber);
    record.faults.push(...before.applied);
    if (before.delayMs > 0) await sleep(before.delayMs, undefined, { signal: lifetime.signal });
    switch (before.interruption?.kind) {
      case 'connection-reset':
        record.respondedAt = Date.now();
        req.socket.destroy();
        return;
      case 'rate-limit': {
        const retryAfter = before.interruption.retryAfter;
        return send(regularError(429, 'rate limit exceeded', retryAfter === null ? undefined : { 'retry-after': retryAfter }));
      }
      case 'server-error':
        return send(regularError(before.interruption.status, before.interruption.message));
      default:
        break;
    }
    if (endpoint === 'export' && latencyMs > 0) await sleep(latencyMs, undefined, { signal: lifetime.signal });
    // A client that gave up while the answer was held back gets none: issuing a token or spending
    // a single-use answer fault (a header-mismatch, a token-expiry) on it would take that fault
    // from the next request, at a moment only the machine's load decides.
    if (res.destroyed || req.socket.destroyed) return;

    const answer =
      endpoint === 'token'
        ? answerTokenRequest(req.headers['content-type'], body, { clientId, clientSecret, audience, lifetimeSeconds: tokenLifetimeSeconds, tokens })
        : answerExportRequest(
            {
              authorization: req.headers.authorization,
              contentType: req.headers['content-type'],
              tileId: record.tileId,
              body,
            },
            { audience, tokens, faults, tiles, wire, echo, ...(replay ? { replay } : {}), evaluate: evaluateCached },
          );
    if (answer.status !== 200) return send(answer);
    const after = faults.after(endpoint, call, pageNumber);
    record.faults.push(...after.applied);
    if (endpoint === 'export') applyPageFaults(answer.body as { result: ExportResult }, after);
    send(answer, after.malformed);
  }

  const server = createServer((req, res) => void handle(req, res));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const url = `http://${urlHost}:${port}`;

  let closing: Promise<void> | undefined;
  return {
    url,
    port,
    audience,
    clientId,
    clientSecret,
    tileParam,
    now: new Date(dataset.now),
    get requests() {
      return log;
    },
    get issuedTokens() {
      return tokens.issued;
    },
    inject: (rule) => faults.inject(rule),
    clearFaults: () => faults.clear(),
    clearRequests: () => {
      log = [];
    },
    evaluate(query, tileId = [...tiles][0]) {
      if (tileId === undefined || !tiles.has(tileId)) throw new QueryError('invalid id');
      const table = evaluateCached(parseExportQuery(query), tileId);
      const rows: unknown[][] = [];
      for (let i = 0; i < table.totalRows; i++) rows.push(encodeRow(table, i, wire.datetimeFormat));
      return { headers: [...table.headers], dataTypes: [...table.dataTypes], rows };
    },
    close() {
      closing ??= new Promise<void>((resolve) => {
        lifetime.abort();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

function applyPageFaults(body: { result: ExportResult }, after: AfterFaults): void {
  body.result.navigation.totalRows += after.totalRowsDelta;
  if (after.headers) body.result.headers = after.headers(body.result.headers);
}

async function readBody(req: IncomingMessage): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) return null;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/** Whether an Accept-Encoding header allows gzip (listed, or `*`, without q=0). */
export function acceptsGzip(header: string | undefined): boolean {
  return acceptsCoding(header, 'gzip');
}

/** Whether an Accept-Encoding header allows `wanted` (listed, or `*`, without q=0); x-gzip counts as gzip. */
export function acceptsCoding(header: string | undefined, wanted: string): boolean {
  if (header === undefined) return false;
  let star = false;
  for (const part of header.split(',')) {
    const [coding = '', ...parameters] = part.split(';').map((piece) => piece.trim().toLowerCase());
    const refused = parameters.some((parameter) => /^q=0(?:\.0{0,3})?$/.test(parameter));
    if (coding === wanted || (wanted === 'gzip' && coding === 'x-gzip')) return !refused;
    if (coding === '*') star = !refused;
  }
  return star;
}

/** The tenant's clock as its first recorded answer's Date header told it; undefined without one. */
function recordedServerDate(recording: Recording): Date | undefined {
  const date = recording.token?.headers.date ?? recording.exchanges.find((exchange) => exchange.headers.date !== undefined)?.headers.date;
  const at = date === undefined ? Number.NaN : Date.parse(date);
  return Number.isNaN(at) ? undefined : new Date(at);
}

function positive(value: number, name: string): number {
  if (!(typeof value === 'number' && value > 0)) throw new RangeError(`${name} must be > 0 (got ${value})`);
  return value;
}

function atLeastZero(value: number, name: string): number {
  if (!(typeof value === 'number' && value >= 0 && Number.isFinite(value))) throw new RangeError(`${name} must be >= 0 (got ${value})`);
  return value;
}
