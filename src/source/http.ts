import { request, type Dispatcher } from 'undici';

/** Per request: how long the response headers may take, and the longest gap within a body. */
export interface RequestTimeouts {
  headersMs: number;
  bodyMs: number;
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
  text: string;
}

/** POSTs a JSON body and reads the whole answer as text; parsing is the caller's business. */
export async function postJson(post: JsonPost): Promise<HttpAnswer> {
  const response = await request(post.url, {
    method: 'POST',
    dispatcher: post.dispatcher,
    headers: { 'content-type': 'application/json; charset=utf-8', accept: 'application/json', ...post.headers },
    body: JSON.stringify(post.body),
    headersTimeout: post.timeouts.headersMs,
    bodyTimeout: post.timeouts.bodyMs,
    signal: post.signal,
  });
  const text = await response.body.text();
  return { status: response.statusCode, headers: response.headers, text };
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
]);

/** True for failures of the connection itself (reset, timeout, closed socket), not for aborts. */
export function isTransientNetworkError(error: unknown): error is Error {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && RETRYABLE_NETWORK_CODES.has(code);
}

export const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([429, 500, 502, 503, 504]);

export function tryParseJson(text: string): { ok: true; value: unknown } | { ok: false; error: string } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (error) {
    return { ok: false, error: (error as Error).message };
  }
}

/** A short, single-line excerpt of a body for error messages (HTML error pages can be huge). */
export function excerpt(text: string, max = 160): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}
