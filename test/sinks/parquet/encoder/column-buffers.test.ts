import { describe, expect, it } from 'vitest';
import { columnBuffer, type Tally } from '../../../../src/sinks/parquet/encoder/column-buffers.js';
import { codeOf } from '../../../support/thrown-code.js';

/** The page's PLAIN bytes read back as little-endian values of `width` bytes (the oracle: DataView, not the buffers' typed arrays). */
function plainValues(bytes: Uint8Array, width: 4 | 8, read: 'int' | 'float'): (number | bigint)[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return Array.from({ length: bytes.byteLength / width }, (_, i) =>
    width === 4 ? view.getInt32(i * 4, true) : read === 'float' ? view.getFloat64(i * 8, true) : view.getBigInt64(i * 8, true),
  );
}

describe('the fixed-width column buffers', () => {
  // 40 values: past the initial 16 (32 halves for TIMESTAMP), so the arrays grow at least once.
  const count = 40;

  it('keep INT64, FLOAT64 and TIMESTAMP values in PLAIN little-endian bytes across growth, nulls taking no value bytes', () => {
    const tally: Tally = { bytes: 0 };
    const int64 = columnBuffer('i', 'INT64', tally);
    const float64 = columnBuffer('f', 'FLOAT64', tally);
    const timestamp = columnBuffer('t', 'TIMESTAMP', tally);
    const ints = Array.from({ length: count }, (_, i) => (i % 2 === 0 ? -(2n ** 62n) + BigInt(i) : BigInt(i) * 1_000_000_007n));
    const floats = Array.from({ length: count }, (_, i) => i / 3 - 7);
    // Both sides of the epoch and beyond 2^53 microseconds (year 2255+), where ms × 1000 is inexact as a number.
    const instants = Array.from({ length: count }, (_, i) => (i - 20) * 9_000_000_000_007);
    for (let i = 0; i < count; i++) {
      int64.add(ints[i]!);
      float64.add(floats[i]!);
      timestamp.add(instants[i]!);
    }
    int64.add(null);
    expect(int64.count).toBe(count + 1);
    expect(int64.nulls).toBe(1);
    expect(int64.valueBytes).toBe(count * 8);
    expect(plainValues(int64.values(), 8, 'int')).toEqual(ints);
    expect(plainValues(float64.values(), 8, 'float')).toEqual(floats);
    expect(plainValues(timestamp.values(), 8, 'int')).toEqual(instants.map((ms) => BigInt(ms) * 1000n));
    expect(tally.bytes).toBe(count * 8 * 3 + 1);
  });

  it('start a fresh page after reset, reusing nothing of the previous values', () => {
    const buffer = columnBuffer('i', 'INT64', { bytes: 0 });
    for (let i = 0; i < count; i++) buffer.add(BigInt(i));
    buffer.reset();
    buffer.add(7n);
    expect(buffer.count).toBe(1);
    expect(plainValues(buffer.values(), 8, 'int')).toEqual([7n]);
  });

  it('take no value for a refused one', () => {
    const buffer = columnBuffer('i', 'INT64', { bytes: 0 });
    buffer.add(1n);
    expect(codeOf(() => buffer.add(2n ** 63n))).toBe('parquet_value_invalid');
    expect(buffer.valueBytes).toBe(8);
  });
});

describe('the DATE column buffer', () => {
  it('writes the day number of the calendar dates at both ends of the range and on leap days', () => {
    const buffer = columnBuffer('d', 'DATE', { bytes: 0 });
    // Day numbers from the proleptic Gregorian count, not from civil-date (0001-01-01 is 719162 days before 1970).
    const dates: [string, number][] = [
      ['0001-01-01', -719_162],
      ['9999-12-31', 2_932_896],
      ['2000-02-29', 11_016],
      ['2024-02-29', 19_782],
      ['1969-12-31', -1],
    ];
    for (const [text] of dates) buffer.add(text);
    expect(plainValues(buffer.values(), 4, 'int')).toEqual(dates.map(([, day]) => day));
  });

  it('writes a repeated text, remembered from the value before it, as the same day again', () => {
    const buffer = columnBuffer('d', 'DATE', { bytes: 0 });
    for (const text of ['2026-03-01', '2026-03-01', '2026-02-28', '2026-03-01']) buffer.add(text);
    expect(plainValues(buffer.values(), 4, 'int')).toEqual([20_513, 20_513, 20_512, 20_513]);
  });

  it.each(['0000-12-31', '2023-02-29', '1900-02-29', '2026-13-01', '2026-00-10', '2026-01-00', '2026-1-01', ' 2026-01-01', '2026-01-01T00:00'])(
    'refuses %s as not a calendar date, naming the column and value, even right after a valid date',
    (text) => {
      const buffer = columnBuffer('day', 'DATE', { bytes: 0 });
      buffer.add('2026-01-01');
      expect(() => buffer.add(text)).toThrow(`column "day": value "${text}"`);
      expect(codeOf(() => buffer.add(text))).toBe('parquet_value_invalid');
      expect(buffer.valueBytes).toBe(4);
    },
  );
});
