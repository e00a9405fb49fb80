// The sink against the BigQuery emulator, through the real client. The emulator has no copy jobs,
// so these tests reach it through startEmulatorWithCopyJobs (test/support/bigquery-fake-server.ts),
// a proxy that carries out copies with the emulator's own SQL and passes everything else through:
// staging loads, tables, schemas and rows are the emulator's. What the emulator cannot show at all
// (partition decorators, columns added by tables.patch, 409 on a reused job id, a job still
// running when a signal comes, jobs.cancel) is tested on the exact requests in
// bigquery-sink.requests.test.ts.
import { expect, it } from 'vitest';
import { BigQueryPublishError, BigQuerySchemaMismatchError } from '../../../src/sinks/bigquery/bigquery-errors.js';
import { STAGING_TABLE_LIFETIME_MS } from '../../../src/sinks/bigquery/staging-table.js';
import type { TypedRow } from '../../../src/transform/column.js';
import { describeWithEmulator, uniqueDatasetId } from '../../support/bigquery-emulator.js';
import { stagingTables, tableExists } from '../../support/bigquery-read.js';
import { column, runContext, sinkHarness, useEmulatorSinkSetup } from './sink-fixtures.js';

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
  const bq = useEmulatorSinkSetup(endpoint);

  async function select(table: string, orderBy = 'id'): Promise<Record<string, unknown>[]> {
    const [result] = await bq.client.query({ query: `SELECT * FROM \`${endpoint.projectId}.${bq.dataset}.${table}\` ORDER BY ${orderBy}`, wrapIntegers: true });
    return result as Record<string, unknown>[];
  }

  it('loads rows of every type through the staging table, and reads them back value for value', async () => {
    const sink = bq.harness.sink({ table: 'every_type' });
    const result = await bq.harness.run(sink, runContext({ columns, runId: 'run-types' }), [rows.slice(0, 2), rows.slice(2)]);

    expect(result).toEqual({
      sink: 'bigquery',
      target: `${endpoint.projectId}.${bq.dataset}.every_type`,
      rows: 3,
      details: {
        jobId: `tilehouse_open_incidents_${bq.dataset}_every_type_run-types_publish`,
        loadJobId: `tilehouse_open_incidents_${bq.dataset}_every_type_run-types_load`,
        writeMode: 'replace',
        schemaAction: 'created',
        publishedBy: 'copy',
        sentRows: 3,
        loadFileBytes: expect.any(Number),
        // The emulator's load jobs carry no statistics: nothing to compare with.
        rowCountChecked: false,
      },
    });
    expect((await select('every_type')).map(asTyped)).toEqual(rows);
    expect(await stagingTables(bq.client, bq.dataset)).toEqual([]);
  });

  it('creates the dataset when it is missing', async () => {
    const fresh = uniqueDatasetId();
    const own = await sinkHarness(bq.client, fresh);
    try {
      expect((await bq.client.dataset(fresh).exists())[0]).toBe(false);
      await own.run(own.sink({ table: 'first' }), runContext({ columns: columns.slice(0, 1) }), [[[1n]]]);
      const [metadata] = await bq.client.dataset(fresh).getMetadata();
      expect(metadata.location).toBe('US');
      expect((await bq.client.query(`SELECT id FROM \`${endpoint.projectId}.${fresh}.first\``))[0]).toEqual([{ id: 1 }]);
    } finally {
      await own.cleanup();
    }
  });

  it('in replace mode keeps only the latest run', async () => {
    const sink = bq.harness.sink({ table: 'snapshot', writeMode: 'replace' });
    await bq.harness.run(sink, runContext({ columns }), [rows.slice(0, 1)]);
    const second = await bq.harness.run(sink, runContext({ columns }), [rows]);

    expect(second.details).toMatchObject({ schemaAction: 'unchanged' });
    expect((await select('snapshot')).map(asTyped)).toEqual(rows);
  });

  it('in replace mode, a run without rows leaves the table empty', async () => {
    const sink = bq.harness.sink({ table: 'emptied' });
    await bq.harness.run(sink, runContext({ columns }), [rows]);
    const result = await bq.harness.run(sink, runContext({ columns }), [[]]);

    expect(result.rows).toBe(0);
    expect(await select('emptied')).toEqual([]);
  });

  it('after prepare and before publish, readers still see the previous table; the run waits in a staging table that expires in a day', async () => {
    const sink = bq.harness.sink({ table: 'two_phase' });
    await bq.harness.run(sink, runContext({ columns }), [rows.slice(0, 1)]);
    const before = Date.now();

    const writer = await bq.harness.prepare(sink, runContext({ columns, runId: 'run-staged' }), [rows]);
    expect((await select('two_phase')).map(asTyped)).toEqual(rows.slice(0, 1));
    const staging = '_tilehouse_staging_open_incidents_two_phase_run_staged';
    expect(await stagingTables(bq.client, bq.dataset)).toEqual([staging]);
    expect((await select(staging)).map(asTyped)).toEqual(rows);
    const [metadata] = await bq.client.dataset(bq.dataset).table(staging).getMetadata();
    expect(Number(metadata.expirationTime) - before).toBeGreaterThanOrEqual(STAGING_TABLE_LIFETIME_MS);
    expect(Number(metadata.expirationTime) - before).toBeLessThan(STAGING_TABLE_LIFETIME_MS + 60_000);
    expect(await bq.harness.leftovers()).toEqual([]);

    await writer.publish();
    expect((await select('two_phase')).map(asTyped)).toEqual(rows);
    expect(await stagingTables(bq.client, bq.dataset)).toEqual([]);
  });

  it('abort after prepare leaves the previous table as it was and no staging table', async () => {
    const sink = bq.harness.sink({ table: 'kept' });
    await bq.harness.run(sink, runContext({ columns }), [rows.slice(0, 1)]);

    const writer = await bq.harness.prepare(sink, runContext({ columns }), [rows]);
    expect(await stagingTables(bq.client, bq.dataset)).toHaveLength(1);
    await writer.abort();

    expect((await select('kept')).map(asTyped)).toEqual(rows.slice(0, 1));
    expect(await stagingTables(bq.client, bq.dataset)).toEqual([]);
    expect(await bq.harness.leftovers()).toEqual([]);
  });

  it('prepare never creates a missing target; abort then leaves no table at all', async () => {
    const writer = await bq.harness.prepare(bq.harness.sink({ table: 'never_made' }), runContext({ columns }), [rows]);
    expect(await tableExists(bq.client, bq.dataset, 'never_made')).toBe(false);
    await writer.abort();

    expect(await tableExists(bq.client, bq.dataset, 'never_made')).toBe(false);
    expect(await stagingTables(bq.client, bq.dataset)).toEqual([]);
  });

  it('in partition mode, prepare loads the staging table and leaves a missing table missing', async () => {
    // The copy onto `daily$YYYYMMDD` itself needs partitions, which the emulator lacks: see the
    // request tests for the table creation with DAY partitioning and the decorated copy.
    const sink = bq.harness.sink({ table: 'daily', writeMode: 'partition' });
    const writer = await bq.harness.prepare(sink, runContext({ columns, runId: 'run-day', window: { from: '2024-03-01', to: '2024-03-02' } }), [rows]);

    expect(writer.target).toBe(`${endpoint.projectId}.${bq.dataset}.daily$20240301`);
    expect(await tableExists(bq.client, bq.dataset, 'daily')).toBe(false);
    expect((await select('_tilehouse_staging_open_incidents_daily_2024_03_01_2024_03_02_run_day')).map(asTyped)).toEqual(rows);
    await writer.abort();
    expect(await stagingTables(bq.client, bq.dataset)).toEqual([]);
  });

  it('in append mode keeps every run, told apart by _run_id and _extracted_at; a prepared run is not there before publish', async () => {
    const sink = bq.harness.sink({ table: 'history', writeMode: 'append' });
    const first = runContext({ columns, runId: 'run-a', startedAt: new Date('2024-03-01T06:00:00.000Z') });
    const second = runContext({ columns, runId: 'run-b', startedAt: new Date('2024-03-02T06:00:00.000Z') });
    await bq.harness.run(sink, first, [rows]);
    const writer = await bq.harness.prepare(sink, second, [rows]);
    expect((await select('history', '_run_id, id')).map((row) => row._run_id)).toEqual(['run-a', 'run-a', 'run-a']);
    await writer.publish();

    const loaded = await select('history', '_run_id, id');
    expect(loaded).toHaveLength(2 * rows.length);
    expect(loaded.map((row) => row._run_id)).toEqual(['run-a', 'run-a', 'run-a', 'run-b', 'run-b', 'run-b']);
    expect(loaded.map((row) => (row._extracted_at as { value: string }).value)).toEqual([
      ...Array(3).fill('2024-03-01T06:00:00.000Z'),
      ...Array(3).fill('2024-03-02T06:00:00.000Z'),
    ]);
    expect(loaded.filter((row) => row._run_id === 'run-b').map(asTyped)).toEqual(rows);
  });

  it('in append mode, publishing the same run id again adopts the earlier copy instead of appending twice', async () => {
    // The 409 comes from the copy proxy (the emulator answers a reused job id with 500), but the
    // rows counted are the emulator's.
    const sink = bq.harness.sink({ table: 'once', writeMode: 'append' });
    await bq.harness.run(sink, runContext({ columns, runId: 'run-same' }), [rows]);
    const again = await bq.harness.run(sink, runContext({ columns, runId: 'run-same' }), [rows]);

    expect(again.details).toMatchObject({ adopted: true, jobId: `tilehouse_open_incidents_${bq.dataset}_once_run-same_publish` });
    expect(await select('once', '_run_id, id')).toHaveLength(rows.length);
    expect(await stagingTables(bq.client, bq.dataset)).toEqual([]);
  });

  it('with a frozen schema, fails on changed columns with the diff, loads nothing and leaves the table as it was', async () => {
    const sink = bq.harness.sink({ table: 'frozen', schema: 'freeze' });
    await bq.harness.run(sink, runContext({ columns }), [rows]);

    const changedColumns = [...columns.filter((c) => c.name !== 'title' && c.name !== 'rate'), column('rate', 'STRING'), column('region', 'STRING')];
    const attempt = bq.harness.run(sink, runContext({ columns: changedColumns }), [[changedColumns.map(() => null)]]);

    const error = await attempt.then(
      () => expect.unreachable('the load should have been refused'),
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(BigQuerySchemaMismatchError);
    expect((error as BigQuerySchemaMismatchError).code).toBe('bigquery_schema_mismatch');
    expect((error as Error).message).toContain('added: region (STRING); removed: title (STRING); retyped: rate FLOAT64 -> STRING');
    expect((error as Error).message).toContain(`${bq.dataset}.frozen`);
    expect((await select('frozen')).map(asTyped)).toEqual(rows);
    expect(await stagingTables(bq.client, bq.dataset)).toEqual([]);
    expect(await bq.harness.leftovers()).toEqual([]);
  });

  it('when the publish is refused, fails naming table and publish job, and abort leaves the target and no staging table', async () => {
    // A view with the tile's columns passes the schema contract; the truncating query onto it is
    // refused (by BigQuery, and here by the emulator's DML under the proxy).
    const viewColumns = [column('id', 'INT64'), column('title', 'STRING')];
    await bq.client.dataset(bq.dataset).createTable('refusing_view', {
      view: { query: "SELECT 1 AS id, 'kept' AS title", useLegacySql: false },
      schema: {
        fields: [
          { name: 'id', type: 'INT64' },
          { name: 'title', type: 'STRING' },
        ],
      },
    });
    const sink = bq.harness.sink({ table: 'refusing_view' });

    const error = await bq.harness.run(sink, runContext({ columns: viewColumns, runId: 'run-refused' }), [[[2n, 'new']]]).then(
      () => expect.unreachable('the publish should have been refused'),
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(BigQueryPublishError);
    expect((error as BigQueryPublishError).code).toBe('bigquery_publish_failed');
    expect((error as Error).message).toMatch(
      new RegExp(`^job open_incidents: query job tilehouse_open_incidents_${bq.dataset}_refusing_view_run-refused_publish onto \\S+refusing_view failed: `),
    );
    expect((await select('refusing_view')).map((row) => row.title)).toEqual(['kept']);
    expect(await stagingTables(bq.client, bq.dataset)).toEqual([]);
    expect(await bq.harness.leftovers()).toEqual([]);
  });

  it('leaves no temp file behind after a successful publish or an abort', async () => {
    const sink = bq.harness.sink({ table: 'tidy' });
    await bq.harness.run(sink, runContext({ columns }), [rows]);
    const writer = await sink.open(runContext({ columns }));
    await writer.writeRows(rows);
    expect(await bq.harness.leftovers()).toHaveLength(1);
    await writer.abort();

    expect(await bq.harness.leftovers()).toEqual([]);
    expect((await select('tidy')).map(asTyped)).toEqual(rows);
  });
});
