import type { BigQuery } from '@google-cloud/bigquery';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { BigQueryLoadError, BigQuerySchemaMismatchError } from '../../../src/sinks/bigquery/bigquery-errors.js';
import type { TypedRow } from '../../../src/transform/column.js';
import { describeWithEmulator, localBigQueryClient, uniqueDatasetId } from '../../support/bigquery-emulator.js';
import { column, runContext, sinkHarness, type SinkHarness } from './sink-fixtures.js';

const columns = [
  column('id', 'INT64'),
  column('rate', 'FLOAT64'),
  column('big', 'INT64'),
  column('amount', 'NUMERIC'),
  column('title', 'STRING'),
  column('opened_at', 'TIMESTAMP'),
  column('opened_on', 'DATE'),
];

const rows: TypedRow[] = [
  [1n, 1.5, 9007199254740993n, '12345678901234567890123456789.123456789', 'Zürich "HQ" \\ line1\nline2 🚒', Date.UTC(2024, 1, 29, 23, 59, 58, 7), '2024-02-29'],
  [2n, -0.000125, -(2n ** 63n), '-0.5', "it's ✓\ttabbed", -62_135_596_800_000, '0001-01-01'],
  [3n, null, null, null, null, null, null],
];

/** The query result in the sink's own value representation, so rows compare one to one. */
function asTyped(row: Record<string, unknown>): TypedRow {
  const text = (value: unknown) => (value === null ? null : String((value as { value?: unknown }).value ?? value));
  return [
    BigInt(text(row.id)!),
    row.rate as number | null,
    row.big === null ? null : BigInt(text(row.big)!),
    row.amount === null ? null : (row.amount as { toFixed(): string }).toFixed(),
    row.title as string | null,
    row.opened_at === null ? null : Date.parse(text(row.opened_at)!),
    text(row.opened_on),
  ];
}

describeWithEmulator('BigQuerySink', (endpoint) => {
  let client: BigQuery;
  let dataset: string;
  let harness: SinkHarness;

  beforeAll(async () => {
    client = localBigQueryClient(endpoint);
    dataset = uniqueDatasetId();
    harness = await sinkHarness(client, dataset);
  });

  afterAll(async () => {
    await harness.cleanup();
  });

  async function select(table: string, orderBy = 'id'): Promise<Record<string, unknown>[]> {
    const [result] = await client.query({ query: `SELECT * FROM \`${endpoint.projectId}.${dataset}.${table}\` ORDER BY ${orderBy}`, wrapIntegers: true });
    return result as Record<string, unknown>[];
  }

  it('loads rows of every type, and reads them back value for value', async () => {
    const sink = harness.sink({ table: 'every_type' });
    const result = await harness.run(sink, runContext({ columns }), [rows.slice(0, 2), rows.slice(2)]);

    expect(result).toMatchObject({
      sink: 'bigquery',
      target: `${endpoint.projectId}.${dataset}.every_type`,
      rows: 3,
      details: { writeMode: 'replace', schemaAction: 'created' },
    });
    expect((await select('every_type')).map(asTyped)).toEqual(rows);
  });

  it('creates the dataset when it is missing', async () => {
    const fresh = uniqueDatasetId();
    const own = await sinkHarness(client, fresh);
    try {
      expect((await client.dataset(fresh).exists())[0]).toBe(false);
      await own.run(own.sink({ table: 'first' }), runContext({ columns: columns.slice(0, 1) }), [[[1n]]]);
      const [metadata] = await client.dataset(fresh).getMetadata();
      expect(metadata.location).toBe('US');
    } finally {
      await own.cleanup();
    }
  });

  it('in replace mode keeps only the latest run', async () => {
    const sink = harness.sink({ table: 'snapshot', writeMode: 'replace' });
    await harness.run(sink, runContext({ columns }), [rows]);
    const second = await harness.run(sink, runContext({ columns }), [rows]);

    expect(second.details).toMatchObject({ schemaAction: 'unchanged' });
    expect((await select('snapshot')).map(asTyped)).toEqual(rows);
  });

  it('in replace mode, a run without rows leaves the table empty', async () => {
    const sink = harness.sink({ table: 'emptied' });
    await harness.run(sink, runContext({ columns }), [rows]);
    const result = await harness.run(sink, runContext({ columns }), [[]]);

    expect(result.rows).toBe(0);
    expect(await select('emptied')).toEqual([]);
  });

  it('in append mode keeps every run, told apart by _run_id and _extracted_at', async () => {
    const sink = harness.sink({ table: 'history', writeMode: 'append' });
    const first = runContext({ columns, runId: 'run-a', startedAt: new Date('2024-03-01T06:00:00.000Z') });
    const second = runContext({ columns, runId: 'run-b', startedAt: new Date('2024-03-02T06:00:00.000Z') });
    await harness.run(sink, first, [rows]);
    await harness.run(sink, second, [rows]);

    const loaded = await select('history', '_run_id, id');
    expect(loaded).toHaveLength(2 * rows.length);
    expect(loaded.map((row) => row._run_id)).toEqual(['run-a', 'run-a', 'run-a', 'run-b', 'run-b', 'run-b']);
    expect(loaded.map((row) => (row._extracted_at as { value: string }).value)).toEqual([
      ...Array(3).fill('2024-03-01T06:00:00.000Z'),
      ...Array(3).fill('2024-03-02T06:00:00.000Z'),
    ]);
    expect(loaded.filter((row) => row._run_id === 'run-b').map(asTyped)).toEqual(rows);
  });

  it('with a frozen schema, fails on changed columns with the diff and leaves the table as it was', async () => {
    const sink = harness.sink({ table: 'frozen', schema: 'freeze' });
    await harness.run(sink, runContext({ columns }), [rows]);

    const changedColumns = [
      ...columns.filter((c) => c.name !== 'title' && c.name !== 'rate'),
      column('rate', 'STRING'),
      column('region', 'STRING'),
    ];
    const attempt = harness.run(sink, runContext({ columns: changedColumns }), [[changedColumns.map(() => null)]]);

    const error = await attempt.then(
      () => expect.unreachable('the load should have been refused'),
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(BigQuerySchemaMismatchError);
    expect((error as BigQuerySchemaMismatchError).code).toBe('bigquery_schema_mismatch');
    expect((error as Error).message).toContain('added: region (STRING); removed: title (STRING); retyped: rate FLOAT64 -> STRING');
    expect((error as Error).message).toContain(`${dataset}.frozen`);
    expect((await select('frozen')).map(asTyped)).toEqual(rows);
    expect(await harness.leftovers()).toEqual([]);
  });

  it('when BigQuery refuses the load, fails naming table and job, and leaves the target and no temp file', async () => {
    // A view with the tile's columns passes the schema contract, but BigQuery (and the emulator)
    // refuses to load into a view.
    const viewColumns = [column('id', 'INT64'), column('title', 'STRING')];
    await client.dataset(dataset).createTable('refusing_view', {
      view: { query: "SELECT 1 AS id, 'kept' AS title", useLegacySql: false },
      schema: { fields: [{ name: 'id', type: 'INT64' }, { name: 'title', type: 'STRING' }] },
    });
    const sink = harness.sink({ table: 'refusing_view' });

    const error = await harness.run(sink, runContext({ columns: viewColumns, runId: 'run-refused' }), [[[2n, 'new']]]).then(
      () => expect.unreachable('the load should have been refused'),
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(BigQueryLoadError);
    expect((error as BigQueryLoadError).code).toBe('bigquery_load_failed');
    expect((error as Error).message).toMatch(new RegExp(`tile tile-42: load job tilehouse_open_incidents_${dataset}_refusing_view_run-refused into \\S+refusing_view failed: .*view`));
    expect((await select('refusing_view')).map((row) => row.title)).toEqual(['kept']);
    expect(await harness.leftovers()).toEqual([]);
  });

  it('leaves no temp file behind after a successful load or an abort', async () => {
    const sink = harness.sink({ table: 'tidy' });
    await harness.run(sink, runContext({ columns }), [rows]);
    const writer = await sink.open(runContext({ columns }));
    await writer.writeRows(rows);
    expect(await harness.leftovers()).toHaveLength(1);
    await writer.abort();

    expect(await harness.leftovers()).toEqual([]);
    expect((await select('tidy')).map(asTyped)).toEqual(rows);
  });
});
