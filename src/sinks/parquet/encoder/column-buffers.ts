import { endianness } from 'node:os';
import type { ColumnType } from '../../../value-types/column-types.js';
import type { TypedValue } from '../../../transform/column.js';
import { dayNumberOfCalendarDate } from '../../../value-types/civil-date.js';
import { ByteSink } from './byte-sink.js';
import { ParquetValueError } from './parquet-errors.js';

// Fixed-width values are handed to the page as the typed arrays' own bytes, which are PLAIN
// encoding's little-endian layout only on a little-endian machine (every platform Node ships for).
if (endianness() !== 'LE') throw new Error('the Parquet encoder needs a little-endian machine');

/** A page is cut when its values reach this many bytes: parquet-mr's and Arrow's default page size. */
export const PAGE_BYTES = 1 << 20;
/** …or this many values, which bounds a mostly-null column's definition levels. */
const PAGE_VALUES = 1 << 20;

/** The row group's buffered (uncompressed) size, shared by its columns. */
export interface Tally {
  bytes: number;
}

/**
 * One column's current page: a bit per value for its definition level (1 = present; every column
 * is OPTIONAL and flat, so the level is the only one) and the present values in PLAIN encoding.
 * Buffers grow to the largest page and are reused for the next one.
 */
export abstract class ColumnBuffer {
  /** Values in the page, nulls included. */
  count = 0;
  nulls = 0;
  levels = new Uint8Array(16);

  constructor(
    readonly name: string,
    private readonly tally: Tally,
  ) {}

  /** Appends one value; true when the page is full and should be cut. */
  add(value: TypedValue | undefined): boolean {
    const index = this.count++;
    if (index >>> 3 >= this.levels.length) this.levels = grown(this.levels, (index >>> 3) + 1);
    if (value === null || value === undefined) {
      this.nulls++;
      // A null costs only its level bit, but counting it as a byte keeps an all-null table's row
      // groups (and their levels) bounded too.
      this.tally.bytes += 1;
    } else {
      this.levels[index >>> 3]! |= 1 << (index & 7);
      this.tally.bytes += this.push(value);
    }
    return this.valueBytes >= PAGE_BYTES || this.count >= PAGE_VALUES;
  }

  /** The PLAIN bytes of the page's present values (a view, valid until the next add or reset). */
  abstract values(): Uint8Array;
  abstract get valueBytes(): number;
  /** Stores a present value; returns the bytes it added. */
  protected abstract push(value: number | bigint | string): number;
  protected abstract resetValues(): void;

  reset(): void {
    this.levels.fill(0, 0, (this.count + 7) >>> 3);
    this.count = 0;
    this.nulls = 0;
    this.resetValues();
  }

  protected refuse(value: unknown, reason: string): never {
    throw new ParquetValueError(this.name, value, reason);
  }
}

export function columnBuffer(name: string, type: ColumnType, tally: Tally): ColumnBuffer {
  switch (type) {
    case 'INT64':
      return new Int64Buffer(name, tally);
    case 'FLOAT64':
      return new Float64Buffer(name, tally);
    case 'TIMESTAMP':
      return new TimestampMicrosBuffer(name, tally);
    case 'DATE':
      return new DateBuffer(name, tally);
    case 'NUMERIC':
      return new DecimalBuffer(name, tally);
    case 'STRING':
      return new StringBuffer(name, tally);
  }
}

function grown<T extends Uint8Array | Int32Array | Float64Array | BigInt64Array>(array: T, needed: number): T {
  let capacity = array.length * 2;
  while (capacity < needed) capacity *= 2;
  const next = new (array.constructor as new (length: number) => T)(capacity);
  next.set(array as never);
  return next;
}

/**
 * A column whose values all take `width` bytes, kept in a typed array whose own bytes are the PLAIN
 * layout: the page is a view of the array, and the array grows to the largest page.
 * Each subclass's `push` checks `length === capacity` and writes `data` itself: a helper shared by
 * all the kinds would see four array types and run measurably slower than the per-kind code
 * (measured on 3M values: TIMESTAMP 35 → 75 ms).
 */
abstract class FixedWidthBuffer<T extends BigInt64Array | Float64Array | Int32Array> extends ColumnBuffer {
  /** Values in `data` (a TIMESTAMP's value is two elements). */
  protected length = 0;
  /** Values `data` can hold before `grow`. */
  protected capacity: number;

  constructor(
    name: string,
    tally: Tally,
    protected data: T,
    private readonly width: number,
  ) {
    super(name, tally);
    this.capacity = (data.length * data.BYTES_PER_ELEMENT) / width;
  }

  protected grow(): void {
    this.data = grown(this.data, this.data.length + 1);
    this.capacity = (this.data.length * this.data.BYTES_PER_ELEMENT) / this.width;
  }

  values(): Uint8Array {
    return new Uint8Array(this.data.buffer, 0, this.length * this.width);
  }

  get valueBytes(): number {
    return this.length * this.width;
  }

  protected resetValues(): void {
    this.length = 0;
  }
}

const INT64_MIN = -(1n << 63n);
const INT64_MAX = (1n << 63n) - 1n;

class Int64Buffer extends FixedWidthBuffer<BigInt64Array> {
  constructor(name: string, tally: Tally) {
    super(name, tally, new BigInt64Array(16), 8);
  }

  protected push(value: number | bigint | string): number {
    if (typeof value !== 'bigint') this.refuse(value, 'an INT64 value must be a bigint');
    if (value < INT64_MIN || value > INT64_MAX) this.refuse(value, 'outside the signed 64-bit range');
    if (this.length === this.capacity) this.grow();
    this.data[this.length++] = value;
    return 8;
  }
}

class Float64Buffer extends FixedWidthBuffer<Float64Array> {
  constructor(name: string, tally: Tally) {
    super(name, tally, new Float64Array(16), 8);
  }

  protected push(value: number | bigint | string): number {
    if (typeof value !== 'number') this.refuse(value, 'a FLOAT64 value must be a number');
    if (this.length === this.capacity) this.grow();
    this.data[this.length++] = value;
    return 8;
  }
}

const TWO_32 = 2 ** 32;

/**
 * Epoch milliseconds → INT64 microseconds, written as two 32-bit halves: ms × 1000 passes 2^53
 * after the year 2255, so the product is made from the halves of ms instead (exact for every
 * integral ms a JavaScript date can hold), without a bigint per value.
 */
class TimestampMicrosBuffer extends FixedWidthBuffer<Int32Array> {
  constructor(name: string, tally: Tally) {
    super(name, tally, new Int32Array(32), 8);
  }

  protected push(value: number | bigint | string): number {
    if (typeof value !== 'number' || !Number.isFinite(value)) this.refuse(value, 'a TIMESTAMP value must be finite epoch milliseconds');
    const whole = Math.floor(value);
    // Sub-millisecond parts (none come from the API) are kept to the microsecond.
    const extraMicros = Math.round((value - whole) * 1000);
    const high = Math.floor(whole / TWO_32);
    const lowProduct = (whole - high * TWO_32) * 1000 + extraMicros;
    const carry = Math.floor(lowProduct / TWO_32);
    const high32 = high * 1000 + carry;
    if (high32 < -0x80000000 || high32 > 0x7fffffff) this.refuse(value, 'outside the INT64 microsecond range');
    if (this.length === this.capacity) this.grow();
    const at = this.length++ * 2;
    this.data[at] = lowProduct - carry * TWO_32;
    this.data[at + 1] = high32;
    return 8;
  }
}

/**
 * "YYYY-MM-DD" → days since 1970-01-01, by civil-date's one calendar-date rule (so a date the
 * calendar does not have, 2023-02-30, or year 0000 is refused as config and transform refuse it);
 * the last text's day is remembered (dates repeat).
 */
class DateBuffer extends FixedWidthBuffer<Int32Array> {
  private lastText = '';
  private lastDay = 0;

  constructor(name: string, tally: Tally) {
    super(name, tally, new Int32Array(16), 4);
  }

  protected push(value: number | bigint | string): number {
    if (typeof value !== 'string') this.refuse(value, 'a DATE value must be a YYYY-MM-DD string');
    if (value !== this.lastText) {
      const day = dayNumberOfCalendarDate(value);
      if (day === undefined) this.refuse(value, 'not a calendar date YYYY-MM-DD');
      this.lastDay = day;
      this.lastText = value;
    }
    if (this.length === this.capacity) this.grow();
    this.data[this.length++] = this.lastDay;
    return 4;
  }
}

/** A column whose PLAIN bytes are appended to a ByteSink (FIXED_LEN_BYTE_ARRAY, BYTE_ARRAY). */
abstract class ByteSinkBuffer extends ColumnBuffer {
  constructor(
    name: string,
    tally: Tally,
    protected readonly data: ByteSink,
  ) {
    super(name, tally);
  }

  values(): Uint8Array {
    return this.data.bytes.subarray(0, this.data.length);
  }

  get valueBytes(): number {
    return this.data.length;
  }

  protected resetValues(): void {
    this.data.length = 0;
  }
}

/**
 * A canonical decimal string → DECIMAL(38,9) as FIXED_LEN_BYTE_ARRAY(16): the value × 10^9 as a
 * big-endian two's-complement 128-bit integer, built in eight 16-bit limbs (no bigint per value).
 */
class DecimalBuffer extends ByteSinkBuffer {
  private readonly limbs = new Uint32Array(8);
  private lastText = '';

  constructor(name: string, tally: Tally) {
    super(name, tally, new ByteSink(256));
  }

  protected push(value: number | bigint | string): number {
    if (typeof value !== 'string') this.refuse(value, 'a NUMERIC value must be a decimal string');
    const sink = this.data;
    sink.reserve(16);
    if (value === this.lastText && sink.length >= 16) sink.bytes.copyWithin(sink.length, sink.length - 16, sink.length);
    else {
      if (!this.parse(value)) this.refuse(value, 'not a decimal with at most 29 integer and 9 fraction digits');
      this.writeLimbs(sink.bytes, sink.length);
      this.lastText = value;
    }
    sink.length += 16;
    return 16;
  }

  private parse(text: string): boolean {
    const limbs = this.limbs;
    limbs.fill(0);
    const negative = text.charCodeAt(0) === 45; // '-'
    let i = negative ? 1 : 0;
    const integerStart = i;
    let chunk = 0;
    let scale = 1;
    let fractionDigits = -1;
    for (; i < text.length; i++) {
      const code = text.charCodeAt(i);
      if (code === 46 && fractionDigits < 0) {
        if (i === integerStart) return false;
        fractionDigits = 0;
        continue;
      }
      if (code < 48 || code > 57) return false;
      if (fractionDigits >= 0) fractionDigits++;
      else if (i - integerStart >= 29) return false;
      chunk = chunk * 10 + (code - 48);
      scale *= 10;
      if (scale === 10_000) {
        multiplyAdd(limbs, scale, chunk);
        chunk = 0;
        scale = 1;
      }
    }
    if (i === integerStart || fractionDigits === 0 || fractionDigits > 9) return false;
    multiplyAdd(limbs, scale, chunk);
    for (let pad = 9 - Math.max(fractionDigits, 0); pad > 0; pad -= 4) multiplyAdd(limbs, 10 ** Math.min(pad, 4), 0);
    if (negative) negate(limbs);
    return true;
  }

  private writeLimbs(out: Uint8Array, at: number): void {
    for (let k = 0; k < 8; k++) {
      const limb = this.limbs[k]!;
      out[at + 15 - 2 * k] = limb & 0xff;
      out[at + 14 - 2 * k] = limb >>> 8;
    }
  }

  protected override resetValues(): void {
    super.resetValues();
    this.lastText = '';
  }
}

function multiplyAdd(limbs: Uint32Array, factor: number, addend: number): void {
  let carry = addend;
  for (let k = 0; k < 8; k++) {
    const product = limbs[k]! * factor + carry;
    limbs[k] = product & 0xffff;
    carry = product >>> 16;
  }
}

function negate(limbs: Uint32Array): void {
  let carry = 1;
  for (let k = 0; k < 8; k++) {
    const limb = (~limbs[k]! & 0xffff) + carry;
    limbs[k] = limb & 0xffff;
    carry = limb >>> 16;
  }
}

/** PLAIN BYTE_ARRAY: a 4-byte little-endian length, then the UTF-8 bytes. */
class StringBuffer extends ByteSinkBuffer {
  constructor(name: string, tally: Tally) {
    super(name, tally, new ByteSink(1024));
  }

  protected push(value: number | bigint | string): number {
    if (typeof value !== 'string') this.refuse(value, 'a STRING value must be a string');
    const sink = this.data;
    sink.reserve(4 + value.length * 3);
    const bytes = sink.bytes;
    const start = sink.length + 4;
    let written = asciiInto(value, bytes, start);
    if (written < 0) written = bytes.write(value, start, 'utf8');
    bytes.writeUInt32LE(written, sink.length);
    sink.length = start + written;
    return 4 + written;
  }
}

/** Short ASCII strings copied by hand (cheaper than a call into Buffer#write); -1 otherwise. */
function asciiInto(text: string, out: Uint8Array, at: number): number {
  const length = text.length;
  if (length > 32) return -1;
  for (let i = 0; i < length; i++) {
    const code = text.charCodeAt(i);
    if (code >= 0x80) return -1;
    out[at + i] = code;
  }
  return length;
}
