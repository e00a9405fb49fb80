// src/source/, module by module (ARCHITECTURE.md gives the folder one paragraph):
// what every call to the incident API shares: the OAuth client-credentials token (`token-client.ts`;
// `session-token.ts`: one token per run), `http.ts` (the request: one deadline per request, the undici call),
// `response-body.ts` (its body: gzip/br/deflate decompressed as it streams, UTF-8 decoded on first use, JSON
// parsed from the bytes), `undici-parts.ts` (undici's Agent, DecoratorHandler and request loaded from its own
// files: its index would load fetch, WebSocket, mocks and caches into every run), `http-answer.ts` (the one
// classifier of answers: ok/retry/requeue/reauth/fail), `retry-policy.ts` (the one retry loop of the source),
// `adaptive-concurrency.ts` (the request gate: AIMD on 429), `json-body.ts` (lossless numbers as
// `ExactNumber`s, scanned for only when an INT64/NUMERIC/STRING column holds a number), `source-errors.ts`
// (token, redirect, transport, deadline, Retry-After failures); `recording.ts` (the probe's recording format)
// and `wire-recorder.ts` (every exchange as it crossed the wire, for the probe)

import type { Dispatcher } from 'undici';
import type { JsonBodyParse, JsonBytesOptions } from './json-body.js';
import { type BodyProblem, readBody } from './response-body.js';
import { request } from './undici-parts.js';
import { excerpt as scrubbedExcerpt } from '../secret-scrubber.js';

/**
 * Used when the configuration sets no overall deadline. Two minutes is far above any page the
 * sandbox or the real service takes, and far below a CronJob's activeDeadlineSeconds.
 */
export const DEFAULT_REQUEST_DEADLINE_MS = 120_000;

/** Per request: how long the response headers may take, the longest gap within a body, and the whole answer. */
export interface RequestTimeouts {
  headersMs: number;
  bodyMs: number;
  /**
   * Headers and the whole body together; default DEFAULT_REQUEST_DEADLINE_MS. The gap timeout
   * alone lets a server that trickles one byte every few hundred milliseconds hold a request
   * (and its concurrency permit) for ever.
   */
  totalMs?: number;
}

export interface JsonPost {
  url: string;
  body: unknown;
  headers?: Record<string, string>;
  dispatcher: Dispatcher;
  timeouts: RequestTimeouts;
  signal?: AbortSignal;
}

export interface HttpAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /**
   * The decoded body; when `undecodable` is set, whatever could be read (for excerpts only).
   * Decoded when first read: until then the body waits as bytes, outside the JavaScript heap.
   */
  readonly text: string;
  undecodable?: BodyProblem;
  /**
   * Parses the body as JSON from its bytes, without decoding it whole (see parseJsonBytes), when
   * it is still held as bytes and decodable. Once this succeeded, `text` is empty: the bytes are
   * given back. After a failure `text` still reads the body (for the error's excerpt).
   */
  json?(options: JsonBytesOptions): JsonBodyParse;
}

/** The request got no complete answer (headers and body) within its deadline. Transient, like a timeout. */
export class RequestDeadlineError extends Error {
  readonly code = 'TILEHOUSE_REQUEST_DEADLINE';
  constructor(readonly deadlineMs: number) {
    super(`no complete answer within ${deadlineMs} ms`);
    this.name = 'RequestDeadlineError';
  }
}

/**
 * POSTs a JSON body and reads the whole answer as text, decompressed; parsing is the caller's
 * business. One deadline covers headers and body; the caller's signal still aborts at once.
 */
export async function postJson(post: JsonPost): Promise<HttpAnswer> {
  const deadlineMs = post.timeouts.totalMs ?? DEFAULT_REQUEST_DEADLINE_MS;
  // A controller of our own, linked by a listener removed in `finally`, rather than
  // AbortSignal.any: a dependent signal of the run's long-lived signal per request is retained
  // until the run ends (nodejs/node#54614), and a run sends thousands of requests.
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new RequestDeadlineError(deadlineMs)), deadlineMs);
  const onCallerAbort = () => controller.abort(post.signal!.reason);
  if (post.signal?.aborted) onCallerAbort();
  else post.signal?.addEventListener('abort', onCallerAbort, { once: true });
  try {
    const response = await request(post.url, {
      method: 'POST',
      dispatcher: post.dispatcher,
      headers: {
        'content-type': 'application/json; charset=utf-8',
        accept: 'application/json',
        // Pages of a wide tile compress ~10:1; deflate is decoded too but not asked for.
        'accept-encoding': 'gzip, br',
        ...post.headers,
      },
      body: JSON.stringify(post.body),
      headersTimeout: post.timeouts.headersMs,
      bodyTimeout: post.timeouts.bodyMs,
      signal: controller.signal,
    });
    const body = await readBody(response.body, response.headers['content-encoding']);
    return {
      status: response.statusCode,
      headers: response.headers,
      undecodable: body.undecodable,
      get text() {
        return body.text();
      },
      ...(body.json === undefined ? {} : { json: body.json }),
    };
  } catch (error) {
    // undici reports an abort as whatever it sees first; name the deadline when it was ours.
    if (controller.signal.reason instanceof RequestDeadlineError && !post.signal?.aborted) throw controller.signal.reason;
    throw error;
  } finally {
    clearTimeout(timer);
    post.signal?.removeEventListener('abort', onCallerAbort);
  }
}

const RETRYABLE_NETWORK_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_CLOSED',
  'TILEHOUSE_REQUEST_DEADLINE',
]);

/** True for failures of the connection itself (reset, timeout, closed socket, deadline), not for aborts. */
export function isTransientNetworkError(error: unknown): error is Error {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && RETRYABLE_NETWORK_CODES.has(code);
}

export const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([429, 500, 502, 503, 504]);

const NOT_PRINTABLE = /[\p{Cc}\p{Cf}\p{Co}\p{Cn}\p{Cs}\uFFFD]+/gu;

/**
 * A short, single-line excerpt of a body for error messages (HTML error pages can be huge).
 * Only printable text: control characters, U+FFFD and unassigned or private-use code points
 * (what binary read as text turns into) become one "·" per run, so a log line never carries raw bytes.
 * Secrets are scrubbed before anything is cut or collapsed (see secret-scrubber.ts's `excerpt`).
 */
export function excerpt(text: string, max = 160): string {
  return scrubbedExcerpt(text, max, { collapse: true, tidy: (flat) => flat.replace(NOT_PRINTABLE, '·') });
}
