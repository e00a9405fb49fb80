import fc from 'fast-check';
import { expect, it } from 'vitest';
import type { TypedRow } from '../../../src/transform/column.js';
import { describeWithEmulator } from '../../support/bigquery-emulator.js';
import { readTable, type ReadCell } from '../../support/bigquery-read.js';
import { column, runContext, useEmulatorSinkSetup } from './sink-fixtures.js';

const columns = [
  column('id', 'INT64'),
  column('float', 'FLOAT64'),
  column('integer', 'INT64'),
  column('decimal', 'NUMERIC'),
  column('text', 'STRING'),
  column('at', 'TIMESTAMP'),
  column('day', 'DATE'),
];

// BigQuery's ranges, written out here rather than imported from the sink.
const MIN_TIMESTAMP_MS = -62_135_596_800_000; // 0001-01-01T00:00:00.000Z
const MAX_TIMESTAMP_MS = 253_402_300_799_999; // 9999-12-31T23:59:59.999Z
const MS_PER_DAY = 86_400_000;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

// Pieces that break naive writers and readers: quoting, separators, line ends, surrounding
// space, right-to-left text, emoji with joiners and skin tones, combining marks, BOM, NUL,
// Unicode line separators, noncharacters, and JSON-looking text.
const AWKWARD_PIECES = [
  '"',
  "'",
  ',',
  ';',
  '\\',
  '\\"',
  '\r',
  '\n',
  '\r\n',
  '\t',
  ' ',
  '  ',
  '\u00a0',
  'שלום',
  'مرحبا بالعالم',
  '\u202eRTL override',
  '\u200f',
  '🚒',
  '👩🏽‍🚒',
  '👨‍👩‍👧‍👦',
  '🏳️‍🌈',
  '🇩🇪',
  'e\u0301',
  'é',
  '\ufeff',
  '\u0000',
  '\u2028',
  '\u2029',
  '\uffff',
  '\u{10ffff}',
  'null',
  'NULL',
  '""',
  '{"a":1}',
  '[1,2]',
  '1e21',
  '-0',
  'true',
  'Zürich',
  '東京',
  '\u{1d11e}',
];

const awkwardText = fc
  .array(fc.oneof(fc.constantFrom(...AWKWARD_PIECES), fc.string({ unit: 'grapheme', maxLength: 4 })), { maxLength: 8 })
  .map((pieces) => pieces.join(''));

const text = fc.oneof(awkwardText, fc.string({ unit: 'binary', maxLength: 40 }), fc.constantFrom('', ' ', ' leading', 'trailing ', '\r\n', '"'));

const float = fc.oneof(
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(-0, 0, 1e21, -1e21, 1e-7, 5e-324, -Number.MAX_VALUE, Number.MAX_VALUE, 2 ** 53, 2 ** 53 + 2, 0.1, 1 / 3),
);

const integer = fc.oneof(
  fc.bigInt({ min: INT64_MIN, max: INT64_MAX }),
  fc.bigInt({ min: 2n ** 53n - 2n, max: 2n ** 53n + 2n }).chain((n) => fc.constantFrom(n, -n)),
  fc.constantFrom(INT64_MIN, INT64_MAX, 0n, -1n),
);

// Canonical NUMERIC text (the transform's contract): no leading zeros, no trailing fractional
// zeros, zero is "0"; at most 29 integer and 9 fractional digits.
const decimal = fc
  .tuple(fc.boolean(), fc.bigInt({ min: 0n, max: 10n ** 29n - 1n }), fc.bigInt({ min: 0n, max: 10n ** 9n - 1n }))
  .map(([negative, whole, fraction]) => {
    const fractionText = fraction.toString().padStart(9, '0').replace(/0+$/, '');
    const magnitude = fractionText === '' ? whole.toString() : `${whole}.${fractionText}`;
    return negative && magnitude !== '0' ? `-${magnitude}` : magnitude;
  });

const timestamp = fc.oneof(
  fc.integer({ min: MIN_TIMESTAMP_MS, max: MAX_TIMESTAMP_MS }),
  // Around the epoch, leap days and DST changes of recent years: where real data lives.
  fc.integer({ min: Date.UTC(1969, 11, 31), max: Date.UTC(2100, 0, 1) }),
  fc.constantFrom(MIN_TIMESTAMP_MS, MAX_TIMESTAMP_MS, 0, -1, Date.UTC(2024, 1, 29, 23, 59, 59, 999)),
);

const day = fc
  .integer({ min: Math.floor(MIN_TIMESTAMP_MS / MS_PER_DAY), max: Math.floor(MAX_TIMESTAMP_MS / MS_PER_DAY) })
  .map((days) => new Date(days * MS_PER_DAY).toISOString().slice(0, 10));

/** Roughly one cell in five is null, so empty string and null meet often in the text column. */
const orNull = <T>(arbitrary: fc.Arbitrary<T>) => fc.option(arbitrary, { freq: 5 });

type GeneratedRow = [number | null, bigint | null, string | null, string | null, number | null, string | null];

const row: fc.Arbitrary<GeneratedRow> = fc.tuple(orNull(float), orNull(integer), orNull(decimal), orNull(text), orNull(timestamp), orNull(day));
const batch = fc.array(row, { minLength: 1, maxLength: 150 });

/** A sink value as BigQuery should give it back, in `readTable`'s shape, converted independently. */
function expected(id: number, values: GeneratedRow): Record<string, ReadCell> {
  const [f, i, n, s, t, d] = values;
  return {
    id: BigInt(id),
    // JSON has no negative zero (JSON.stringify(-0) is "0"), and the transform already folds -0 into 0.
    float: f === null ? null : f === 0 ? 0 : f,
    integer: i,
    decimal: n,
    text: s,
    at: t === null ? null : new Date(t).toISOString(),
    day: d,
  };
}

describeWithEmulator('BigQuerySink value fidelity', (endpoint) => {
  const bq = useEmulatorSinkSetup(endpoint, 'tilehouse_fidelity');

  it('reads back every typed value as it was written: unicode, quotes, line ends, empty vs null, -0, 1e21, INT64 beyond 2^53, the whole TIMESTAMP and DATE range', async () => {
    const sink = bq.harness.sink({ table: 'fidelity', writeMode: 'replace' });
    await fc.assert(
      fc.asyncProperty(batch, async (generated) => {
        const rows: TypedRow[] = generated.map((values, index) => [BigInt(index), ...values]);
        await bq.harness.run(sink, runContext({ columns }), [rows.slice(0, 50), rows.slice(50)]);

        const loaded = await readTable(bq.client, { projectId: endpoint.projectId, dataset: bq.dataset, table: 'fidelity' }, 'id');
        expect(loaded).toEqual(generated.map((values, index) => expected(index, values)));
      }),
      // Each run is one load, one copy and one query against the emulator (~200-400 ms); 15 batches of
      // up to 150 rows cover the generators well and keep the test at a few seconds.
      { numRuns: 15 },
    );
    expect(await bq.harness.leftovers()).toEqual([]);
    // ~15 s alone; the suite's 30 s default is too tight when the 2 cores are shared.
  }, 90_000);
});
