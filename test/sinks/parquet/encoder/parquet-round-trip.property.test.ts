import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import type { TypedRow, TypedValue } from '../../../../src/transform/column.js';
import type { ColumnType } from '../../../../src/value-types/column-types.js';
import type { ParquetColumnSpec } from '../../../../src/sinks/parquet/encoder/parquet-encoder.js';
import { cleanUpFiles, readBack, writeParquet } from './duckdb-read-back.js';

afterAll(cleanUpFiles);

const SCALE = 10n ** 9n;

/** A NUMERIC's canonical text from its value × 10^9, built with bigints (not the encoder's limbs). */
function decimalText(scaled: bigint): string {
  const negative = scaled < 0n;
  const magnitude = negative ? -scaled : scaled;
  const fraction = (magnitude % SCALE).toString().padStart(9, '0').replace(/0+$/, '');
  const body = `${magnitude / SCALE}${fraction ? `.${fraction}` : ''}`;
  return negative ? `-${body}` : body;
}

const MIN_MS = -62135596800000; // 0001-01-01T00:00:00Z
const MAX_MS = 253402300799999; // 9999-12-31T23:59:59.999Z

const VALUES: Record<ColumnType, fc.Arbitrary<TypedValue>> = {
  INT64: fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
  FLOAT64: fc.double({ noNaN: true, noDefaultInfinity: true }),
  NUMERIC: fc.bigInt({ min: -(10n ** 38n) + 1n, max: 10n ** 38n - 1n }).map(decimalText),
  STRING: fc.oneof(
    fc.string({ unit: 'grapheme', maxLength: 40 }),
    fc.constantFrom('', 'null', 'NULL'),
    fc.string({ unit: 'grapheme-ascii', minLength: 33, maxLength: 300 }),
  ),
  TIMESTAMP: fc.integer({ min: MIN_MS, max: MAX_MS }),
  DATE: fc.integer({ min: MIN_MS, max: MAX_MS }).map((ms) => new Date(ms).toISOString().slice(0, 10)),
};

const TYPES = Object.keys(VALUES) as ColumnType[];

const table = fc.array(fc.constantFrom(...TYPES), { minLength: 1, maxLength: 7 }).chain((types) => {
  const columns: ParquetColumnSpec[] = types.map((type, index) => ({ name: `c${index}_${type.toLowerCase()}`, type }));
  const row = fc.tuple(...types.map((type) => fc.option(VALUES[type], { nil: null, freq: 4 })));
  return fc.record({
    columns: fc.constant(columns),
    rows: fc.array(row as fc.Arbitrary<TypedRow>, { maxLength: 80 }),
    cuts: fc.array(fc.nat(80), { maxLength: 4 }),
    rowGroupBytes: fc.integer({ min: 1, max: 4000 }),
    compression: fc.constantFrom('snappy', 'gzip', 'zstd', 'uncompressed' as const),
  });
});

describe('ParquetEncoder round trip (property)', () => {
  it('gives DuckDB back every random typed row, in order, whatever the batches, row group size and codec', async () => {
    await fc.assert(
      fc.asyncProperty(table, async ({ columns, rows, cuts, rowGroupBytes, compression }) => {
        const edges = [...new Set([0, ...cuts.filter((cut) => cut < rows.length), rows.length])].sort((a, b) => a - b);
        const batches = edges.slice(1).map((end, index) => rows.slice(edges[index], end));
        const { path } = writeParquet(columns, batches, { rowGroupBytes, compression });
        expect(await readBack(path, columns)).toEqual(rows);
      }),
      { numRuns: 80 },
    );
  });
});

describe('snappy pages (property)', () => {
  it('round-trips repetitive text: long and overlapping matches, values across 64 KiB fragments and 1 MiB pages', async () => {
    const repetitive = fc
      .tuple(fc.string({ unit: 'grapheme', minLength: 1, maxLength: 12 }), fc.integer({ min: 1, max: 20_000 }), fc.string({ maxLength: 5 }))
      .map(([fragment, times, tail]) => fragment.repeat(times) + tail);
    await fc.assert(
      fc.asyncProperty(fc.array(fc.option(repetitive, { nil: null }), { minLength: 1, maxLength: 40 }), async (values) => {
        const columns: ParquetColumnSpec[] = [{ name: 's', type: 'STRING' }];
        const rows = values.map((value): TypedRow => [value]);
        const { path } = writeParquet(columns, [rows], { compression: 'snappy' });
        expect(await readBack(path, columns)).toEqual(rows);
      }),
      { numRuns: 25 },
    );
  });
});
