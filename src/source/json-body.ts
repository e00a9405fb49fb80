/**
 * JSON response bodies, read without losing number literals a double cannot hold.
 *
 * `JSON.parse` turns every number into a double: `12345678901234567.5` arrives as
 * 12345678901234568 and nothing downstream can tell. Node 24's reviver does get the literal's text
 * (`context.source`), but it is called for every value: parsing with one measured 29–60× slower
 * than `JSON.parse` (13–17× in a rougher re-check on synthetic 1000 × 11 pages, Node 24.21), against
 * 1.35–3.1× for the hand-written exact-number path below, which therefore stays. Here a literal that
 * a double would change becomes an {@link ExactNumber} holding its text; every other number stays a
 * plain JavaScript number, so ordinary code (zod schemas, navigation counts) sees exactly what
 * `JSON.parse` would give.
 *
 * Most pages have no such literal, so `parseJsonBody` scans for anything that could be one
 * (`mayHoldInexactNumber`) and otherwise keeps `JSON.parse`'s reading; only when the scan finds one
 * does a small lossless reader of our own parse the page. Export pages are scanned only when a
 * column whose typed value keeps a number's text holds a number (see parseJsonBody). Measured on 1000-row × 11-column pages
 * (160–450 KiB; Node 20 on a shared 2-core box, interleaved runs): the fast path costs 1.35–1.65×
 * JSON.parse (the scan 0.45–0.65×), ~2.1× on a page full of 17-digit doubles (each is checked);
 * the lossless reader 1.5–3.1×. lossless-json 4.3 with the same number hook took 3.3–3.6× where
 * ours took 2.2–2.9× in the same runs, and would be a new dependency; ours is ~150 lines,
 * property-tested against JSON.parse (values and rejections).
 */

import { randomUUID } from 'node:crypto';
import { ExactNumber } from '../value-types/exact-number.js';

export type JsonBodyParse = { ok: true; value: unknown } | { ok: false; error: string };

/**
 * Parses a response body. Numbers a double represents as written are numbers; others are
 * ExactNumbers (see {@link isInexactLiteral}). A leading UTF-8 byte-order mark is ignored.
 *
 * `literalsMatter`, when given, says of the body as `JSON.parse` reads it whether any number in it
 * is one whose exact text could matter. When it says no, that reading is the result, without the
 * scan for inexact literals (about as costly as `JSON.parse` itself): an export page whose
 * numbers all sit in FLOAT64 and TIMESTAMP columns gets nothing from it, since those columns take
 * the nearest double anyway (see readExactPageWhen in export-endpoint/export-response.ts).
 */
export function parseJsonBody(text: string, literalsMatter?: (value: unknown) => boolean): JsonBodyParse {
  const body = text.charCodeAt(0) === BOM ? text.slice(1) : text;
  try {
    if (literalsMatter === undefined) return { ok: true, value: mayHoldInexactNumber(body) ? readLosslessJson(body) : JSON.parse(body) };
    const value: unknown = JSON.parse(body);
    return { ok: true, value: literalsMatter(value) && mayHoldInexactNumber(body) ? readLosslessJson(body) : value };
  } catch (error) {
    return { ok: false, error: (error as Error).message };
  }
}

const BOM = 0xfeff;

export interface JsonBytesOptions {
  /** As for {@link parseJsonBody}; with `slicedArray`, asked of the body with that array holding one slice's elements at a time. */
  literalsMatter?: (value: unknown) => boolean;
  /**
   * The member names from the top-level object to an array that a large body holds most of
   * (an export page's `['result', 'rows']`): that array is parsed in slices of ~SLICE_BYTES.
   */
  slicedArray?: readonly string[];
}

/** Bytes of one slice of the sliced array: a string of this size stays far below V8's large-object threshold (128 KiB, two bytes a character when any is outside Latin-1). */
export const SLICE_BYTES = 32 * 1024;

/**
 * Parses a body from its bytes, which must be valid UTF-8 (response-body.ts checks that before); a leading
 * byte-order mark is ignored. The result is the one {@link parseJsonBody} gives for the decoded
 * text, value for value.
 *
 * Why bytes: a page decoded whole is one string of ~350 KB, above V8's regular object size, so it
 * lives in the large-object space; one caught in a scavenge mid-parse is promoted whole and freed
 * only by the next full collection (issue 29: 18-21 MB of a 1M-row run's peak heap were such
 * texts). With `slicedArray` the array's elements are decoded and parsed ~32 KB at a time, each
 * slice a short-lived young string, and the rest of the body (navigation, headers, the echoed
 * query) once, with the array left out. Anything the slicing cannot vouch for reads the body
 * whole, as before (see parseSliced).
 */
export function parseJsonBytes(bytes: Buffer, options: JsonBytesOptions = {}): JsonBodyParse {
  const body = bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? bytes.subarray(3) : bytes;
  const path = options.slicedArray;
  if (path !== undefined && path.length > 0 && body.length >= 2 * SLICE_BYTES) {
    const value = parseSliced(body, path, options.literalsMatter);
    if (value !== undefined) return { ok: true, value };
  }
  return parseJsonBody(body.toString('utf8'), options.literalsMatter);
}

// Stands in for the sliced array in the rest of the body: a string no page can hold by chance.
const MARKER = `tilehouse-sliced-array-${randomUUID()}`;
const MARKER_TOKEN = `"${MARKER}"`;
const COMMA_BYTE = 0x2c;
const QUOTE_BYTE = 0x22;
const BACKSLASH_BYTE = 0x5c;

interface Slice {
  /** The `[` that opens the array or the `,` before the slice's first element. */
  start: number;
  /** The `,` after its last element, or the array's closing `]`. */
  end: number;
  elements: unknown[];
}

/**
 * The sliced reading, or undefined when it cannot vouch for giving what the whole text gives.
 *
 * The array is found by its member name (`"rows"`, then `:` and `[`), and cut at commas that sit
 * between `]`/`}` and `[`/`{` roughly every SLICE_BYTES. Such a comma may be inside a string or a
 * nested value, which is why each slice is checked by parsing it: `[` + elements + `]` is valid JSON
 * only if the cut is a real boundary between elements (a cut inside a string leaves the string
 * open; one inside a nested value leaves a bracket open). A slice that fails is cut again by an
 * exact scan (strings and nesting tracked byte by byte), which also finds the array's end.
 *
 * The rest of the body is parsed with a random marker string in place of the array; the marker
 * must come back as the value at `path`, so the array is the one JSON.parse would have put there
 * (a duplicate "rows" or "result" later in the body, which JSON.parse would take instead, puts
 * something else there), and the marker replaced a whole value outside any string (a string
 * opened before it would end at its first quote and leave letters outside: not JSON).
 */
function parseSliced(bytes: Buffer, path: readonly string[], literalsMatter: ((value: unknown) => boolean) | undefined): unknown {
  const open = arrayOpening(bytes, path[path.length - 1]!);
  if (open < 0) return undefined;
  const slices: Slice[] = [];
  let start = open;
  for (;;) {
    const cut = elementBoundary(bytes, start + SLICE_BYTES);
    const guessed = cut < 0 ? undefined : parseSlice(bytes, start, cut);
    if (guessed !== undefined) {
      slices.push({ start, end: cut, elements: guessed });
      start = cut;
      continue;
    }
    const exact = scanElements(bytes, start);
    if (exact === undefined) return undefined;
    const elements = parseSlice(bytes, start, exact.end);
    if (elements === undefined) return undefined;
    slices.push({ start, end: exact.end, elements });
    if (exact.closed) break;
    start = exact.end;
  }
  const close = slices[slices.length - 1]!.end;
  const restText = bytes.toString('utf8', 0, open) + MARKER_TOKEN + bytes.toString('utf8', close + 1);
  let rest: unknown;
  try {
    rest = JSON.parse(restText);
  } catch {
    return undefined;
  }
  let holder = holderAt(rest, path);
  if (holder === undefined || restText.indexOf(MARKER_TOKEN) !== restText.lastIndexOf(MARKER_TOKEN)) return undefined;
  const name = path[path.length - 1]!;

  // literalsMatter asked of the body with each slice in place of the array: the whole body is read
  // exactly if any slice says so, as parseJsonBody reads it exactly if the whole says so.
  let exact = literalsMatter === undefined;
  for (let index = 0; !exact && index < slices.length; index++) {
    holder[name] = slices[index]!.elements;
    exact = literalsMatter!(rest);
  }
  if (exact) {
    if (mayHoldInexactNumber(restText)) {
      rest = readLosslessJson(restText);
      holder = holderAt(rest, path)!;
    }
    for (const slice of slices) {
      const text = sliceText(bytes, slice.start, slice.end);
      if (mayHoldInexactNumber(text)) slice.elements = readLosslessJson(text) as unknown[];
    }
  }
  holder[name] = slices.length === 1 ? slices[0]!.elements : ([] as unknown[]).concat(...slices.map((slice) => slice.elements));
  return rest;
}

/** The object at `path` minus its last name, when the value at `path` is the marker. */
function holderAt(value: unknown, path: readonly string[]): Record<string, unknown> | undefined {
  let holder = value;
  for (let index = 0; index < path.length - 1; index++) {
    if (!isPlainRecord(holder) || !Object.hasOwn(holder, path[index]!)) return undefined;
    holder = holder[path[index]!];
  }
  return isPlainRecord(holder) && Object.hasOwn(holder, path[path.length - 1]!) && holder[path[path.length - 1]!] === MARKER ? holder : undefined;
}

function isPlainRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** The `[` of the first `"name"` followed by `:` and `[` (whitespace allowed); -1 if none. */
function arrayOpening(bytes: Buffer, name: string): number {
  const key = Buffer.from(JSON.stringify(name));
  for (let at = bytes.indexOf(key); at >= 0; at = bytes.indexOf(key, at + 1)) {
    let index = skipSpaceBytes(bytes, at + key.length);
    if (bytes[index] !== 0x3a) continue;
    index = skipSpaceBytes(bytes, index + 1);
    if (bytes[index] === 0x5b) return index;
  }
  return -1;
}

function skipSpaceBytes(bytes: Buffer, from: number): number {
  let index = from;
  for (;;) {
    const code = bytes[index];
    if (code !== 32 && code !== 10 && code !== 13 && code !== 9) return index;
    index++;
  }
}

/** The first comma at or after `from` between `]`/`}` and `[`/`{` (whitespace allowed): maybe a boundary between elements; -1 if none. */
function elementBoundary(bytes: Buffer, from: number): number {
  for (let at = bytes.indexOf(COMMA_BYTE, from); at >= 0; at = bytes.indexOf(COMMA_BYTE, at + 1)) {
    let before = at - 1;
    while (isSpaceByte(bytes[before])) before--;
    const previous = bytes[before];
    if (previous !== 0x5d && previous !== 0x7d) continue;
    const next = bytes[skipSpaceBytes(bytes, at + 1)];
    if (next === 0x5b || next === 0x7b) return at;
  }
  return -1;
}

function isSpaceByte(code: number | undefined): boolean {
  return code === 32 || code === 10 || code === 13 || code === 9;
}

/**
 * From a slice's start (the array's `[` or a comma between its elements), the first comma between
 * elements at least SLICE_BYTES on, or the array's closing `]` if that comes first; strings and
 * nesting tracked exactly. Undefined when the body ends first.
 */
function scanElements(bytes: Buffer, from: number): { end: number; closed: boolean } | undefined {
  let depth = 0;
  const length = bytes.length;
  for (let index = from + 1; index < length; index++) {
    const code = bytes[index]!;
    if (code === QUOTE_BYTE) {
      // To the closing quote: one not preceded by an odd number of backslashes.
      for (;;) {
        index = bytes.indexOf(QUOTE_BYTE, index + 1);
        if (index < 0) return undefined;
        let backslashes = 0;
        while (bytes[index - 1 - backslashes] === BACKSLASH_BYTE) backslashes++;
        if (backslashes % 2 === 0) break;
      }
    } else if (code === 0x5b || code === 0x7b) depth++;
    else if (code === 0x5d || code === 0x7d) {
      if (depth === 0) return { end: index, closed: true };
      depth--;
    } else if (code === COMMA_BYTE && depth === 0 && index >= from + SLICE_BYTES) return { end: index, closed: false };
  }
  return undefined;
}

/** The slice [start, end] as text, with its first and last byte read as `[` and `]`. */
function sliceText(bytes: Buffer, start: number, end: number): string {
  // The bytes are ours to read (response-body.ts hands over the body it received); the two delimiters are
  // put back at once. Cheaper than '[' + text + ']', a rope that JSON.parse would copy flat.
  const first = bytes[start]!;
  const last = bytes[end]!;
  bytes[start] = 0x5b;
  bytes[end] = 0x5d;
  const text = bytes.toString('utf8', start, end + 1);
  bytes[start] = first;
  bytes[end] = last;
  return text;
}

/** The elements of the slice [start, end] as JSON.parse reads them, or undefined if it is not JSON. */
function parseSlice(bytes: Buffer, start: number, end: number): unknown[] | undefined {
  try {
    return JSON.parse(sliceText(bytes, start, end)) as unknown[];
  } catch {
    return undefined;
  }
}

/**
 * Whether the text may contain a number literal that {@link isInexactLiteral} flags; false means
 * JSON.parse loses nothing. Such a literal has 16 or more mantissa characters (needed for more
 * than 15 significant digits, for an integer beyond 2^53, and for an underflow written without
 * exponent) or an exponent of 3+ digits (needed to leave the range where a literal of at most 15
 * digits is a normal double that reads back as written). Each such stretch of the text is read as
 * a literal and checked, so pages of 17-digit doubles (JavaScript's shortest text of 0.1 + 0.2)
 * keep the fast path. Strings may hold such stretches too (long digit ids); that only costs the
 * slower reader, never a value.
 *
 * The lookbehind matters: without it the expression is tried from every digit of every run
 * (/[\d.]{16}/ alone took 2.5× as long as JSON.parse of the page); with it, from run starts
 * only, it is as fast as a hand-written loop over the characters, and faster on text-heavy pages.
 */
export function mayHoldInexactNumber(text: string): boolean {
  CANDIDATE.lastIndex = 0;
  for (let match = CANDIDATE.exec(text); match !== null; match = CANDIDATE.exec(text)) {
    let start = match.index;
    // An exponent match starts at the mantissa's last digit.
    while (start > 0 && isDigitOrDot(text.charCodeAt(start - 1))) start--;
    let index = match.index;
    while (isDigitOrDot(text.charCodeAt(index))) index++;
    const end = literalEnd(text, index);
    if (isInexactCandidate(text, start, end)) return true;
    CANDIDATE.lastIndex = Math.max(end, match.index + 1);
  }
  return false;
}

// 16 digits and dots from the start of a stretch of them, or a digit followed by an exponent of
// 3+ digits. (A lookbehind on the second alternative too, or a [\d.]+ before its "e", made the
// scan half again as slow.)
const CANDIDATE = /(?<![\d.])[\d.]{16}|\d[eE][+-]?\d{3}/g;

function isDigitOrDot(code: number): boolean {
  return (code >= 48 && code <= 57) || code === DOT;
}

/** Digits of the exponent whose "e" is at `index` (after an optional sign). */
function exponentDigits(text: string, index: number): number {
  let at = index + 1;
  const sign = text.charCodeAt(at);
  if (sign === 43 || sign === 45) at++;
  const start = at;
  while (isDigit(text.charCodeAt(at))) at++;
  return at - start;
}

/** End of the literal whose mantissa ends at `index` (just past its exponent, if any). */
function literalEnd(text: string, index: number): number {
  const code = text.charCodeAt(index);
  if (code !== E_LOWER && code !== E_UPPER) return index;
  const digits = exponentDigits(text, index);
  if (digits === 0) return index;
  const sign = text.charCodeAt(index + 1);
  return index + 1 + (sign === 43 || sign === 45 ? 1 : 0) + digits;
}

/**
 * The stretch [start, end) with a preceding "-", read as a literal: inexact, or not a literal at
 * all. Stretches that cannot be a number token (not bounded by what can surround a JSON value,
 * e.g. inside "3f9e1234-…") are skipped: they are in strings, which the reader never changes.
 */
function isInexactCandidate(text: string, start: number, end: number): boolean {
  const from = start > 0 && text.charCodeAt(start - 1) === 45 ? start - 1 : start;
  if ((from > 0 && !BEFORE_VALUE.has(text.charCodeAt(from - 1))) || (end < text.length && !AFTER_VALUE.has(text.charCodeAt(end)))) {
    return false;
  }
  const literal = text.slice(from, end);
  const value = Number(literal);
  // JavaScript's own text of a double (typically 17 digits, e.g. 0.30000000000000004) is a valid
  // literal that reads back as written; only a plain integer beyond 2^53 is still inexact then.
  if (String(value) === literal) return !Number.isSafeInteger(value) && literal.indexOf('.') < 0 && literal.indexOf('e') < 0;
  return !WHOLE_NUMBER_LITERAL.test(literal) || isInexactLiteral(literal, value);
}

// JSON whitespace and the punctuation that can precede or follow a value.
const BEFORE_VALUE: ReadonlySet<number> = new Set([32, 9, 10, 13, 91, 44, 58]); // [ , :
const AFTER_VALUE: ReadonlySet<number> = new Set([32, 9, 10, 13, 93, 44, 125]); // ] , }
const WHOLE_NUMBER_LITERAL = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

function isDigit(code: number): boolean {
  return code >= 48 && code <= 57;
}

const SAFE_LITERAL_LENGTH = 15;

/**
 * Whether a JSON number literal would be changed by reading it as a double:
 * - a plain integer (no fraction, no exponent) beyond ±(2^53 − 1): its neighbours share the
 *   double, so the value is no longer known to be whole and exact;
 * - any other literal whose value differs from the double's shortest text (more than ~15
 *   significant digits, underflow to 0 or a subnormal, overflow to Infinity).
 * "1.50", "1e3" and "0.30000000000000004" are not flagged: the double denotes the same number.
 */
export function isInexactLiteral(literal: string, value = Number(literal)): boolean {
  let plain = true;
  let exponent = false;
  for (let index = 0; index < literal.length; index++) {
    const code = literal.charCodeAt(index);
    if (code === DOT) plain = false;
    else if (code === E_LOWER || code === E_UPPER) {
      plain = false;
      exponent = true;
      break;
    }
  }
  // Number.isSafeInteger(-0) is true: "-0" stays the number -0, as JSON.parse gives it.
  if (plain) return !Number.isSafeInteger(value);
  // At most 14 digits and no exponent: a normal double whose shortest text is the literal's value.
  if (!exponent && literal.length <= SAFE_LITERAL_LENGTH) return false;
  if (!Number.isFinite(value)) return true;
  const shortest = String(value);
  // The common case: JavaScript wrote the literal, as the shortest text of a double.
  if (shortest === literal) return false;
  return decimalKey(literal) !== decimalKey(shortest);
}

const DOT = 46;
const E_LOWER = 101;
const E_UPPER = 69;
const DECIMAL_PARTS = /^(-?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/;

/** "<sign><coefficient>e<exponent>" without leading or trailing zeros in the coefficient; "0" for zero. */
function decimalKey(text: string): string {
  const match = DECIMAL_PARTS.exec(text);
  if (match === null) return text;
  const fraction = match[3] ?? '';
  const digits = ((match[2] ?? '') + fraction).replace(/^0+/, '');
  const coefficient = digits.replace(/0+$/, '');
  if (coefficient.length === 0) return '0';
  // A literal's exponent beyond 2^53 is imprecise as a number, but such a literal is 0 or
  // Infinity as a double, whose key it cannot match anyway.
  const exponent = Number(match[4] ?? '0') - fraction.length + (digits.length - coefficient.length);
  return `${match[1]}${coefficient}e${exponent}`;
}

/**
 * The lossless reader (parseJsonBody's slow path; exported for tests): JSON as RFC 8259 and
 * `JSON.parse` define it (same values, same duplicate-key and `__proto__` handling, same
 * rejections), except that inexact number literals become ExactNumbers. Strings with escapes are
 * decoded by `JSON.parse` itself. Throws a SyntaxError on malformed text. Recursive: nesting deeper
 * than the stack allows fails (a RangeError), where JSON.parse would cope; no API page nests so.
 */
export function readLosslessJson(text: string): unknown {
  const reader = new LosslessReader(text);
  const value = reader.value();
  reader.end();
  return value;
}

const QUOTE = 34;
const BACKSLASH = 92;
const COMMA = 44;
const COLON = 58;
const OPEN_BRACKET = 91;
const CLOSE_BRACKET = 93;
const OPEN_BRACE = 123;
const CLOSE_BRACE = 125;
const NUMBER_LITERAL = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

class LosslessReader {
  private index = 0;

  constructor(private readonly text: string) {}

  value(): unknown {
    this.skipSpace();
    const code = this.text.charCodeAt(this.index);
    switch (code) {
      case OPEN_BRACE:
        return this.object();
      case OPEN_BRACKET:
        return this.array();
      case QUOTE:
        return this.string();
      case 116: // t
        return this.keyword('true', true);
      case 102: // f
        return this.keyword('false', false);
      case 110: // n
        return this.keyword('null', null);
      default:
        if (code === 45 || (code >= 48 && code <= 57)) return this.number();
        return this.fail();
    }
  }

  end(): void {
    this.skipSpace();
    if (this.index < this.text.length) this.fail();
  }

  private object(): Record<string, unknown> {
    const result: Record<string, unknown> = {};
    this.index++;
    this.skipSpace();
    if (this.text.charCodeAt(this.index) === CLOSE_BRACE) {
      this.index++;
      return result;
    }
    for (;;) {
      this.skipSpace();
      if (this.text.charCodeAt(this.index) !== QUOTE) this.fail();
      const key = this.string();
      this.skipSpace();
      if (this.text.charCodeAt(this.index) !== COLON) this.fail();
      this.index++;
      const member = this.value();
      // JSON.parse creates an own "__proto__" property; plain assignment would set the prototype.
      if (key === '__proto__') Object.defineProperty(result, key, { value: member, writable: true, enumerable: true, configurable: true });
      else result[key] = member;
      this.skipSpace();
      const next = this.text.charCodeAt(this.index++);
      if (next === CLOSE_BRACE) return result;
      if (next !== COMMA) this.fail(this.index - 1);
    }
  }

  private array(): unknown[] {
    const result: unknown[] = [];
    this.index++;
    this.skipSpace();
    if (this.text.charCodeAt(this.index) === CLOSE_BRACKET) {
      this.index++;
      return result;
    }
    for (;;) {
      result.push(this.value());
      this.skipSpace();
      const next = this.text.charCodeAt(this.index++);
      if (next === CLOSE_BRACKET) return result;
      if (next !== COMMA) this.fail(this.index - 1);
    }
  }

  private string(): string {
    const start = this.index;
    const text = this.text;
    let index = start + 1;
    let escaped = false;
    for (;;) {
      const code = text.charCodeAt(index);
      if (code === QUOTE) break;
      if (code === BACKSLASH) {
        escaped = true;
        index += 2;
        continue;
      }
      // Raw control characters are not allowed in JSON strings (NaN: the text ended).
      if (!(code >= 0x20)) this.fail(index);
      index++;
    }
    this.index = index + 1;
    return escaped ? (JSON.parse(text.slice(start, index + 1)) as string) : text.slice(start + 1, index);
  }

  private number(): number | ExactNumber {
    NUMBER_LITERAL.lastIndex = this.index;
    const match = NUMBER_LITERAL.exec(this.text);
    if (match === null) return this.fail();
    const literal = match[0];
    this.index += literal.length;
    const value = Number(literal);
    return isInexactLiteral(literal, value) ? new ExactNumber(literal) : value;
  }

  private keyword<T>(word: string, value: T): T {
    if (!this.text.startsWith(word, this.index)) this.fail();
    this.index += word.length;
    return value;
  }

  private skipSpace(): void {
    const text = this.text;
    let index = this.index;
    for (;;) {
      const code = text.charCodeAt(index);
      if (code !== 32 && code !== 10 && code !== 13 && code !== 9) break;
      index++;
    }
    this.index = index;
  }

  private fail(at = this.index): never {
    if (at >= this.text.length) throw new SyntaxError('Unexpected end of JSON input');
    throw new SyntaxError(`Unexpected token ${JSON.stringify(this.text[at])} in JSON at position ${at}`);
  }
}
