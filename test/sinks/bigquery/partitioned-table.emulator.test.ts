// Column partitioning over the emulator's real storage. The emulator stores a table's
// timePartitioning, clustering, requirePartitionFilter and column descriptions as given but acts
// on none of them, has no partition decorators and no copy jobs: the copy proxy
// (startEmulatorWithCopyJobs) carries out `staging$p -> table$p` copies and WRITE_TRUNCATE_DATA
// queries with the emulator's DML. What these tests show is the sink's flow and the rows it
// leaves; the exact requests are in bigquery-sink.layout.requests.test.ts.
import { expect, it } from 'vitest';
import type { Column, TypedRow } from '../../../src/transform/column.js';
import { describeWithEmulator } from '../../support/bigquery-emulator.js';
import { stagingTables } from '../../support/bigquery-read.js';
import { column, runContext, useEmulatorSinkSetup } from './sink-fixtures.js';

const columns: Column[] = [{ name: 'day', header: 'Day', type: 'DATE', sourceDataType: 'datetime' }, column('severity', 'STRING'), column('count', 'INT64')];

describeWithEmulator('BigQuerySink with partitionBy', (endpoint) => {
  const bq = useEmulatorSinkSetup(endpoint, 'partitioned');

  async function rowsOf(table: string): Promise<string[]> {
    const [result] = await bq.client.query(
      `SELECT FORMAT_DATE('%F', day) AS day, severity, count FROM \`${endpoint.projectId}.${bq.dataset}.${table}\` ORDER BY day, severity`,
    );
    return (result as { day: string; severity: string; count: number }[]).map((row) => `${row.day} ${row.severity} ${row.count}`);
  }

  it('creates the table partitioned on the column and clustered, and a later run replaces exactly the partitions its rows fall in', async () => {
    const sink = bq.harness.sink({ table: 'daily', partitionBy: { column: 'Day', granularity: 'day' }, clusterBy: ['severity'], requirePartitionFilter: true });
    const first: TypedRow[] = [
      ['2024-03-01', 'low', 1n],
      ['2024-03-02', 'low', 2n],
      ['2024-03-02', 'high', 3n],
      ['2024-03-03', 'low', 4n],
    ];
    const created = await bq.harness.run(sink, runContext({ columns, runId: 'run-1' }), [first]);
    expect(created.details).toMatchObject({ partitions: '20240301,20240302,20240303', publishedBy: 'partition copies', schemaAction: 'created' });

    const [metadata] = await bq.client.dataset(bq.dataset).table('daily').getMetadata();
    expect(metadata).toMatchObject({ timePartitioning: { type: 'DAY', field: 'day' }, clustering: { fields: ['severity'] }, requirePartitionFilter: true });

    // The second run has rows of 2024-03-02 only (one fewer) and of a new day.
    await bq.harness.run(sink, runContext({ columns, runId: 'run-2' }), [
      [
        ['2024-03-02', 'high', 30n],
        ['2024-03-04', 'low', 40n],
      ],
    ]);
    expect(await rowsOf('daily')).toEqual(['2024-03-01 low 1', '2024-03-02 high 30', '2024-03-03 low 4', '2024-03-04 low 40']);
    expect(
      bq.emulator.copies
        .slice(-2)
        .map((copy) => (copy.json as { configuration: { copy: { destinationTable: { tableId: string } } } }).configuration.copy.destinationTable.tableId),
    ).toEqual(['daily$20240302', 'daily$20240304']);
    expect(await stagingTables(bq.client, bq.dataset)).toEqual([]);
  });

  it('by month, replaces whole months', async () => {
    const sink = bq.harness.sink({ table: 'monthly', partitionBy: { column: 'day', granularity: 'month' } });
    await bq.harness.run(sink, runContext({ columns }), [
      [
        ['2024-02-10', 'low', 1n],
        ['2024-03-05', 'low', 2n],
        ['2024-03-20', 'high', 3n],
      ],
    ]);
    await bq.harness.run(sink, runContext({ columns }), [[['2024-03-31', 'low', 9n]]]);

    expect(await rowsOf('monthly')).toEqual(['2024-02-10 low 1', '2024-03-31 low 9']);
  });

  it('a run whose partition column is not DATE or TIMESTAMP loads nothing and creates no table', async () => {
    const sink = bq.harness.sink({ table: 'never', partitionBy: { column: 'severity', granularity: 'day' } });
    await expect(bq.harness.run(sink, runContext({ columns }), [[['2024-03-01', 'low', 1n]]])).rejects.toMatchObject({
      code: 'bigquery_partition_column_invalid',
    });
    expect((await bq.client.dataset(bq.dataset).table('never').exists())[0]).toBe(false);
    expect(await stagingTables(bq.client, bq.dataset)).toEqual([]);
  });
});

describeWithEmulator('BigQuerySink replace keeps the table metadata', (endpoint) => {
  const bq = useEmulatorSinkSetup(endpoint, 'metadata');

  it("publishes an existing table with a WRITE_TRUNCATE_DATA query: rows replaced, the warehouse team's descriptions and labels kept", async () => {
    const sink = bq.harness.sink({ table: 'described' });
    await bq.harness.run(sink, runContext({ columns }), [[['2024-03-01', 'low', 1n]]]);
    const table = bq.client.dataset(bq.dataset).table('described');
    const [before] = await table.getMetadata();
    const fields = (before.schema.fields as { name: string; description?: string }[]).map((field) =>
      field.name === 'count' ? { ...field, description: 'incidents that day' } : field,
    );
    await table.setMetadata({ schema: { fields }, labels: { owner: 'warehouse' }, description: 'curated' });

    const result = await bq.harness.run(sink, runContext({ columns, runId: 'run-keep' }), [[['2024-03-02', 'high', 7n]]]);
    expect(result.details).toMatchObject({ publishedBy: 'truncate-data query', schemaAction: 'unchanged' });
    expect(bq.emulator.truncateDataQueries).toHaveLength(1);
    expect(await bq.client.query(`SELECT severity, count FROM \`${endpoint.projectId}.${bq.dataset}.described\``).then(([rows]) => rows)).toEqual([
      { severity: 'high', count: 7 },
    ]);
    const [after] = await table.getMetadata();
    expect(after).toMatchObject({ labels: { owner: 'warehouse' }, description: 'curated' });
    expect((after.schema.fields as { name: string; description?: string }[]).find((field) => field.name === 'count')?.description).toBe('incidents that day');
  });
});
