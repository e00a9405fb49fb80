import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  boundOf,
  ColumnMetrics,
  compareCodePoints,
  compareDecimalText,
  decimalBytes,
  decimalOfBytes,
  unscaledDecimal,
} from '../../../src/sinks/iceberg/column-metrics.js';
import type { LiveDataFile } from '../../../src/sinks/iceberg/manifest-reading.js';
import { RunKeyValues } from '../../../src/sinks/iceberg/merge-key-bounds.js';

const hex = (bytes: Uint8Array | undefined) => (bytes === undefined ? undefined : Buffer.from(bytes).toString('hex'));

describe('boundOf (Appendix D: single-value serialization)', () => {
  it('writes longs and timestamps as 8 bytes little-endian, dates as 4, decimals as minimal big-endian two’s complement, doubles as 8', () => {
    expect(hex(boundOf('INT64', -1n, 'lower'))).toBe('ffffffffffffffff');
    expect(hex(boundOf('INT64', 1n, 'lower'))).toBe('0100000000000000');
    // 1 ms = 1000 µs; 1938-02-03T00:00:00Z before the epoch.
    expect(hex(boundOf('TIMESTAMP', 1, 'lower'))).toBe('e803000000000000');
    expect(boundOf('TIMESTAMP', -1_006_819_200_000, 'lower')!.readBigInt64LE()).toBe(-1_006_819_200_000_000n);
    expect(hex(boundOf('DATE', '1970-01-02', 'lower'))).toBe('01000000');
    expect(boundOf('DATE', '0001-01-01', 'lower')!.readInt32LE()).toBe(-719_162);
    // decimal(38, 9): 1 is 1000000000 unscaled = 0x3b9aca00; -1e-9 is -1 = 0xff; 128 needs a sign byte.
    expect(hex(boundOf('NUMERIC', '1', 'lower'))).toBe('3b9aca00');
    expect(hex(boundOf('NUMERIC', '-0.000000001', 'lower'))).toBe('ff');
    expect(hex(boundOf('NUMERIC', '0.000000128', 'lower'))).toBe('0080');
    expect(hex(boundOf('NUMERIC', '0', 'lower'))).toBe('00');
    expect(hex(boundOf('FLOAT64', 1.5, 'lower'))).toBe('000000000000f83f');
    // A zero bounds both zeros: -0.0 below, +0.0 above.
    expect(hex(boundOf('FLOAT64', 0, 'lower'))).toBe('0000000000000080');
    expect(hex(boundOf('FLOAT64', -0, 'upper'))).toBe('0000000000000000');
  });

  it('truncates strings to 16 code points: the lower bound a prefix, the upper one raised at its last code point that can be', () => {
    expect(boundOf('STRING', 'short', 'upper')!.toString('utf8')).toBe('short');
    expect(boundOf('STRING', 'abcdefghijklmnopqrstuvwxyz', 'lower')!.toString('utf8')).toBe('abcdefghijklmnop');
    expect(boundOf('STRING', 'abcdefghijklmnopqrstuvwxyz', 'upper')!.toString('utf8')).toBe('abcdefghijklmnoq');
    // Code points, not UTF-16 units: 17 emoji are 34 units.
    expect(boundOf('STRING', '😀'.repeat(17), 'lower')!.toString('utf8')).toBe('😀'.repeat(16));
    expect(boundOf('STRING', '😀'.repeat(17), 'upper')!.toString('utf8')).toBe(`${'😀'.repeat(15)}😁`);
    expect(boundOf('STRING', `abcdefghijklmno\u{10FFFF}zz`, 'upper')!.toString('utf8')).toBe('abcdefghijklmnp');
    // After U+D7FF comes U+E000: the surrogates are not characters.
    expect(boundOf('STRING', 'abcdefghijklmno\uD7FFzz', 'upper')!.toString('utf8')).toBe('abcdefghijklmno\uE000');
    expect(boundOf('STRING', '\u{10FFFF}'.repeat(17), 'upper')).toBeUndefined();
  });

  it('a truncated upper bound is above and a lower bound below the string, by UTF-8 bytes (property)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 40 }), (text) => {
        const bytes = Buffer.from(text, 'utf8');
        expect(Buffer.compare(boundOf('STRING', text, 'lower')!, bytes)).toBeLessThanOrEqual(0);
        const upper = boundOf('STRING', text, 'upper');
        if (upper !== undefined) expect(Buffer.compare(upper, bytes)).toBeGreaterThanOrEqual(0);
      }),
    );
  });
});

describe('the orders bounds are kept in', () => {
  it('compareCodePoints orders strings as their UTF-8 bytes do, unlike JavaScript’s UTF-16 order (property)', () => {
    expect('\uFFFF' < '😀').toBe(false);
    expect(compareCodePoints('\uFFFF', '😀')).toBeLessThan(0);
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 8 }), fc.string({ unit: 'grapheme', maxLength: 8 }), (a, b) => {
        expect(Math.sign(compareCodePoints(a, b))).toBe(Math.sign(Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'))));
      }),
    );
  });

  it('compareDecimalText orders decimal texts by value; decimal bytes read back as written (property)', () => {
    const decimal = fc
      .tuple(fc.bigInt({ min: -(10n ** 38n) + 1n, max: 10n ** 38n - 1n }), fc.integer({ min: 0, max: 9 }))
      .map(([unscaled, scale]) => {
        const digits = (unscaled < 0n ? -unscaled : unscaled).toString().padStart(scale + 1, '0');
        const text = scale === 0 ? digits : `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
        return { text: `${unscaled < 0n ? '-' : ''}${text}`, value: unscaled * 10n ** BigInt(9 - scale) };
      })
      .filter(({ value }) => value < 10n ** 38n && value > -(10n ** 38n));
    fc.assert(
      fc.property(decimal, decimal, (a, b) => {
        expect(Math.sign(compareDecimalText(a.text, b.text))).toBe(a.value < b.value ? -1 : a.value > b.value ? 1 : 0);
        expect(unscaledDecimal(a.text)).toBe(a.value);
        expect(decimalOfBytes(decimalBytes(a.value))).toBe(a.value);
      }),
    );
  });
});

describe('ColumnMetrics', () => {
  it('counts values and nulls per field id and bounds each column by its least and greatest value', () => {
    const metrics = new ColumnMetrics([
      { type: 'INT64', fieldId: 1 },
      { type: 'STRING', fieldId: 2 },
      { type: 'NUMERIC', fieldId: 5 },
    ]);
    metrics.add([
      [3n, 'b', '9'],
      [-2n, null, '10'],
    ]);
    metrics.add([[7n, '😀', null]]);
    const { valueCounts, nullValueCounts, lowerBounds, upperBounds } = metrics.metrics();
    expect([...valueCounts]).toEqual([
      [1, 3n],
      [2, 3n],
      [5, 3n],
    ]);
    expect([...nullValueCounts]).toEqual([
      [1, 0n],
      [2, 1n],
      [5, 1n],
    ]);
    expect(lowerBounds.get(1)!.readBigInt64LE()).toBe(-2n);
    expect(upperBounds.get(1)!.readBigInt64LE()).toBe(7n);
    expect(upperBounds.get(2)!.toString('utf8')).toBe('😀');
    // By value, not by text: 10 > 9.
    expect(decimalOfBytes(lowerBounds.get(5)!)).toBe(9_000_000_000n);
    expect(decimalOfBytes(upperBounds.get(5)!)).toBe(10_000_000_000n);
  });

  it('bounds each column by the least and greatest of its values in the type’s order, whatever the batches (property)', () => {
    const decimalText = fc.tuple(fc.bigInt({ min: -(10n ** 20n), max: 10n ** 20n }), fc.integer({ min: 0, max: 9 })).map(([unscaled, scale]) => {
      const digits = (unscaled < 0n ? -unscaled : unscaled).toString().padStart(scale + 1, '0');
      const text = scale === 0 ? digits : `${digits.slice(0, -scale)}.${digits.slice(-scale)}`.replace(/\.?0+$/, '');
      return unscaled < 0n && /[1-9]/.test(text) ? `-${text}` : text;
    });
    const row = fc.tuple(
      fc.option(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n })),
      fc.option(decimalText),
      fc.option(fc.string({ unit: 'grapheme', maxLength: 20 })),
    );
    fc.assert(
      fc.property(fc.array(fc.array(row, { maxLength: 8 }), { maxLength: 4 }), (batches) => {
        const metrics = new ColumnMetrics([
          { type: 'INT64', fieldId: 1 },
          { type: 'NUMERIC', fieldId: 2 },
          { type: 'STRING', fieldId: 3 },
        ]);
        for (const batch of batches) metrics.add(batch.map((values) => [...values]));
        const { lowerBounds, upperBounds } = metrics.metrics();
        const rows = batches.flat();
        const orders = [
          (a: bigint, b: bigint) => (a < b ? -1 : a > b ? 1 : 0),
          (a: string, b: string) => {
            const x = unscaledDecimal(a);
            const y = unscaledDecimal(b);
            return x < y ? -1 : x > y ? 1 : 0;
          },
          (a: string, b: string) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8')),
        ] as const;
        const types = ['INT64', 'NUMERIC', 'STRING'] as const;
        types.forEach((type, index) => {
          const values = rows.map((values) => values[index]).filter((value) => value !== null) as never[];
          const sorted = [...values].sort(orders[index] as (a: never, b: never) => number);
          expect(hex(lowerBounds.get(index + 1))).toBe(sorted.length === 0 ? undefined : hex(boundOf(type, sorted[0]!, 'lower')));
          expect(hex(upperBounds.get(index + 1))).toBe(sorted.length === 0 ? undefined : hex(boundOf(type, sorted.at(-1)!, 'upper')));
        });
      }),
    );
  });

  it('writes no bounds for a column of nulls only', () => {
    const metrics = new ColumnMetrics([{ type: 'DATE', fieldId: 4 }]);
    metrics.add([[null], [null]]);
    expect(metrics.metrics().lowerBounds.size).toBe(0);
    expect(metrics.metrics().nullValueCounts.get(4)).toBe(2n);
  });
});

describe('RunKeyValues.mayBeIn', () => {
  const file = (bounds: Record<number, [Buffer, Buffer]>): LiveDataFile => ({
    path: 'f',
    recordCount: 1n,
    sizeInBytes: 1n,
    partition: {},
    lowerBounds: new Map(Object.entries(bounds).map(([id, [lower]]) => [Number(id), lower])),
    upperBounds: new Map(Object.entries(bounds).map(([id, [, upper]]) => [Number(id), upper])),
  });
  const long = (value: bigint) => boundOf('INT64', value, 'lower')!;
  const text = (value: string) => Buffer.from(value, 'utf8');
  const bounded = file({ 1: [long(1n), long(10n)], 2: [text('a'), text('c')] });

  it('skips a file when, for some key column, none of the run’s values lies in its bounds (a composite key)', () => {
    const keys = (...rows: [bigint, string][]) => {
      const values = new RunKeyValues(['INT64', 'STRING']);
      for (const row of rows) values.add(row);
      return values;
    };
    expect(keys([5n, 'b']).mayBeIn(bounded, [1, 2])).toBe(true);
    expect(keys([1n, 'a']).mayBeIn(bounded, [1, 2])).toBe(true);
    expect(keys([10n, 'c']).mayBeIn(bounded, [1, 2])).toBe(true);
    expect(keys([5n, 'z']).mayBeIn(bounded, [1, 2])).toBe(false);
    expect(keys([11n, 'b']).mayBeIn(bounded, [1, 2])).toBe(false);
    expect(keys([0n, 'b'], [11n, 'b']).mayBeIn(bounded, [1, 2])).toBe(false);
    // Each column has a value inside (5 and "b"), though no key of the run is (5, "z") and (12, "b"): read, as bounds cannot tell.
    expect(keys([5n, 'z'], [12n, 'b']).mayBeIn(bounded, [1, 2])).toBe(true);
    // A truncated upper bound ("c" raised) still holds the longer strings below it.
    expect(keys([5n, 'bzzzzzzzzzzzzzzzzzzzzzzz']).mayBeIn(bounded, [1, 2])).toBe(true);
  });

  it('reads a file without bounds for the key (another writer’s, or one written before bounds were)', () => {
    const values = new RunKeyValues(['INT64']);
    values.add([99n]);
    expect(values.mayBeIn(file({}), [1])).toBe(true);
    expect(values.mayBeIn(bounded, [1])).toBe(false);
    // Only a lower bound: unbounded above.
    expect(values.mayBeIn({ ...bounded, upperBounds: new Map() }, [1])).toBe(true);
  });
});
