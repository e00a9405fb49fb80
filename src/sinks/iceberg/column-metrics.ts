import type { TypedRow, TypedValue } from '../../transform/column.js';
import { dayNumberOfCalendarDate } from '../../value-types/civil-date.js';
import type { ColumnType } from '../../value-types/column-types.js';

/**
 * A data file's column metrics as its manifest entry carries them (the specification's "Manifests":
 * `value_counts`, `null_value_counts`, `lower_bounds`, `upper_bounds`, keyed by field id), gathered
 * as the file's rows go by. Readers skip a file whose bounds exclude a filter's values (pyiceberg,
 * DuckDB, Spark, Trino), so a bound must never be narrower than the file's values: a bound too
 * narrow loses rows for every reader. Bounds are in Appendix D's single-value serialization:
 * long and timestamptz (microseconds) 8 bytes little-endian, date 4 bytes little-endian (days),
 * double 8 bytes little-endian, decimal the unscaled value's two's-complement big-endian bytes (as
 * few as hold it), string its UTF-8 bytes. Strings are truncated to 16 code points as Java's and
 * pyiceberg's writers do by default (`write.metadata.metrics.default` = truncate(16)): the lower
 * bound a prefix, the upper bound a prefix whose last code point is raised by one (none when no
 * code point can be raised). Strings are ordered by code point (= by UTF-8 bytes), not by
 * JavaScript's UTF-16 units; a double's zero is widened to -0.0 below and +0.0 above, NaN never
 * bounds.
 */
export interface DataFileMetrics {
  valueCounts: Map<number, bigint>;
  nullValueCounts: Map<number, bigint>;
  lowerBounds: Map<number, Buffer>;
  upperBounds: Map<number, Buffer>;
}

/** A UTF-16 unit at or above U+D800: a surrogate, or U+E000..U+FFFF (where UTF-16 order and code point order part). */
const HIGH_UNITS = /[\uD800-\uFFFF]/;

/** How many code points of a string bound are kept (Java's and pyiceberg's default `truncate(16)`). */
export const STRING_BOUND_CODE_POINTS = 16;

interface Tracked {
  fieldId: number;
  type: ColumnType;
  nulls: number;
  values: number;
  min: TypedValue;
  max: TypedValue;
}

/** Every column's counts and bounds over the rows added (a column of `specs` per row value). */
export class ColumnMetrics {
  private readonly tracked: Tracked[];

  constructor(specs: readonly { type: ColumnType; fieldId?: number | undefined }[]) {
    this.tracked = specs.map((spec) => {
      if (spec.fieldId === undefined) throw new Error('an Iceberg data file column without a field id');
      return { fieldId: spec.fieldId, type: spec.type, nulls: 0, values: 0, min: null, max: null };
    });
  }

  add(rows: readonly TypedRow[]): void {
    const tracked = this.tracked;
    for (let column = 0; column < tracked.length; column++) {
      const state = tracked[column]!;
      // One loop per order, each comparing its own values natively where that is the type's order (the file's every value passes here).
      if (state.type === 'STRING') this.addStrings(state, rows, column);
      else if (state.type === 'NUMERIC') this.addOrdered(state, rows, column, compareDecimalText as (a: TypedValue, b: TypedValue) => number);
      else this.addNative(state, rows, column);
      state.values += rows.length;
    }
  }

  /** INT64 (bigint), FLOAT64 and TIMESTAMP (numbers, NaN skipped), DATE (YYYY-MM-DD): JavaScript's < is their order. */
  private addNative(state: Tracked, rows: readonly TypedRow[], column: number): void {
    let { min, max, nulls } = state;
    for (const row of rows) {
      const value = row[column] ?? null;
      if (value === null) {
        nulls++;
        continue;
      }
      if (value !== value) continue; // NaN
      // min <= max: a value below min is not above max.
      if (min === null || max === null) min = max = value;
      else if (value < min) min = value;
      else if (value > max) max = value;
    }
    Object.assign(state, { min, max, nulls });
  }

  /** Strings: UTF-16 order is code point order unless a surrogate meets U+E000..U+FFFF, so only strings holding either are compared slowly. */
  private addStrings(state: Tracked, rows: readonly TypedRow[], column: number): void {
    let { min, max, nulls } = state;
    let minHigh = typeof min === 'string' && HIGH_UNITS.test(min);
    let maxHigh = typeof max === 'string' && HIGH_UNITS.test(max);
    for (const row of rows) {
      const value = row[column] ?? null;
      if (value === null) {
        nulls++;
        continue;
      }
      const text = value as string;
      const high = HIGH_UNITS.test(text);
      if (min === null || max === null) {
        min = max = text;
        minHigh = maxHigh = high;
      } else if (high || minHigh ? compareCodePoints(text, min as string) < 0 : text < (min as string)) {
        min = text;
        minHigh = high;
      } else if (high || maxHigh ? compareCodePoints(text, max as string) > 0 : text > (max as string)) {
        max = text;
        maxHigh = high;
      }
    }
    Object.assign(state, { min, max, nulls });
  }

  private addOrdered(state: Tracked, rows: readonly TypedRow[], column: number, compare: (a: TypedValue, b: TypedValue) => number): void {
    let { min, max, nulls } = state;
    for (const row of rows) {
      const value = row[column] ?? null;
      if (value === null) {
        nulls++;
        continue;
      }
      if (value === min || value === max) continue;
      if (min === null || max === null) min = max = value;
      else if (compare(value, min) < 0) min = value;
      else if (compare(value, max) > 0) max = value;
    }
    Object.assign(state, { min, max, nulls });
  }

  metrics(): DataFileMetrics {
    const metrics: DataFileMetrics = { valueCounts: new Map(), nullValueCounts: new Map(), lowerBounds: new Map(), upperBounds: new Map() };
    for (const state of this.tracked) {
      metrics.valueCounts.set(state.fieldId, BigInt(state.values));
      metrics.nullValueCounts.set(state.fieldId, BigInt(state.nulls));
      if (state.min === null || state.max === null) continue;
      const lower = boundOf(state.type, state.min, 'lower');
      const upper = boundOf(state.type, state.max, 'upper');
      if (lower !== undefined) metrics.lowerBounds.set(state.fieldId, lower);
      if (upper !== undefined) metrics.upperBounds.set(state.fieldId, upper);
    }
    return metrics;
  }
}

/** Code point order of two JavaScript strings (UTF-16 order differs where a surrogate meets U+E000..U+FFFF). */
export function compareCodePoints(a: string, b: string): number {
  if (a === b) return 0;
  const length = Math.min(a.length, b.length);
  for (let index = 0; index < length; index++) {
    const x = a.charCodeAt(index);
    const y = b.charCodeAt(index);
    if (x === y) continue;
    const xSurrogate = x >= 0xd800 && x <= 0xdfff;
    const ySurrogate = y >= 0xd800 && y <= 0xdfff;
    // A surrogate is part of a code point above U+FFFF: above every unit it is compared with but another surrogate.
    if (xSurrogate !== ySurrogate && Math.min(x, y) >= 0xd800) return xSurrogate ? 1 : -1;
    return x - y;
  }
  return a.length - b.length;
}

/** Two canonical decimal texts ("-12.5", "0.25", never an exponent) by value, without allocating. */
export function compareDecimalText(a: string, b: string): number {
  if (a === b) return 0;
  const negativeA = a.charCodeAt(0) === 45;
  const negativeB = b.charCodeAt(0) === 45;
  if (negativeA !== negativeB) return isZero(a) && isZero(b) ? 0 : negativeA ? -1 : 1;
  const magnitude = compareMagnitude(a, negativeA ? 1 : 0, b, negativeB ? 1 : 0);
  return negativeA ? -magnitude : magnitude;
}

function isZero(text: string): boolean {
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code !== 48 && code !== 45 && code !== 46) return false;
  }
  return true;
}

/** The digits of `a` from `i` and of `b` from `j` as non-negative decimals. */
function compareMagnitude(a: string, i: number, b: string, j: number): number {
  let dotA = a.indexOf('.', i);
  let dotB = b.indexOf('.', j);
  if (dotA < 0) dotA = a.length;
  if (dotB < 0) dotB = b.length;
  // Leading zeros say nothing of the size.
  while (i < dotA - 1 && a.charCodeAt(i) === 48) i++;
  while (j < dotB - 1 && b.charCodeAt(j) === 48) j++;
  if (dotA - i !== dotB - j) return dotA - i - (dotB - j);
  for (let k = 0; k < dotA - i; k++) {
    const difference = a.charCodeAt(i + k) - b.charCodeAt(j + k);
    if (difference !== 0) return difference;
  }
  const fractionA = Math.max(0, a.length - dotA - 1);
  const fractionB = Math.max(0, b.length - dotB - 1);
  for (let k = 0; k < Math.max(fractionA, fractionB); k++) {
    const x = k < fractionA ? a.charCodeAt(dotA + 1 + k) : 48;
    const y = k < fractionB ? b.charCodeAt(dotB + 1 + k) : 48;
    if (x !== y) return x - y;
  }
  return 0;
}

/** The order of a column type's non-null values: the one a filter's readers use, and latestBy's. */
export const COMPARES: Record<ColumnType, (a: TypedValue, b: TypedValue) => number> = {
  INT64: (a, b) => {
    const x = BigInt(a as bigint);
    const y = BigInt(b as bigint);
    return x < y ? -1 : x > y ? 1 : 0;
  },
  FLOAT64: (a, b) => {
    const x = a as number;
    const y = b as number;
    // NaN above every number (PostgreSQL's and BigQuery's MAX order).
    if (Number.isNaN(x) || Number.isNaN(y)) return Number.isNaN(x) ? (Number.isNaN(y) ? 0 : 1) : -1;
    return x < y ? -1 : x > y ? 1 : 0;
  },
  NUMERIC: (a, b) => compareDecimalText(a as string, b as string),
  STRING: (a, b) => compareCodePoints(a as string, b as string),
  // YYYY-MM-DD of years 0001..9999: the text's order is the days'.
  DATE: (a, b) => ((a as string) < (b as string) ? -1 : (a as string) > (b as string) ? 1 : 0),
  TIMESTAMP: (a, b) => (a as number) - (b as number),
};

/** Epoch milliseconds as the Parquet file's microseconds (sub-millisecond parts kept to the microsecond, as the encoder does). */
export function timestampMicros(milliseconds: number): bigint {
  const whole = Math.floor(milliseconds);
  return BigInt(whole) * 1000n + BigInt(Math.round((milliseconds - whole) * 1000));
}

/** A canonical decimal text as decimal(38, 9)'s unscaled integer. */
export function unscaledDecimal(text: string): bigint {
  const negative = text.startsWith('-');
  const [whole = '0', fraction = ''] = (negative ? text.slice(1) : text).split('.');
  const unscaled = BigInt(whole === '' ? '0' : whole) * 1_000_000_000n + BigInt(fraction.padEnd(9, '0').slice(0, 9) || '0');
  return negative ? -unscaled : unscaled;
}

/** A value in Appendix D's single-value serialization (a string truncated as the bound's side allows); undefined: no bound. */
export function boundOf(type: ColumnType, value: TypedValue, side: 'lower' | 'upper'): Buffer | undefined {
  switch (type) {
    case 'INT64':
      return longBytes(BigInt(value as bigint));
    case 'TIMESTAMP':
      return longBytes(timestampMicros(value as number));
    case 'DATE': {
      const bytes = Buffer.alloc(4);
      bytes.writeInt32LE(dayNumberOfCalendarDate(value as string)!);
      return bytes;
    }
    case 'FLOAT64': {
      const bytes = Buffer.alloc(8);
      // -0.0 and +0.0 are one value to a filter: the bound is widened to both.
      const number = (value as number) === 0 ? (side === 'lower' ? -0 : 0) : (value as number);
      bytes.writeDoubleLE(number);
      return bytes;
    }
    case 'NUMERIC':
      return decimalBytes(unscaledDecimal(value as string));
    case 'STRING':
      return side === 'lower' ? Buffer.from(truncatedLower(value as string), 'utf8') : truncatedUpperBytes(value as string);
  }
}

function longBytes(value: bigint): Buffer {
  const bytes = Buffer.alloc(8);
  bytes.writeBigInt64LE(value);
  return bytes;
}

/** The two's-complement big-endian bytes of `value`, as few as hold it (Java's BigInteger.toByteArray). */
export function decimalBytes(value: bigint): Buffer {
  let length = 1;
  while (value < -(1n << BigInt(8 * length - 1)) || value >= 1n << BigInt(8 * length - 1)) length++;
  const bytes = Buffer.alloc(length);
  let rest = BigInt.asUintN(8 * length, value);
  for (let index = length - 1; index >= 0; index--) {
    bytes[index] = Number(rest & 0xffn);
    rest >>= 8n;
  }
  return bytes;
}

/** Two's-complement big-endian bytes as an integer (a decimal bound's unscaled value). */
export function decimalOfBytes(bytes: Uint8Array): bigint {
  let value = 0n;
  for (const byte of bytes) value = (value << 8n) | BigInt(byte);
  return bytes.length === 0 ? 0n : BigInt.asIntN(8 * bytes.length, value);
}

function truncatedLower(text: string): string {
  const points = Array.from(text);
  return points.length <= STRING_BOUND_CODE_POINTS ? text : points.slice(0, STRING_BOUND_CODE_POINTS).join('');
}

/** The upper bound of a string: itself when short, else a 16-code-point prefix raised by one at its last code point that can be raised. */
function truncatedUpperBytes(text: string): Buffer | undefined {
  const points = Array.from(text);
  if (points.length <= STRING_BOUND_CODE_POINTS) return Buffer.from(text, 'utf8');
  const prefix = points.slice(0, STRING_BOUND_CODE_POINTS).map((point) => point.codePointAt(0)!);
  for (let index = prefix.length - 1; index >= 0; index--) {
    let next = prefix[index]! + 1;
    // Surrogate code points are not characters: the next one after them is U+E000.
    if (next >= 0xd800 && next <= 0xdfff) next = 0xe000;
    if (next > 0x10ffff) continue;
    return Buffer.from(String.fromCodePoint(...prefix.slice(0, index), next), 'utf8');
  }
  return undefined;
}
