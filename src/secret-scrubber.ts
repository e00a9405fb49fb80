/**
 * Redaction by value (issues 10 and 61). Field-name redaction in the logger cannot catch a secret
 * that arrives inside text: a token issuer whose `error_description` echoes the submitted client
 * secret, an API error message that quotes the bearer token, a gateway that echoes the request it
 * received as JSON, HTML or base64. So every credential the process learns is registered here, and
 * everything tilehouse writes (logs, stdout, stderr) passes through `scrubSecrets`, which replaces
 * each registered value, in every form a server or a serializer gives it, with `[redacted]`.
 *
 * The registry is process-wide (the token client registers each access token without knowing
 * which command runs) and nothing registered is ever forgotten: an evicted value is a value that
 * leaks again. A `schedule` worker registers a new access token per tile run for weeks, so the
 * matcher costs the same per character of output whether ten or ten thousand values are known:
 * each form is indexed by one window of WINDOW characters (a rolling hash, a bit set in front of
 * a map), the text is scanned once, and only a window that hits is compared with its forms.
 */

export const REDACTED = '[redacted]';

/**
 * Values shorter than this are not registered: replacing a 3-letter value everywhere would mangle
 * ordinary output (column names, numbers) and a secret that short protects nothing anyway.
 */
export const MIN_SECRET_LENGTH = 6;

/**
 * A base64 stream holding a secret (HTTP Basic's `base64(id:secret)`) gives away only the
 * characters that encode the secret's bits alone; that core is matched when it is at least this
 * long. A shorter core is a handful of letters that ordinary output can hold by chance.
 */
export const MIN_BASE64_CORE = 8;

/** How many characters index a form; also the shortest fragment of a form an excerpt's edge loses. */
const WINDOW = MIN_SECRET_LENGTH;

/** One way a registered value appears in text. `base64`: compared with `-` as `+` and `_` as `/` (both alphabets). */
interface Form {
  readonly text: string;
  readonly base64: boolean;
}

/**
 * A form's entry in the index: the window at `offset` is the one hashed. `edge`: the form's
 * second entry (a window near its end), used only to find a form cut off by the start of a text.
 */
interface Anchor {
  readonly form: Form;
  readonly offset: number;
  readonly edge: boolean;
}

const values = new Set<string>();
const anchors = new Map<number, Anchor[]>();
/** One bit per hash (modulo its size): most windows of a text miss here, before the map is asked. */
const BLOOM_BITS = 1 << 21;
const bloom = new Uint32Array(BLOOM_BITS >>> 5);
let formCount = 0;
let formChars = 0;

const HASH_BASE = 0x01000193;
/** HASH_BASE ** (WINDOW - 1), modulo 2^32: what the character leaving the window weighs. */
const LEAVING_WEIGHT = (() => {
  let weight = 1;
  for (let i = 1; i < WINDOW; i++) weight = Math.imul(weight, HASH_BASE);
  return weight;
})();

/** base64url's two characters as base64's, so one form serves both alphabets. */
function folded(code: number): number {
  return code === 45 ? 43 : code === 95 ? 47 : code;
}

function windowHash(text: string, at: number): number {
  let hash = 0;
  for (let i = at; i < at + WINDOW; i++) hash = (Math.imul(hash, HASH_BASE) + folded(text.charCodeAt(i))) | 0;
  return hash;
}

const bloomHas = (hash: number) => (bloom[(hash & (BLOOM_BITS - 1)) >>> 5]! & (1 << (hash & 31))) !== 0;

// ---------------------------------------------------------------------------------------------
// The forms of a value

const UPPER_HEX = /%[0-9A-F]{2}/g;

/** `value` percent-encoded as UTF-8, every character but ASCII letters, digits and `keep` escaped. */
function percentEncoded(value: string, keep: string, spaceAsPlus: boolean): string {
  let out = '';
  for (const byte of Buffer.from(value, 'utf8')) {
    const char = String.fromCharCode(byte);
    if (/[A-Za-z0-9]/.test(char) || (byte < 0x80 && keep.includes(char))) out += char;
    else if (byte === 0x20 && spaceAsPlus) out += '+';
    else out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/**
 * Which characters URL encoders leave alone: encodeURIComponent; RFC 3986's unreserved set (Go's
 * url.QueryEscape, Python's quote_plus); the WHATWG form encoding (URLSearchParams, Java's
 * URLEncoder); Python's quote, which keeps `/`.
 */
const URL_KEEPS = ["-_.!~*'()", '-_.~', '-_.*', '-_.~/'];

function urlForms(value: string): string[] {
  const forms: string[] = [];
  for (const keep of URL_KEEPS) for (const plus of [false, true]) forms.push(percentEncoded(value, keep, plus));
  // The userinfo of a URL (`https://user:<secret>@host`), as WHATWG URL writes it.
  const url = new URL('http://h');
  url.password = value;
  forms.push(url.password);
  return forms.flatMap((form) => [form, form.replace(UPPER_HEX, (escape) => escape.toLowerCase())]);
}

/** Inside a JSON string, once and twice; `\/` as PHP writes a slash. Other escapes are undone before matching (`unescapedView`). */
function jsonForms(value: string): string[] {
  const once = JSON.stringify(value).slice(1, -1);
  const slashed = once.replaceAll('/', '\\/');
  // A JSON body quoted in a JSON log line (or an error message that quotes one): escaped twice.
  return [once, slashed, JSON.stringify(once).slice(1, -1), JSON.stringify(slashed).slice(1, -1)];
}

function htmlForms(value: string): string[] {
  const base = value.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
  const forms: string[] = [];
  for (const quote of ['"', '&quot;', '&#34;', '&#x22;'])
    for (const apostrophe of ["'", '&#39;', '&#x27;', '&apos;']) forms.push(base.replaceAll('"', quote).replaceAll("'", apostrophe));
  return forms;
}

/**
 * The value's bytes inside a base64 stream, for each of the three byte alignments it can start
 * at: the characters whose six bits all come from the value (the stable core). At alignment 0
 * that is the value's own base64 without its last partial character and padding; a match is
 * widened by one character on each side and any padding (see `widenedBase64`).
 */
function base64Cores(value: string): string[] {
  const bytes = Buffer.from(value, 'utf8');
  const cores: string[] = [];
  for (let align = 0; align < 3; align++) {
    const encoded = Buffer.concat([Buffer.alloc(align), bytes]).toString('base64');
    const core = encoded.slice(Math.ceil((8 * align) / 6), Math.floor((8 * (align + bytes.length)) / 6));
    if (core.length >= MIN_BASE64_CORE) cores.push(core);
  }
  return cores;
}

/** Characters that every URL, JSON and HTML encoder leaves as they are: a typical token is its only literal form. */
const PLAIN = /^[A-Za-z0-9._-]*$/;

/** Every form of `value` this module matches literally (`\u` escapes are undone before matching: `unescapedView`). */
function formsOf(value: string): Form[] {
  const literal = PLAIN.test(value)
    ? new Set([value])
    : new Set([value, value.replace(/\s+/g, ' '), ...urlForms(value), ...jsonForms(value), ...htmlForms(value)]);
  const forms: Form[] = [...literal].map((text) => ({ text, base64: false }));
  for (const core of base64Cores(value)) forms.push({ text: core, base64: true });
  return forms;
}

// ---------------------------------------------------------------------------------------------
// Registration

function bucketSize(hash: number): number {
  return anchors.get(hash)?.length ?? 0;
}

function addAnchor(hash: number, anchor: Anchor): void {
  const bucket = anchors.get(hash);
  if (bucket === undefined) anchors.set(hash, [anchor]);
  else bucket.push(anchor);
  bloom[(hash & (BLOOM_BITS - 1)) >>> 5]! |= 1 << (hash & 31);
}

/**
 * The offset of the window that indexes a form: the first one (from the start, or from the end)
 * that no other form uses yet, else the least used. Tokens of one issuer share a long prefix (a
 * JWT's header): their forms are told apart where they differ, so a window never holds thousands.
 */
function anchorOffset(form: string, fromEnd: boolean): number {
  const last = form.length - WINDOW;
  let best = fromEnd ? last : 0;
  let bestSize = Number.POSITIVE_INFINITY;
  for (let step = 0; step <= last; step++) {
    const offset = fromEnd ? last - step : step;
    const size = bucketSize(windowHash(form, offset));
    if (size < bestSize) {
      best = offset;
      bestSize = size;
      if (size === 0) break;
    }
  }
  return best;
}

function index(form: Form): void {
  const start = anchorOffset(form.text, false);
  addAnchor(windowHash(form.text, start), { form, offset: start, edge: false });
  const end = anchorOffset(form.text, true);
  if (end !== start) addAnchor(windowHash(form.text, end), { form, offset: end, edge: true });
  formCount += 1;
  formChars += form.text.length;
}

/**
 * Remembers a secret value so it never reaches any output, in any of its forms, for the rest of
 * the process. Empty, missing and short values are ignored (see MIN_SECRET_LENGTH). `permanent`
 * is kept for the callers that say it: since issue 61 every value is kept for the process's life.
 */
export function registerSecret(value: string | undefined, _options: { permanent?: boolean } = {}): void {
  if (value === undefined || value.length < MIN_SECRET_LENGTH || values.has(value)) return;
  values.add(value);
  for (const form of formsOf(value)) index(form);
}

const AUTH_SCHEME = /^\s*(bearer|basic|token|apikey|api-key)\s+(\S.*?)\s*$/i;

/**
 * A header value that carries a credential (`Bearer <token>`, `Basic <base64>`, or a bare API
 * key): registered whole, and the credential itself, since an echo quotes the token without its
 * scheme. Basic's `user:password` is registered decoded too (as is its password alone).
 */
export function registerCredentialHeader(value: string | undefined): void {
  if (value === undefined) return;
  registerSecret(value.trim());
  const scheme = AUTH_SCHEME.exec(value);
  if (scheme === null) return;
  const credential = scheme[2]!;
  registerSecret(credential);
  if (scheme[1]!.toLowerCase() === 'basic' && /^[A-Za-z0-9+/]+=*$/.test(credential)) {
    const decoded = Buffer.from(credential, 'base64').toString('utf8');
    registerSecret(decoded);
    const colon = decoded.indexOf(':');
    if (colon >= 0) registerSecret(decoded.slice(colon + 1));
  }
}

/** What the registry holds, for the benchmark: values, forms and the characters of those forms. */
export function registrySize(): { values: number; forms: number; formChars: number } {
  return { values: values.size, forms: formCount, formChars };
}

// ---------------------------------------------------------------------------------------------
// Matching

/** [start, end) spans of `text` holding a form; `edges`: also a form cut off by either end of the text. */
function spansIn(text: string, edges: boolean): number[][] {
  const spans: number[][] = [];
  const length = text.length;
  if (anchors.size === 0 || length < WINDOW) return spans;
  let hash = windowHash(text, 0);
  for (let at = 0; ; at++) {
    if (bloomHas(hash)) {
      const bucket = anchors.get(hash);
      if (bucket !== undefined) for (const anchor of bucket) matchAt(text, at, anchor, edges, spans);
    }
    if (at + WINDOW >= length) break;
    hash = (Math.imul(hash - Math.imul(folded(text.charCodeAt(at)), LEAVING_WEIGHT), HASH_BASE) + folded(text.charCodeAt(at + WINDOW))) | 0;
  }
  return spans;
}

function sameFrom(text: string, at: number, form: Form, from: number, to: number): boolean {
  if (!form.base64) {
    for (let i = from; i < to; i++) if (text.charCodeAt(at + i) !== form.text.charCodeAt(i)) return false;
    return true;
  }
  for (let i = from; i < to; i++) if (folded(text.charCodeAt(at + i)) !== folded(form.text.charCodeAt(i))) return false;
  return true;
}

function matchAt(text: string, windowAt: number, anchor: Anchor, edges: boolean, spans: number[][]): void {
  const { form } = anchor;
  const start = windowAt - anchor.offset;
  const end = start + form.text.length;
  const cutBefore = start < 0;
  const cutAfter = end > text.length;
  if ((cutBefore || cutAfter) && !edges) return;
  if (anchor.edge && !cutBefore) return; // the form's first anchor finds it whole, or cut at the end
  if (cutBefore && cutAfter) return; // the text lies inside one form: ends are guarded, not middles
  const from = cutBefore ? -start : 0;
  const to = cutAfter ? text.length - start : form.text.length;
  // The last character first: tokens of one issuer share a long start (a JWT's header), and a
  // window there hits another token's form, which would otherwise be compared up to where they part.
  if (!sameFrom(text, start, form, to - 1, to) || !sameFrom(text, start, form, from, to)) return;
  const span = [Math.max(0, start), Math.min(text.length, end)];
  spans.push(form.base64 ? widenedBase64(text, span[0]!, span[1]!) : span);
}

const BASE64_CHAR = /[A-Za-z0-9+/_-]/;

/** A base64 core with the characters that share bits with the secret (one each side) and any padding. */
function widenedBase64(text: string, start: number, end: number): number[] {
  let from = start;
  let to = end;
  if (from > 0 && BASE64_CHAR.test(text[from - 1]!)) from -= 1;
  if (to < text.length && BASE64_CHAR.test(text[to]!)) to += 1;
  while (to < text.length && text[to] === '=') to += 1;
  return [from, to];
}

const JSON_ESCAPE = /\\(?:u[0-9A-Fa-f]{4}|["\\/bfnrt])/g;
const SHORT_ESCAPES: Readonly<Record<string, string>> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };

/** How many levels of JSON string escaping are undone: a log line quoting an error that quotes a JSON body. */
const MAX_UNESCAPES = 3;

/**
 * `text` with one level of JSON string escapes undone, and where each character of that view
 * came from (one more entry: the text's end). Whatever serializer escaped what (Go's `\u003c`
 * and `\u0026`, Python's ASCII-only `\u00e9`, a value escaped whole in either hex case, `\/`),
 * the view holds what was escaped; undone again, what was escaped twice.
 */
function unescapedView(text: string): { view: string; origins: number[] } {
  const origins: number[] = [];
  let view = '';
  let copied = 0;
  for (const escape of text.matchAll(JSON_ESCAPE)) {
    for (let i = copied; i < escape.index; i++) origins.push(i);
    const code = escape[0].slice(1);
    view += text.slice(copied, escape.index) + (code.length === 1 ? SHORT_ESCAPES[code]! : String.fromCharCode(Number.parseInt(code.slice(1), 16)));
    origins.push(escape.index);
    copied = escape.index + escape[0].length;
  }
  for (let i = copied; i < text.length; i++) origins.push(i);
  origins.push(text.length);
  return { view: view + text.slice(copied), origins };
}

/** The spans of `text` holding a form, as written or behind up to MAX_UNESCAPES levels of JSON escaping. */
function allSpans(text: string, edges: boolean, depth = 0): number[][] {
  const spans = spansIn(text, edges);
  if (depth < MAX_UNESCAPES && text.includes('\\')) {
    const { view, origins } = unescapedView(text);
    for (const [start, end] of allSpans(view, false, depth + 1)) spans.push([origins[start!]!, origins[end!]!]);
  }
  return spans;
}

function redacted(text: string, spans: number[][]): string {
  if (spans.length === 0) return text;
  spans.sort((a, b) => a[0]! - b[0]!);
  let out = '';
  let copied = 0;
  for (let i = 0; i < spans.length; ) {
    const start = spans[i]![0]!;
    let end = spans[i]![1]!;
    // Overlapping forms (a token that contains the client id) are redacted as one.
    for (i++; i < spans.length && spans[i]![0]! < end; i++) end = Math.max(end, spans[i]![1]!);
    out += text.slice(copied, start) + REDACTED;
    copied = end;
  }
  return out + text.slice(copied);
}

/** `text` with every registered secret (in any of its forms) replaced by `[redacted]`. */
export function scrubSecrets(text: string): string {
  if (anchors.size === 0) return text;
  return redacted(text, allSpans(text, false));
}

// ---------------------------------------------------------------------------------------------
// Excerpts

export interface ExcerptOptions {
  /** Runs of whitespace become one space, and the ends are trimmed (a one-line excerpt). */
  collapse?: boolean;
  /** Applied to the scrubbed (and collapsed) text before it is cut: what else a caller cleans up. */
  tidy?: (text: string) => string;
}

/**
 * The start of a server's or an error's text for a message, at most `maxChars` characters and
 * `…`, scrubbed BEFORE it is cut or collapsed: a secret cut in half, or spread over lines that are
 * then joined, is no longer its registered form. A text that arrives already cut (a body read up
 * to a byte limit) can end with a secret's first characters, or start with its last: such a
 * fragment of WINDOW or more characters is redacted too. A cut never splits `[redacted]`.
 */
export function excerpt(text: string, maxChars: number, options: ExcerptOptions = {}): string {
  // A huge HTML error page is scrubbed only as far as an excerpt can reach; the fragment guard
  // covers a form that the bound itself cuts.
  const reach = maxChars * 4 + 4096;
  const head = text.length > reach ? text.slice(0, reach) : text;
  let shown = anchors.size === 0 ? head : redacted(head, allSpans(head, true));
  if (options.collapse === true) shown = shown.replace(/\s+/g, ' ').trim();
  if (options.tidy !== undefined) shown = options.tidy(shown);
  if (shown.length <= maxChars && head === text) return shown;
  if (shown.length <= maxChars) return `${shown}…`;
  let cut = maxChars;
  const marker = shown.lastIndexOf(REDACTED, cut);
  if (marker >= 0 && marker < cut && marker + REDACTED.length > cut) cut = marker;
  return `${shown.slice(0, cut)}…`;
}

/** `excerpt` as one line: whitespace collapsed (after scrubbing), ends trimmed. */
export function collapsedExcerpt(text: string, maxChars: number): string {
  return excerpt(text, maxChars, { collapse: true });
}
