/**
 * Redaction by value (issue 10). Field-name redaction in the logger cannot catch a secret that
 * arrives inside text: a token issuer whose `error_description` echoes the submitted client
 * secret, an API error message that quotes the bearer token. So every credential the process
 * learns is registered here, and everything tilehouse writes (logs, stdout, stderr) passes
 * through `scrubSecrets`, which replaces each registered value with `[redacted]`.
 *
 * The registry is process-wide: the token client registers each access token without knowing
 * which command runs, and one process runs one CLI invocation.
 */

export const REDACTED = '[redacted]';

/**
 * Values shorter than this are not registered: replacing a 3-letter value everywhere would mangle
 * ordinary output (column names, numbers) and a secret that short protects nothing anyway.
 */
export const MIN_SECRET_LENGTH = 6;

/**
 * Access tokens are registered per tile run, so the `schedule` worker keeps issuing new ones.
 * Only the most recent are kept (a token lives about an hour; an evicted one expired long ago),
 * which bounds memory and the cost of every scrub. Permanent values (the client secret) stay.
 */
const MAX_RECENT_SECRETS = 256;

const permanent = new Set<string>();
const recent = new Set<string>();
let pattern: RegExp | undefined;

/**
 * The forms a value takes on the way out: as is, JSON-escaped (once inside a JSON log line,
 * twice when that line quotes a JSON response body), and URL- or form-encoded (an issuer that
 * echoes its request). For a typical token or secret all of them are the same string.
 */
function encodingsOf(value: string): string[] {
  const json = JSON.stringify(value).slice(1, -1);
  const jsonTwice = JSON.stringify(json).slice(1, -1);
  const url = encodeURIComponent(value);
  const form = new URLSearchParams({ v: value }).toString().slice(2);
  return [...new Set([value, json, jsonTwice, url, form])];
}

/**
 * Remembers a secret value so it never reaches any output. `permanent`: kept for the whole
 * process (credentials from the configuration); otherwise it is one of the recent run-time values
 * (access tokens). Empty, missing and short values are ignored (see MIN_SECRET_LENGTH).
 */
export function registerSecret(value: string | undefined, options: { permanent?: boolean } = {}): void {
  if (value === undefined || value.length < MIN_SECRET_LENGTH) return;
  if (permanent.has(value)) return;
  if (options.permanent === true) {
    recent.delete(value);
    permanent.add(value);
  } else {
    recent.delete(value);
    recent.add(value);
    if (recent.size > MAX_RECENT_SECRETS) recent.delete(recent.values().next().value!);
  }
  pattern = undefined;
}

function escapeRegExp(text: string): string {
  return text.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&');
}

function currentPattern(): RegExp | undefined {
  if (pattern !== undefined || (permanent.size === 0 && recent.size === 0)) return pattern;
  const forms = new Set<string>();
  for (const value of [...permanent, ...recent]) for (const form of encodingsOf(value)) forms.add(form);
  // Longest first: a token that contains the client id is redacted whole, not around the id.
  const alternatives = [...forms].sort((a, b) => b.length - a.length).map(escapeRegExp);
  pattern = new RegExp(alternatives.join('|'), 'g');
  return pattern;
}

/** `text` with every registered secret (in any of its encodings) replaced by `[redacted]`. */
export function scrubSecrets(text: string): string {
  const current = currentPattern();
  if (current === undefined) return text;
  return text.replace(current, REDACTED);
}
