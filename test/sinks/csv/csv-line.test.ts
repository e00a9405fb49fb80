import { stringify } from 'csv-stringify/sync';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CSV_DIALECT, csvHeaderLine, csvLineFormatter } from '../../../src/sinks/csv/csv-dialect.js';
import type { TypedRow } from '../../../src/transform/column.js';
import { MAX_EPOCH_MS, MIN_EPOCH_MS } from '../../../src/transform/values/civil-date.js';
import { column } from './csv-test-support.js';

// Every character with a meaning in CSV, mixed with arbitrary Unicode.
const tricky = fc.constantFrom('"', ',', '\r', '\n', '\r\n', ' ', '\t', '🔥', 'עברית', '\u2028', '""', ',"', '');
const text = fc.string({ unit: fc.oneof(tricky, fc.string({ unit: 'binary', minLength: 1, maxLength: 1 })), maxLength: 20 });
const instant = fc.integer({ min: MIN_EPOCH_MS, max: MAX_EPOCH_MS });
const columns = [
  column('s', 'STRING'),
  column('f', 'FLOAT64'),
  column('i', 'INT64'),
  column('n', 'NUMERIC'),
  column('t', 'TIMESTAMP'),
  column('d', 'DATE'),
];
const row = fc.tuple(
  fc.option(text, { nil: null }),
  fc.option(fc.double({ noNaN: true, noDefaultInfinity: true }), { nil: null }),
  fc.option(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), { nil: null }),
  fc.option(fc.constantFrom('0', '-12.5', '123456789.000000001'), { nil: null }),
  fc.option(instant, { nil: null }),
  fc.option(fc.constantFrom('0001-01-01', '2026-07-01', '9999-12-31'), { nil: null }),
);

/** What the sink wrote with csv-stringify before the hand-written encoder replaced it. */
function reference(rows: readonly TypedRow[]): string {
  const records = rows.map((values) =>
    values.map((value, index) => {
      if (value === null) return null;
      return columns[index]!.type === 'TIMESTAMP' ? new Date(value as number).toISOString() : String(value);
    }),
  );
  return stringify(records, CSV_DIALECT);
}

describe('csvLineFormatter', () => {
  it('writes exactly what csv-stringify writes with CSV_DIALECT (property)', () => {
    fc.assert(
      fc.property(fc.array(row, { maxLength: 30 }), (rows) => {
        const toLine = csvLineFormatter(columns);
        expect(rows.map((values) => toLine(values as TypedRow)).join('')).toBe(reference(rows as TypedRow[]));
      }),
      { numRuns: 500 },
    );
  });

  it('writes timestamps of consecutive rows on the same and on different days like toISOString', () => {
    const toLine = csvLineFormatter([column('t', 'TIMESTAMP')]);
    const instants = [MIN_EPOCH_MS, -1, 0, 1, 86_399_999, 86_400_000, Date.UTC(2024, 1, 29, 23, 59, 59, 999), MAX_EPOCH_MS];
    for (const ms of [...instants, ...instants.reverse()]) expect(toLine([ms])).toBe(`${new Date(ms).toISOString()}\r\n`);
  });
});

describe('csvHeaderLine', () => {
  it('quotes headers as csv-stringify does (property)', () => {
    fc.assert(
      fc.property(fc.array(text, { minLength: 1, maxLength: 8 }), (headers) => {
        expect(csvHeaderLine(headers)).toBe(stringify([headers], CSV_DIALECT));
      }),
    );
  });
});
