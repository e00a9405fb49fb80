/** A response decided by an endpoint; the server adds faults, latency and the request log. */
export interface HttpAnswer {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

/** The spec's Regular error object: `status` repeats the HTTP status. */
export function regularError(status: number, message: string, headers?: Record<string, string>): HttpAnswer {
  return { status, body: { error: { status, message } }, ...(headers ? { headers } : {}) };
}

/** The spec's Authentication error object (OAuth 2.0, RFC 6749 §5.2). */
export function authenticationError(status: number, error: string, description: string): HttpAnswer {
  return { status, body: { error, error_description: description }, headers: { 'cache-control': 'no-store' } };
}

/** `application/json`, optionally with `charset=utf-8`; any other charset is refused (the body is read as UTF-8). */
export function isJsonContentType(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  const [type, ...parameters] = contentType.split(';').map((part) => part.trim().toLowerCase());
  if (type !== 'application/json') return false;
  return parameters.every((parameter) => !parameter.startsWith('charset=') || /^charset="?utf-8"?$/.test(parameter));
}

/** Parses a UTF-8 JSON body; undefined when it is not JSON. */
export function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}
