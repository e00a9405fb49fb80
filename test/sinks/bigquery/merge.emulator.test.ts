// writeMode: merge over the emulator's real storage: the key checks, latestBy's DELETE and the
// MERGE statement run as the emulator's SQL (it runs MERGE, though only with a table as source). The MERGE job goes to the
// emulator itself, not through the copy proxy (which carries out copies and WRITE_TRUNCATE_DATA
// only). What the emulator cannot show (dmlStats, 409 adoption of a retried MERGE) is in
// merge.requests.test.ts against the fake API.
import { expect, it } from 'vitest';
import type { Column, TypedRow } from '../../../src/transform/column.js';
import { describeWithEmulator } from '../../support/bigquery-emulator.js';
import { stagingTables } from '../../support/bigquery-read.js';
import { column, runContext, useEmulatorSinkSetup } from './sink-fixtures.js';

const columns: Column[] = [
  { name: 'incident', header: 'Incident', type: 'STRING', sourceDataType: 'text' },
  column('status', 'STRING'),
  column('revision', 'INT64'),
  { name: 'day', header: 'Day', type: 'DATE', sourceDataType: 'datetime' },
];

describeWithEmulator('BigQuerySink writeMode: merge', (endpoint) => {
  const bq = useEmulatorSinkSetup(endpoint, 'merge');

  async function rowsOf(table: string): Promise<string[]> {
    const [result] = await bq.client.query(
      `SELECT incident, status, revision, _run_id FROM \`${endpoint.projectId}.${bq.dataset}.${table}\` ORDER BY incident`,
    );
    return (result as { incident: string; status: string; revision: number; _run_id: string }[]).map(
      (row) => `${row.incident} ${row.status} ${row.revision} ${row._run_id}`,
    );
  }

  it('incidents changing between two runs end up once each, with their latest values; new ones are inserted, absent ones kept', async () => {
    const sink = bq.harness.sink({ table: 'incidents', writeMode: 'merge', primaryKey: ['Incident'] });
    const first: TypedRow[] = [
      ['INC-1', 'open', 1n, '2024-03-01'],
      ['INC-2', 'open', 1n, '2024-03-01'],
      ['INC-3', 'open', 1n, '2024-03-01'],
    ];
    const created = await bq.harness.run(sink, runContext({ columns, runId: 'run-1' }), [first]);
    expect(created.details).toMatchObject({ writeMode: 'merge', publishedBy: 'merge query', schemaAction: 'created' });
    expect(await rowsOf('incidents')).toEqual(['INC-1 open 1 run-1', 'INC-2 open 1 run-1', 'INC-3 open 1 run-1']);

    // Run 2: INC-1 and INC-2 changed, INC-3 is no longer in the export, INC-4 is new.
    const second: TypedRow[] = [
      ['INC-2', 'closed', 2n, '2024-03-02'],
      ['INC-1', 'acknowledged', 2n, '2024-03-02'],
      ['INC-4', 'open', 1n, '2024-03-02'],
    ];
    await bq.harness.run(sink, runContext({ columns, runId: 'run-2' }), [second]);
    expect(await rowsOf('incidents')).toEqual(['INC-1 acknowledged 2 run-2', 'INC-2 closed 2 run-2', 'INC-3 open 1 run-1', 'INC-4 open 1 run-2']);
    expect(await stagingTables(bq.client, bq.dataset)).toEqual([]);
  });

  it('a key two rows of one run share is refused naming the key, nothing published, staging removed', async () => {
    const sink = bq.harness.sink({ table: 'dup', writeMode: 'merge', primaryKey: ['incident'] });
    await bq.harness.run(sink, runContext({ columns, runId: 'run-1' }), [[['INC-1', 'open', 1n, '2024-03-01']]]);

    const refused = bq.harness.run(sink, runContext({ columns, runId: 'run-2' }), [
      [
        ['INC-1', 'closed', 2n, '2024-03-02'],
        ['INC-9', 'open', 1n, '2024-03-02'],
        ['INC-1', 'open', 3n, '2024-03-02'],
      ],
    ]);
    await expect(refused).rejects.toMatchObject({ code: 'bigquery_duplicate_key' });
    await expect(refused).rejects.toThrow('rows with the same primary key (incident) in one run: ("INC-1") x2');
    expect(await rowsOf('dup')).toEqual(['INC-1 open 1 run-1']);
    expect(await stagingTables(bq.client, bq.dataset)).toEqual([]);
  });

  it('with latestBy, the row with its highest value wins, whatever the order; a tie on it is refused', async () => {
    const sink = bq.harness.sink({ table: 'latest', writeMode: 'merge', primaryKey: ['incident'], latestBy: 'revision' });
    await bq.harness.run(sink, runContext({ columns, runId: 'run-1' }), [
      [
        ['INC-1', 'second', 2n, '2024-03-01'],
        ['INC-1', 'third', 3n, '2024-03-01'],
        ['INC-1', 'first', 1n, '2024-03-01'],
        ['INC-2', 'only', 1n, '2024-03-01'],
        ['INC-3', 'unknown', null, '2024-03-01'],
        ['INC-3', 'known', 1n, '2024-03-01'],
        ['INC-4', 'unknown', null, '2024-03-01'],
      ],
    ]);
    // Any value beats a null; a key whose one row has a null keeps it.
    expect(await rowsOf('latest')).toEqual(['INC-1 third 3 run-1', 'INC-2 only 1 run-1', 'INC-3 known 1 run-1', 'INC-4 unknown null run-1']);

    const tie = bq.harness.run(sink, runContext({ columns, runId: 'run-2' }), [
      [
        ['INC-2', 'a', 5n, '2024-03-01'],
        ['INC-2', 'b', 5n, '2024-03-01'],
      ],
    ]);
    await expect(tie).rejects.toThrow('(incident, revision) in one run: ("INC-2", 5) x2; they also have the same revision');
    expect(await rowsOf('latest')).toEqual(['INC-1 third 3 run-1', 'INC-2 only 1 run-1', 'INC-3 known 1 run-1', 'INC-4 unknown null run-1']);
  });

  it('a null key is refused, nothing published', async () => {
    const sink = bq.harness.sink({ table: 'nulls', writeMode: 'merge', primaryKey: ['incident', 'day'] });
    const refused = bq.harness.run(sink, runContext({ columns, runId: 'run-1' }), [
      [
        ['INC-1', 'open', 1n, '2024-03-01'],
        ['INC-2', 'open', 1n, null],
      ],
    ]);
    await expect(refused).rejects.toMatchObject({ code: 'bigquery_null_key' });
    await expect(refused).rejects.toThrow('1 row has a null in the primary key (incident, day)');
    expect(await stagingTables(bq.client, bq.dataset)).toEqual([]);
  });

  it('merges into a table partitioned by a date column', async () => {
    const sink = bq.harness.sink({ table: 'partitioned', writeMode: 'merge', primaryKey: ['incident'], partitionBy: { column: 'Day', granularity: 'day' } });
    await bq.harness.run(sink, runContext({ columns, runId: 'run-1' }), [[['INC-1', 'open', 1n, '2024-03-01']]]);
    await bq.harness.run(sink, runContext({ columns, runId: 'run-2' }), [
      [
        ['INC-1', 'closed', 2n, '2024-03-01'],
        ['INC-2', 'open', 1n, '2024-03-05'],
      ],
    ]);
    expect(await rowsOf('partitioned')).toEqual(['INC-1 closed 2 run-2', 'INC-2 open 1 run-2']);
  });
});
