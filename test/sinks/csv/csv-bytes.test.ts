import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { TypedRow, TypedValue } from '../../../src/transform/column.js';
import type { ColumnType } from '../../../src/value-types/column-types.js';
import { column, commit, makeContext, makeSink, readText, referenceCsv } from './csv-test-support.js';
import { tempDirForAll } from '../../support/temp-dir-hooks.js';

const tricky = fc.constantFrom('"', ',', '\r', '\n', '\r\n', ' ', '\t', '🔥', 'עברית', '\u0000', '""', ',"', '=1+1', '-', '');
const text = fc.string({ unit: fc.oneof(tricky, fc.string({ unit: 'binary', minLength: 1, maxLength: 1 })), maxLength: 20 });
const MIN_MS = -62_135_596_800_000;
const MAX_MS = 253_402_300_799_999;
const valueOf: Record<ColumnType, fc.Arbitrary<TypedValue>> = {
  FLOAT64: fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constantFrom(0, -0, 1e21, 1.5e-7, 123456789012345680000)),
  INT64: fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
  NUMERIC: fc.constantFrom('0', '-12.5', '1000000000000000000000', '0.000000001', '99999999999999999999999999999.999999999'),
  STRING: text,
  TIMESTAMP: fc.oneof(fc.integer({ min: MIN_MS, max: MAX_MS }), fc.integer({ min: 1_700_000_000_000, max: 1_700_000_000_000 + 86_400_000 * 3 })),
  DATE: fc.constantFrom('0001-01-01', '2024-02-29', '9999-12-31'),
};
const TYPES = Object.keys(valueOf) as ColumnType[];

const directory = tempDirForAll('tilehouse-csv-');

describe('CSV bytes', () => {
  it('are the reference encoding of every column type, byte for byte, across write calls (property)', async () => {
    let run = 0;
    const table = fc
      .array(fc.tuple(fc.constantFrom(...TYPES), text), { minLength: 1, maxLength: 8 })
      .chain((specs) =>
        fc.tuple(
          fc.constant(specs),
          fc.array(fc.tuple(...specs.map(([type]) => fc.option(valueOf[type], { nil: null, freq: 4 }))), { maxLength: 30 }),
          fc.integer({ min: 1, max: 4 }),
        ),
      );
    await fc.assert(
      fc.asyncProperty(table, fc.boolean(), async ([specs, rows, batches], gzip) => {
        run += 1;
        const columns = specs.map(([type, header]) => column(header, type));
        const writer = await makeSink(directory.path, { path: `bytes-${run}.csv`, gzip }).open(makeContext(columns, { runId: `bytes-${run}` }));
        // Several writeRows calls, as pages arrive: the TIMESTAMP day cache carries over.
        const size = Math.ceil(rows.length / batches) || 1;
        for (let start = 0; start < rows.length; start += size) await writer.writeRows(rows.slice(start, start + size) as TypedRow[]);
        const result = await commit(writer);
        expect(await readText(result.target, gzip)).toBe(referenceCsv(columns, rows as TypedRow[]));
      }),
      { numRuns: 200 },
    );
  });

  it('are the reference encoding for a page longer than one stringify chunk', async () => {
    const columns = [column('When', 'TIMESTAMP'), column('Text', 'STRING'), column('N', 'FLOAT64')];
    const rows: TypedRow[] = Array.from({ length: 2500 }, (_, i) => [
      1_700_000_000_000 + i * 7_919_000,
      i % 7 === 0 ? '' : `a,"${i}"\n`,
      i % 5 === 0 ? null : i / 3,
    ]);
    const writer = await makeSink(directory.path, { path: 'long.csv' }).open(makeContext(columns, { runId: 'long' }));
    await writer.writeRows(rows);
    const result = await commit(writer);
    expect(await readText(result.target)).toBe(referenceCsv(columns, rows));
  });
});
