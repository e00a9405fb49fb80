/**
 * Exact decimal handling shared by the INT64 and NUMERIC parsers. Going through `Number` would
 * round anything beyond 2^53 or with more than ~16 significant digits, which is exactly what those
 * types exist to avoid.
 */

/** sign × coefficient × 10^exponent, normalised: no leading/trailing zeros in `coefficient`. */
export interface Decimal {
  negative: boolean;
  /** Significant digits; "" means the value is zero. */
  coefficient: string;
  exponent: number;
}

// Plain decimal notation with optional exponent, as JSON and JavaScript print numbers. No
// thousands separators, no hex, no "Infinity": a separator is ambiguous (1,234 vs 1.234 by locale)
// and guessing would silently change values.
const DECIMAL_TEXT = /^([+-]?)(?:(\d+)(?:\.(\d*))?|\.(\d+))(?:[eE]([+-]?\d+))?$/;

/**
 * Strings the tile shows with the `percentage` format arrive as "12.5%". The number shown is the
 * number kept (12.5, not 0.125): that is what the reader of the tile sees and what the formula
 * computed. Surrounding whitespace is not meaningful in a number and is dropped.
 */
export function toNumericText(raw: string): string {
  let text = raw;
  if (text.length === 0) return text;
  // Checked first because trim() is measurable on the hot path and numbers rarely carry spaces.
  if (mayBeSpace(text.charCodeAt(0)) || mayBeSpace(text.charCodeAt(text.length - 1))) text = text.trim();
  if (text.charCodeAt(text.length - 1) === PERCENT) text = text.slice(0, -1).trimEnd();
  return text;
}

const PERCENT = 37;

/** Cheap superset of what String.prototype.trim removes; trim() itself decides. */
function mayBeSpace(code: number): boolean {
  return code <= 32 || code === 0xa0 || code === 0xfeff || code >= 0x1680;
}

/**
 * The number a numeric string (after toNumericText) denotes, or NaN. `Number()` alone is too
 * lenient: it reads "" as 0 and accepts hex, binary and octal literals. Everything else it accepts
 * is plain decimal notation (DECIMAL_TEXT), and non-finite results are the caller's to refuse.
 */
export function decimalTextToNumber(text: string): number {
  if (text.length === 0) return Number.NaN;
  if (text.length > 1 && text.charCodeAt(0) === 48) {
    const radix = text.charCodeAt(1) | 0x20;
    if (radix === 0x78 || radix === 0x62 || radix === 0x6f) return Number.NaN; // 0x 0b 0o
  }
  return Number(text);
}

export function parseDecimal(text: string): Decimal | undefined {
  const match = DECIMAL_TEXT.exec(text);
  if (match === null) return undefined;
  const integerPart = match[2] ?? '';
  const fractionPart = match[3] ?? match[4] ?? '';
  // Number() of an absurd exponent saturates instead of throwing; range checks reject it later.
  const exponentText = match[5];
  let exponent = (exponentText === undefined ? 0 : Number(exponentText)) - fractionPart.length;
  let coefficient = integerPart + fractionPart;
  let start = 0;
  while (start < coefficient.length && coefficient.charCodeAt(start) === 48) start++;
  let end = coefficient.length;
  while (end > start && coefficient.charCodeAt(end - 1) === 48) end--;
  exponent += coefficient.length - end;
  coefficient = coefficient.slice(start, end);
  if (coefficient.length === 0) return { negative: false, coefficient: '', exponent: 0 };
  return { negative: match[1] === '-', coefficient, exponent };
}

/** Digits before the decimal point (0 for zero and for |x| < 1). */
export function integerDigitCount(decimal: Decimal): number {
  return decimal.coefficient.length === 0 ? 0 : Math.max(0, decimal.coefficient.length + decimal.exponent);
}

/** Digits after the decimal point, trailing zeros excluded. */
export function fractionDigitCount(decimal: Decimal): number {
  return Math.max(0, -decimal.exponent);
}

/**
 * Canonical plain text: no exponent, no "+", no leading zeros except a single "0" before the
 * point, no trailing fractional zeros, and zero is "0" (never "-0"). Callers bound the exponent
 * first; the result has |exponent| extra characters.
 */
export function formatDecimal(decimal: Decimal): string {
  const { coefficient, exponent } = decimal;
  if (coefficient.length === 0) return '0';
  const sign = decimal.negative ? '-' : '';
  if (exponent >= 0) return sign + coefficient + '0'.repeat(exponent);
  const pointAt = coefficient.length + exponent;
  if (pointAt > 0) return `${sign}${coefficient.slice(0, pointAt)}.${coefficient.slice(pointAt)}`;
  return `${sign}0.${'0'.repeat(-pointAt)}${coefficient}`;
}
