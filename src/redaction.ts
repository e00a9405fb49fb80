import { REDACTED, scrubSecrets } from './secret-scrubber.js';

/**
 * The one redaction step every word that leaves the process passes (issue 61): stdout and stderr
 * (output-stream.ts), the log lines (log.ts), the run summary (`--json`, `--summary-json`), the run
 * history's records and every stored document (history, manifests), the files `k8s`, `init` and
 * `probe --record` write (write-file-atomically.ts), OpenTelemetry span statuses, events,
 * attributes and metric labels, Pushgateway labels, and lineage events on every transport.
 * `test/redaction-channels.test.ts` finds every outward primitive in src/ and fails on a module
 * that is not one of these writers.
 *
 * Two nets, one after the other:
 * - by value (secret-scrubber.ts): every secret this process registered, in every form it knows;
 * - by shape (here): a credential this process never registered, as a server or a proxy echoes it
 *   (`Authorization: Bearer …`, `client_secret=…`, `"password":"…"`, `scheme://user:pass@`). This is
 *   what protects the reader in another process: a record is read back by the next morning's
 *   `status`, which never saw the secret, so stored text is redacted when it is written.
 *
 * Data rows (the tiles' values a sink writes) are not words and never pass here.
 */

/**
 * Token68 (RFC 7235) after an auth scheme: eight characters at least, one of them not a letter,
 * so prose ("Bearer authentication", "Basic realm") is left alone.
 */
const AUTH_SCHEME = /\b(Bearer|Basic)(\s+|\+|%20)(?=[A-Za-z]*[0-9\-._~+/])[A-Za-z0-9\-._~+/]{8,}=*/gi;

/**
 * After an `Authorization` header's name, the scheme's whole value whatever its letters (`Basic
 * dXNlcjpwYXNz`) and however a page escaped it (`&amp;`, `\u0026`): a credential has no space.
 */
const AUTH_HEADER =
  /\b(authorization(?:\\*"|&quot;)?\s*[:=]\s*(?:\\*"|&quot;)?\s*(?:Bearer|Basic)\s+)(?!\[redacted\](?:[\s"'<>]|\\(?!u[0-9a-fA-F]{4})|$))(?:[^\s"'<>\\]|\\u[0-9a-fA-F]{4})+/gi;

/** The names a credential goes by in a form, a query, a header or a JSON key. */
const SECRET_NAMES =
  'client[_-]?secret|password|passwd|pwd|access[_-]?token|refresh[_-]?token|id[_-]?token|api[_-]?key|apikey|x-api-key|private[_-]?key|secret|token';

/**
 * `name=value` in a form body or a query (raw, HTML-escaped `&amp;`, Go-escaped `\u0026`): the
 * value up to the next separator. Not after a letter or `_`, so `page_token=` of a paging
 * cursor stays, while `\u0026client_secret=` (a digit before it) does not.
 */
const FORM_PAIR = new RegExp(`(?<![A-Za-z_])((?:${SECRET_NAMES})(?:=|%3D))[^&\\s"'<>\\\\;,]+`, 'gi');

/** A quote in JSON as it is echoed: plain, escaped once or twice, HTML-escaped, `\u`-escaped. */
const QUOTE = '(?:\\\\*"|&quot;|&#34;|\\\\u0022)';

/** `"name": "value"` in JSON, however it is quoted (QUOTE): the value up to its closing quote. */
const JSON_PAIR = new RegExp(`(${QUOTE}(?:${SECRET_NAMES})${QUOTE}\\s*:\\s*${QUOTE})(?:(?!&quot;|&#34;|\\\\u0022)(?:[^"\\\\]|\\\\[^"\\\\]))+`, 'gi');

/** A header line as a server echoes it: `X-Api-Key: …`, `Authorization: <scheme> …` (the scheme's value is AUTH_SCHEME's). */
const HEADER_LINE =
  /\b((?:x-api-key|api-key|x-auth-token|authorization)\s*:\s*)(?!Bearer\b|Basic\b|\[redacted\])(?=[A-Za-z]*[^A-Za-z\s"'<>,;\\])[^\s"'<>,;\\]{6,}/gi;

/** `scheme://user:password@`: the whole user info (the user may be a key id). */
const USER_INFO = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@:"'<>\\]+:[^\s/@"'<>\\]+@/gi;

/** The names of fields whose value is a secret whatever it looks like (Airflow's "sensitive field names"). */
const SECRET_FIELD = /secret|password|passwd|api[-_]?key|authorization|credential|private[-_]?key|^(?:access|refresh|id)?[-_]?token$/i;

/** `text` with every registered secret and every credential-shaped value replaced by `[redacted]`. */
export function redactText(text: string): string {
  return scrubSecrets(text)
    .replace(AUTH_HEADER, `$1${REDACTED}`)
    .replace(AUTH_SCHEME, `$1$2${REDACTED}`)
    .replace(FORM_PAIR, `$1${REDACTED}`)
    .replace(JSON_PAIR, `$1${REDACTED}`)
    .replace(HEADER_LINE, `$1${REDACTED}`)
    .replace(USER_INFO, `$1${REDACTED}@`);
}

/** Whether a field of this name holds a secret by its name alone. */
export function isSecretFieldName(name: string): boolean {
  return SECRET_FIELD.test(name);
}

/**
 * A JSON value with every string redacted (redactText), every key too, and the string value of
 * a field whose name says secret replaced whole. Numbers, booleans and null are kept; the shape is.
 */
export function redactJson<T>(value: T): T {
  return redactValue(value) as T;
}

function redactValue(value: unknown): unknown {
  if (typeof value === 'string') return redactText(value);
  if (Array.isArray(value)) return value.map(redactValue);
  if (value === null || typeof value !== 'object') return value;
  // A class instance with its own JSON form (a Date) is serialized by it, as JSON.stringify would.
  const json = (value as { toJSON?: () => unknown }).toJSON;
  if (typeof json === 'function') return redactValue(json.call(value));
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    if (item === undefined) continue;
    out[redactText(key)] = typeof item === 'string' && item !== '' && isSecretFieldName(key) ? REDACTED : redactValue(item);
  }
  return out;
}

/** JSON text of a value, redacted: the value deep (redactJson), then the text (a form the value's strings did not show). */
export function redactedJson(value: unknown, space?: number): string {
  return redactText(JSON.stringify(redactJson(value), null, space));
}
