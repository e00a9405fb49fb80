import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { TypedRow } from '../../../src/transform/column.js';
import { column, commit, makeContext, makeSink, parseCsv, readText } from './csv-test-support.js';
import { tempDirForAll } from '../../support/temp-dir-hooks.js';

// Text that stresses CSV quoting: full Unicode (astral emoji, RTL, combining marks, bidi controls)
// mixed with every character that has a meaning in CSV, and leading/trailing spaces.
const tricky = fc.constantFrom('"', ',', '\r', '\n', '\r\n', ' ', '\t', '🔥', '👩‍👩‍👧', 'עברית', 'مرحبا', '\u202e', 'e\u0301', '\u0000', '""', ',"');
const text = fc.string({ unit: fc.oneof(tricky, fc.string({ unit: 'binary', minLength: 1, maxLength: 1 })), maxLength: 30 });
const nullableText = fc.option(text, { nil: null, freq: 4 });
const finiteDouble = fc.double({ noNaN: true, noDefaultInfinity: true });
const row = fc.tuple(
  nullableText,
  nullableText,
  fc.option(finiteDouble, { nil: null }),
  fc.option(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), { nil: null }),
);

const directory = tempDirForAll('tilehouse-csv-');

describe('CSV round trip', () => {
  it('reads back every string, null, empty string and number exactly (property)', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.tuple(text, text), fc.array(row, { maxLength: 20 }), fc.boolean(), async (headers, rows, gzip) => {
        run += 1;
        const columns = [column(headers[0], 'STRING'), column(headers[1], 'STRING'), column('f', 'FLOAT64'), column('i', 'INT64')];
        const sink = makeSink(directory.path, { path: `run-${run}.csv`, gzip });
        const writer = await sink.open(makeContext(columns, { runId: `run-${run}` }));
        await writer.writeRows(rows as TypedRow[]);
        const result = await commit(writer);

        const [header, ...records] = parseCsv(await readText(result.target, gzip));
        expect(header).toEqual([...headers, 'f', 'i']);
        expect(records).toHaveLength(rows.length);
        records.forEach((record, index) => {
          const [a, b, f, i] = rows[index]!;
          expect(record[0]).toBe(a);
          expect(record[1]).toBe(b);
          expect(record[2] === null ? null : Number(record[2])).toBe(f === null ? null : f === 0 ? 0 : f);
          expect(record[3] === null ? null : BigInt(record[3]!)).toBe(i);
        });
      }),
      { numRuns: 150 },
    );
  });

  it('keeps a one-column row holding the empty string distinct from one holding null', async () => {
    const writer = await makeSink(directory.path, { path: 'single.csv' }).open(makeContext([column('only', 'STRING')]));
    await writer.writeRows([[''], [null], ['x']]);
    await commit(writer);
    expect(parseCsv(await readText(join(directory.path, 'single.csv')))).toEqual([['only'], [''], [null], ['x']]);
  });
});
