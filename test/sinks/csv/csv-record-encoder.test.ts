import fc from 'fast-check';
import { stringify } from 'csv-stringify/sync';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CSV_DIALECT } from '../../../src/sinks/csv/csv-dialect.js';
import { CsvRecordEncoder } from '../../../src/sinks/csv/csv-record-encoder.js';
import type { TypedRow, TypedValue } from '../../../src/transform/column.js';
import type { ColumnType } from '../../../src/value-types/column-types.js';
import { column, referenceCsv } from './csv-test-support.js';

// Counts what csv-stringify is asked to encode, to show which strings the encoder sends it.
const stringifyCalls = vi.hoisted(() => ({ values: [] as unknown[] }));
vi.mock('csv-stringify/sync', async (importOriginal) => {
  const original = await importOriginal<typeof import('csv-stringify/sync')>();
  return {
    ...original,
    stringify: (records: unknown[][], options: unknown) => {
      for (const record of records) stringifyCalls.values.push(...record);
      return original.stringify(records as never, options as never);
    },
  };
});
afterEach(() => {
  stringifyCalls.values = [];
});

/** The encoder's records for `rows`, written in batches of `batchSize` as the sink writes pages. */
function encodeInBatches(encoder: CsvRecordEncoder, rows: readonly TypedRow[], batchSize: number): string {
  let text = '';
  for (let start = 0; start < rows.length; start += batchSize) text += encoder.encode(rows.slice(start, start + batchSize));
  return text;
}

function headerLine(headers: readonly string[]): string {
  return stringify([headers], CSV_DIALECT);
}

const tricky = fc.constantFrom('"', ',', '\r', '\n', '\r\n', ' ', '🔥', '\u0000', '""', '', 'a', 'resolved');
const text = fc.string({ unit: fc.oneof(tricky, fc.string({ unit: 'binary', minLength: 1, maxLength: 1 })), maxLength: 6 });
/** Strings drawn from a few: a column whose values repeat (status, type). */
const repeating = fc.constantFrom('resolved', 'open', '', 'a,b', 'say "hi"', 'two\r\nlines', 'nul\u0000here', '🔥');
const valueOf: Record<ColumnType, fc.Arbitrary<TypedValue>> = {
  FLOAT64: fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constantFrom(0, 1e21, 1.5e-7, 5e-324)),
  INT64: fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
  NUMERIC: fc.constantFrom('0', '-12.5', '0.000000001', '99999999999999999999999999999.999999999'),
  STRING: fc.oneof(text, repeating),
  TIMESTAMP: fc.integer({ min: -62_135_596_800_000, max: 253_402_300_799_999 }),
  DATE: fc.constantFrom('0001-01-01', '2024-02-29', '9999-12-31'),
};
const TYPES = Object.keys(valueOf) as ColumnType[];

describe('CsvRecordEncoder', () => {
  it('writes the bytes csv-stringify writes for whole rows, whatever the batches (property)', () => {
    // Up to 600 rows in batches of up to 300: enough lookups for a column to switch between
    // remembering strings and encoding every value, in both directions.
    const table = fc
      .array(fc.constantFrom(...TYPES), { minLength: 1, maxLength: 6 })
      .chain((types) =>
        fc.tuple(
          fc.constant(types),
          fc.array(fc.tuple(...types.map((type) => fc.option(valueOf[type], { nil: null, freq: 5 }))), { maxLength: 600 }),
          fc.integer({ min: 1, max: 300 }),
        ),
      );
    fc.assert(
      fc.property(table, ([types, rows, batchSize]) => {
        const columns = types.map((type, index) => column(`c${index}`, type));
        const encoded = headerLine(columns.map((c) => c.header)) + encodeInBatches(new CsvRecordEncoder(columns), rows as TypedRow[], batchSize);
        expect(encoded).toBe(referenceCsv(columns, rows as TypedRow[]));
      }),
      { numRuns: 150 },
    );
  });

  it('stays exact when a column turns from distinct values to repeating ones and back', () => {
    const columns = [column('Name', 'STRING'), column('Status', 'STRING')];
    const distinct = (batch: number) => Array.from({ length: 500 }, (_, i): TypedRow => [`incident ${batch}-${i}, "quoted"`, i % 2 ? 'open' : 'resolved']);
    const repeated = () => Array.from({ length: 500 }, (_, i): TypedRow => [i % 3 ? 'same' : 'same, with comma', null]);
    const rows = [...distinct(0), ...distinct(1), ...Array.from({ length: 40 }, repeated).flat(), ...distinct(2), ...distinct(3)];
    const encoded = headerLine(['Name', 'Status']) + encodeInBatches(new CsvRecordEncoder(columns), rows, 500);
    expect(encoded).toBe(referenceCsv(columns, rows));
  });

  it('asks csv-stringify once for each distinct string of a repeating column, not once per row', () => {
    const encoder = new CsvRecordEncoder([column('Status', 'STRING'), column('Count', 'FLOAT64')]);
    const statuses = ['resolved', 'open', 'needs, "quoting"'];
    for (let page = 0; page < 10; page++) {
      encoder.encode(Array.from({ length: 1000 }, (_, i): TypedRow => [statuses[i % 3]!, i]));
    }
    expect(stringifyCalls.values).toEqual(statuses);
  });

  it('sends each value of a column of distinct values once, and keeps none of them after the batch', () => {
    const encoder = new CsvRecordEncoder([column('Name', 'STRING')]);
    const page = (n: number) => Array.from({ length: 1000 }, (_, i): TypedRow => [`name ${n}-${i}`]);
    for (let n = 0; n < 5; n++) encoder.encode(page(n));
    expect(stringifyCalls.values).toHaveLength(5000);
    expect(new Set(stringifyCalls.values).size).toBe(5000);
  });

  it('writes numbers, bigints and timestamps without asking csv-stringify', () => {
    const encoder = new CsvRecordEncoder([column('N', 'FLOAT64'), column('I', 'INT64'), column('T', 'TIMESTAMP')]);
    expect(
      encoder.encode([
        [1e21, 9007199254740993n, 0],
        [-1.5, -1n, 1_700_000_000_123],
      ]),
    ).toBe('1e+21,9007199254740993,1970-01-01T00:00:00.000Z\r\n-1.5,-1,2023-11-14T22:13:20.123Z\r\n');
    expect(stringifyCalls.values).toEqual([]);
  });

  it('relies on number text that the dialect never quotes: csv-stringify leaves every such text as it is (property)', () => {
    // The encoder writes FLOAT64, INT64 and TIMESTAMP text itself; this is csv-stringify agreeing
    // that, in this dialect, such text needs no quoting.
    const numberText = fc.oneof(
      fc.double({ noNaN: true, noDefaultInfinity: true }).map(String),
      fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map(String),
      fc.integer({ min: -62_135_596_800_000, max: 253_402_300_799_999 }).map((ms) => new Date(ms).toISOString()),
    );
    fc.assert(
      fc.property(numberText, (textOfNumber) => {
        expect(stringify([[textOfNumber]], CSV_DIALECT)).toBe(`${textOfNumber}\r\n`);
      }),
      { numRuns: 500 },
    );
  });
});
