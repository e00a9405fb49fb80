import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BigQuery } from '@google-cloud/bigquery';
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { rowEncoder } from '../../../src/sinks/bigquery/encode-row.js';
import { parseExportPage } from '../../../src/source/export-endpoint/export-response.js';
import { parseJsonBody } from '../../../src/source/json-body.js';
import type { TypedRow } from '../../../src/transform/column.js';
import { toColumns } from '../../../src/transform/columns.js';
import { toTypedRows } from '../../../src/transform/typed-rows.js';
import { describeWithEmulator, localBigQueryClient, uniqueDatasetId } from '../../support/bigquery-emulator.js';
import { readTable } from '../../support/bigquery-read.js';

const HEADERS = ['Id', 'Amount', 'Count', 'Label'];

/** Response body text → typed rows, as the pipeline does it. */
function typedRows(text: string) {
  const body = parseJsonBody(text);
  if (!body.ok) throw new Error(body.error);
  const page = parseExportPage(body.value, 0);
  if (!page.ok) throw new Error(page.problem);
  const { columns } = toColumns(page.page.headers, page.page.dataTypes, { Id: { type: 'INT64' }, Amount: { type: 'NUMERIC' }, Count: { type: 'INT64' } });
  const { rows } = toTypedRows(page.page.rows, columns, { timezone: 'UTC', onInvalidValue: 'fail', jobName: 'amounts', pageNumber: 0, firstRowIndex: 0 });
  return { columns, rows };
}

const digitString = (min: number, max: number) => fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: min, maxLength: max });

/** A NUMERIC value (≤ 29 integer and ≤ 9 fractional digits) as canonical text, which is also a JSON number literal. */
const numeric = fc
  .tuple(fc.boolean(), fc.oneof(digitString(0, 29), digitString(20, 29)), fc.oneof(digitString(0, 9), digitString(9, 9)))
  .map(([negative, wholeDigits, fractionDigits]) => {
    const whole = wholeDigits.replace(/^0+/, '') || '0';
    const fraction = fractionDigits.replace(/0+$/, '');
    const magnitude = fraction === '' ? whole : `${whole}.${fraction}`;
    return negative && magnitude !== '0' ? `-${magnitude}` : magnitude;
  });

const int64 = fc.oneof(
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
  fc.bigInt({ min: 2n ** 53n - 2n, max: 2n ** 53n + 2n }).chain((n) => fc.constantFrom(n, -n)),
);

const EDGES: [string, bigint][] = [
  ['99999999999999999999999999999.999999999', 2n ** 63n - 1n],
  ['-99999999999999999999999999999.999999999', -(2n ** 63n)],
  ['12345678901234567.5', 2n ** 53n + 1n],
  ['0.000000001', -(2n ** 53n) - 1n],
];

// The load file is written by the sink's own row encoder and loaded with a plain load job: what is
// under test is that the exact text survives encoding and BigQuery's parsing of it, not how the
// sink stages and publishes a run (the sink's own emulator tests cover that).
describeWithEmulator('number exactness into BigQuery', (endpoint) => {
  let client: BigQuery;
  let dataset: string;
  let directory: string;

  beforeAll(async () => {
    client = localBigQueryClient(endpoint);
    dataset = uniqueDatasetId('tilehouse_exact');
    await client.createDataset(dataset);
    directory = await mkdtemp(join(tmpdir(), 'tilehouse-exact-'));
  });
  afterAll(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  it('loads NUMERIC of up to 38 significant digits and INT64 beyond 2^53 sent as JSON numbers, and reads them back unchanged (property, 50 values per load)', {
    timeout: 120_000,
  }, async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(numeric, int64), { minLength: 46, maxLength: 46 }), async (generated) => {
        const values = [...EDGES, ...generated];
        const rowTexts = values.map(([amount, count], index) => `[${index},${amount},${count},${amount}]`);
        const text =
          `{"ok":true,"result":{"navigation":{"hasPrev":false,"hasNext":false,"rowsCount":${values.length},"totalRows":${values.length}},` +
          `"headers":${JSON.stringify(HEADERS)},"dataTypes":["number","number","number","text"],"rows":[${rowTexts.join(',')}]}}`;
        const { columns, rows } = typedRows(text);
        const file = join(directory, `run-${(run += 1)}.ndjson`);
        await writeFile(file, (rows as TypedRow[]).map(rowEncoder(columns)).join(''));
        await client
          .dataset(dataset)
          .table('exact')
          .load(file, {
            sourceFormat: 'NEWLINE_DELIMITED_JSON',
            writeDisposition: 'WRITE_TRUNCATE',
            schema: { fields: columns.map((column) => ({ name: column.name, type: column.type, mode: 'NULLABLE' })) },
          });

        const loaded = await readTable(client, { projectId: endpoint.projectId, dataset, table: 'exact' }, 'id');
        expect(loaded).toEqual(values.map(([amount, count], index) => ({ id: BigInt(index), amount, count, label: loaded[index]?.label })));
        // STRING: the literal as sent when a double cannot hold it, else JavaScript's text of the same number.
        loaded.forEach((row, index) => expect([values[index]![0], String(Number(values[index]![0]))]).toContain(row.label));
      }),
      // One load job and one query per run; no shrinking against the emulator (each step is a load).
      { numRuns: 3, endOnFailure: true },
    );
  });
});
