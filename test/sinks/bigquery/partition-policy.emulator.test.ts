// Tables under `require_partition_filter` (issue 38). The emulator stores a table's
// requirePartitionFilter but does not enforce it, so these tests put the partition-filter proxy
// (test/support/bigquery-partition-filter-proxy.ts) in front of the copy-job proxy: it refuses, as
// BigQuery does, every query and DML statement that reads a policed table without a filter on its
// partition column. Each test reads the rows back exactly, past the proxy.
//
// Also here: a `merge` must hold each key once when the key's partition value changes between
// runs (a table partitioned by a date that moves: updated-at, a due date), with the policy or
// without. Before, the MERGE's ON carried the run's partition range, so the key's row outside it
// was never matched and the key was inserted a second time, exit 0.
import type { BigQuery } from '@google-cloud/bigquery';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { BigQuerySink } from '../../../src/sinks/bigquery/bigquery-sink.js';
import { mergeStatement } from '../../../src/sinks/bigquery/merge-statement.js';
import type { Column, TypedRow } from '../../../src/transform/column.js';
import { describeWithEmulator, localBigQueryClient, uniqueDatasetId } from '../../support/bigquery-emulator.js';
import { startEmulatorWithCopyJobs, type EmulatorWithCopyJobs } from '../../support/bigquery-fake-server.js';
import { startPartitionFilterProxy, type PartitionFilterProxy } from '../../support/bigquery-partition-filter-proxy.js';
import { column, runContext, sinkHarness, type SinkHarness } from './sink-fixtures.js';

const columns: Column[] = [column('number', 'INT64'), { name: 'day', header: 'Day', type: 'DATE', sourceDataType: 'datetime' }, column('severity', 'STRING')];

describeWithEmulator('BigQuerySink onto tables that require a partition filter', (endpoint) => {
  let copies: EmulatorWithCopyJobs;
  let policy: PartitionFilterProxy;
  /** Through the partition-filter proxy, as tilehouse sees BigQuery. */
  let client: BigQuery;
  /** Behind it: reads whole tables to check what they hold. */
  let direct: BigQuery;
  let harness: SinkHarness;
  const dataset = uniqueDatasetId('policy');

  beforeAll(async () => {
    copies = await startEmulatorWithCopyJobs(endpoint);
    direct = copies.client();
    policy = await startPartitionFilterProxy(copies.endpoint.apiEndpoint);
    client = localBigQueryClient({ apiEndpoint: policy.apiEndpoint, projectId: endpoint.projectId });
    harness = await sinkHarness(client, dataset);
    await direct.createDataset(dataset, { location: 'US' });
  });
  afterAll(async () => {
    await harness?.cleanup();
    await policy?.close();
    await copies?.close();
  });

  const name = (table: string) => `${endpoint.projectId}.${dataset}.${table}`;
  async function rowsOf(table: string): Promise<string[]> {
    const [rows] = await direct.query(`SELECT number, FORMAT_DATE('%F', day) AS day, severity FROM \`${name(table)}\` ORDER BY number, day`);
    return (rows as { number: number; day: string; severity: string }[]).map((row) => `${row.number} ${row.day} ${row.severity}`);
  }
  /** A table made by hand (not by tilehouse) with the policy, before tilehouse's first run. */
  async function handMadeTable(table: string, options: { expirationMs?: string; lineage?: boolean } = {}): Promise<void> {
    // With merge's lineage columns already there: the emulator's SQL does not see columns that
    // `schema: add` patches onto a table.
    const lineage = options.lineage
      ? [
          { name: '_run_id', type: 'STRING' },
          { name: '_extracted_at', type: 'TIMESTAMP' },
        ]
      : [];
    await direct.dataset(dataset).createTable(table, {
      schema: { fields: [...columns.map((c) => ({ name: c.name, type: c.type, mode: 'NULLABLE' })), ...lineage] },
      timePartitioning: { type: 'DAY', field: 'day', ...(options.expirationMs ? { expirationMs: options.expirationMs } : {}) },
      requirePartitionFilter: true,
    });
  }

  it('the proxy refuses a query without a partition filter as BigQuery does, and the MERGE tilehouse used to send', async () => {
    await handMadeTable('proxy_check');
    const error = await client.query(`SELECT COUNT(*) AS n FROM \`${name('proxy_check')}\``).then(
      () => undefined,
      (thrown: unknown) => thrown as { code?: number; errors?: Array<{ reason?: string; message?: string }> },
    );
    const message = `Cannot query over table '${name('proxy_check')}' without a filter over column(s) 'day' that can be used for partition elimination`;
    expect(error).toMatchObject({ code: 400, errors: [{ reason: 'invalidQuery', message }] });
    // With a filter BigQuery can eliminate partitions by, the same count goes through.
    const [rows] = await client.query(`SELECT COUNT(*) AS n FROM \`${name('proxy_check')}\` WHERE day >= DATE '2024-03-01' AND day < DATE '2024-03-02'`);
    expect(rows).toEqual([{ n: 0 }]);
    // The statement before issue 38: ON the key alone (T.day = S.day would not do either).
    const before = mergeStatement(
      name('proxy_check'),
      name('proxy_check'),
      [
        { name: 'number', type: 'INT64' },
        { name: 'day', type: 'DATE' },
      ],
      { columns: ['number'] },
    );
    await expect(client.query(before)).rejects.toMatchObject({ code: 400, errors: [{ reason: 'invalidQuery' }] });
  });

  // (A re-run of a run id, whose adopted MERGE is counted at the target with the range, is in
  // partition-policy.requests.test.ts: the emulator answers a reused query job id with 400, not 409.)
  it('merge with partitionBy and requirePartitionFilter: creates the table, merges again, each exact', async () => {
    const sink = harness.sink({
      table: 'merged',
      writeMode: 'merge',
      primaryKey: ['number'],
      partitionBy: { column: 'Day', granularity: 'day' },
      requirePartitionFilter: true,
    });
    const first: TypedRow[] = [
      [1n, '2024-03-01', 'low'],
      [2n, '2024-03-02', 'high'],
      [3n, '2024-03-03', 'low'],
    ];
    const created = await harness.run(sink, runContext({ columns, runId: 'merge-1' }), [first]);
    expect(created).toMatchObject({ rows: 3, details: { publishedBy: 'merge query', partitionRange: '2024-03-01..2024-03-04' } });
    // The table holds the policy: every later query must carry a filter.
    const [metadata] = await direct.dataset(dataset).table('merged').getMetadata();
    expect(metadata).toMatchObject({ requirePartitionFilter: true });

    const refusedBefore = policy.refusals.length;
    const second = await harness.run(sink, runContext({ columns, runId: 'merge-2' }), [
      [
        [2n, '2024-03-02', 'critical'],
        [4n, '2024-03-02', 'low'],
      ],
    ]);
    expect(second.rows).toBe(2);
    expect(await rowsOf('merged')).toEqual(['1 2024-03-01 low', '2 2024-03-02 critical', '3 2024-03-03 low', '4 2024-03-02 low']);
    const merge = policy.queries.filter((query) => query.startsWith('MERGE')).at(-1);
    // The key does not include day: the MERGE matches over every partition (the moving-key tests below).
    expect(merge).toContain("T.`day` IS NULL OR T.`day` >= DATE '0001-01-01'");

    expect(policy.refusals.slice(refusedBefore)).toEqual([]);
    expect(await rowsOf('merged')).toEqual(['1 2024-03-01 low', '2 2024-03-02 critical', '3 2024-03-03 low', '4 2024-03-02 low']);
  });

  it('merge onto a table made by hand with the policy, the job naming no partitionBy: the range comes from the staging table', async () => {
    await handMadeTable('hand_merged', { lineage: true });
    const sink = harness.sink({ table: 'hand_merged', writeMode: 'merge', primaryKey: ['number'] });
    const [first] = await harness.runInTurn(
      sink,
      { columns, runId: 'hand' },
      [
        [1n, '2024-04-01', 'low'],
        [2n, '2024-04-03', 'high'],
      ],
      [
        [2n, '2024-04-03', 'low'],
        [3n, '2024-04-02', 'low'],
      ],
    );
    expect(first!.details).toMatchObject({ partitionRange: '2024-04-01..2024-04-04' });
    expect(await rowsOf('hand_merged')).toEqual(['1 2024-04-01 low', '2 2024-04-03 low', '3 2024-04-02 low']);
    expect(policy.refusals.filter((refusal) => refusal.table === name('hand_merged'))).toEqual([]);
  });

  it('merge onto a table made by hand with the policy, the job naming the same partitionBy', async () => {
    await handMadeTable('hand_merged_own', { lineage: true });
    const sink = harness.sink({ table: 'hand_merged_own', writeMode: 'merge', primaryKey: ['number'], partitionBy: { column: 'day', granularity: 'day' } });
    await harness.runInTurn(
      sink,
      { columns, runId: 'own' },
      [
        [1n, '2024-05-01', 'low'],
        [2n, '2024-05-02', 'high'],
      ],
      [[1n, '2024-05-01', 'high']],
    );
    expect(await rowsOf('hand_merged_own')).toEqual(['1 2024-05-01 high', '2 2024-05-02 high']);
  });

  it('replace with partitionBy, onto a new table with the policy and onto one made by hand', async () => {
    const sink = harness.sink({ table: 'replaced', partitionBy: { column: 'day', granularity: 'day' }, requirePartitionFilter: true });
    const twoRuns: TypedRow[][] = [
      [
        [1n, '2024-03-01', 'low'],
        [2n, '2024-03-02', 'low'],
      ],
      [[3n, '2024-03-02', 'high']],
    ];
    await harness.runInTurn(sink, { columns, runId: 'replaced' }, ...twoRuns);
    expect(await rowsOf('replaced')).toEqual(['1 2024-03-01 low', '3 2024-03-02 high']);

    await handMadeTable('hand_replaced');
    const hand = harness.sink({ table: 'hand_replaced', partitionBy: { column: 'day', granularity: 'day' } });
    await harness.runInTurn(hand, { columns, runId: 'hand_replaced' }, ...twoRuns);
    expect(await rowsOf('hand_replaced')).toEqual(['1 2024-03-01 low', '3 2024-03-02 high']);
    // Replace without partitionBy onto the hand-made table: the truncating query reads only staging.
    const whole = harness.sink({ table: 'hand_replaced' });
    await harness.run(whole, runContext({ columns }), [[[5n, '2024-03-05', 'low']]]);
    expect(await rowsOf('hand_replaced')).toEqual(['5 2024-03-05 low']);
    expect(policy.refusals.filter((refusal) => refusal.table.includes('replaced'))).toEqual([]);
  });

  it("partition expiration: rows in partitions past it are counted and warned of; plan and check name the table's settings", async () => {
    const now = Date.now();
    const day = (offset: number) => new Date(now + offset * 86_400_000).toISOString().slice(0, 10);
    await handMadeTable('expiring', { expirationMs: String(30 * 86_400_000) });
    const sink = harness.sink({ table: 'expiring', partitionBy: { column: 'day', granularity: 'day' } });
    const planned = await sink.plan(runContext({ columns }));
    expect(planned.details.join('\n')).toContain('the table requires a partition filter on day');
    expect(planned.details.join('\n')).toContain("the table's partitions expire after 30 days: rows of partitions before");
    expect(await sink.checkAccess({ jobName: 'open_incidents', logger: runContext({ columns }).logger })).toMatch(
      /exists; table expiring: the table requires a partition filter on day: .*; the table's partitions expire after 30 days: rows of partitions before \d{4}-\d{2}-\d{2} are dropped at once$/,
    );

    const result = await harness.run(sink, runContext({ columns }), [
      [
        [1n, day(-45), 'low'],
        [2n, day(-40), 'low'],
        [3n, day(-2), 'high'],
        [4n, day(0), 'low'],
      ],
    ]);
    expect(result).toMatchObject({ rows: 2, expiredRows: 2, details: { partitionExpirationDays: 30 } });
    expect(result.warnings).toEqual([
      expect.stringMatching(
        /expiring: 2 of the 4 rows published fall in partitions older than the table's partition expiration \(timePartitioning.expirationMs = 2592000000, 30 days\); BigQuery drops them at once, so the table holds 2$/,
      ),
    ]);
    // A table without expiration: nothing counted.
    const plain = await harness.run(harness.sink({ table: 'not_expiring', partitionBy: { column: 'day', granularity: 'day' } }), runContext({ columns }), [
      [[1n, day(-45), 'low']],
    ]);
    expect(plain).toMatchObject({ rows: 1 });
    expect(plain.expiredRows).toBeUndefined();
    expect(plain.warnings).toBeUndefined();
  });

  const lastMerge = () => policy.queries.filter((query) => query.startsWith('MERGE')).at(-1) ?? '';
  /** A merge onto a table partitioned by day on `column` that requires a partition filter. */
  const policedMerge = (table: string, column: string, primaryKey: string[]) =>
    harness.sink({ table, writeMode: 'merge', primaryKey, partitionBy: { column, granularity: 'day' }, requirePartitionFilter: true });
  /** Two runs in turn; what the policy refused during the second (the first creates the table). */
  async function refusalsOfSecondRun(sink: BigQuerySink, context: { columns: Column[]; runId: string }, first: TypedRow[], second: TypedRow[]) {
    await harness.runInTurn(sink, context, first);
    const refusedBefore = policy.refusals.length;
    await harness.runInTurn(sink, { ...context, runId: `${context.runId}-again` }, second);
    return policy.refusals.slice(refusedBefore);
  }

  it('partitionBy day: key 2 moves from 2024-03-02 to 2024-03-09 between two runs and is held once, in its new partition', async () => {
    const sink = harness.sink({ table: 'moved', writeMode: 'merge', primaryKey: ['number'], partitionBy: { column: 'Day', granularity: 'day' } });
    const [, second] = await harness.runInTurn(
      sink,
      { columns, runId: 'moved' },
      [
        [1n, '2024-03-01', 'low'],
        [2n, '2024-03-02', 'high'],
      ],
      [[2n, '2024-03-09', 'resolved']],
    );
    expect(second!.rows).toBe(1);
    expect(await rowsOf('moved')).toEqual(['1 2024-03-01 low', '2 2024-03-09 resolved']);
    // The MERGE matched over the whole table: no partition condition at all (the table requires none).
    expect(lastMerge()).toContain('ON T.`number` = S.`number`\nWHEN MATCHED');
  });

  it('partitionBy day with requirePartitionFilter: the moved key is held once, through a filter BigQuery takes that covers every partition', async () => {
    const refused = await refusalsOfSecondRun(
      policedMerge('moved_required', 'day', ['number']),
      { columns, runId: 'required' },
      [
        [1n, '2024-03-01', 'low'],
        [2n, '2024-03-02', 'high'],
      ],
      [
        [2n, '2024-03-20', 'resolved'],
        [3n, '2024-03-21', 'low'],
      ],
    );
    expect(refused).toEqual([]);
    expect(lastMerge()).toContain("ON T.`number` = S.`number` AND (T.`day` IS NULL OR T.`day` >= DATE '0001-01-01')");
    expect(await rowsOf('moved_required')).toEqual(['1 2024-03-01 low', '2 2024-03-20 resolved', '3 2024-03-21 low']);
  });

  it('a table made by hand with the policy, the job naming no partitionBy: the moved key is held once', async () => {
    await direct.dataset(dataset).createTable('hand_moved', {
      schema: {
        fields: [
          ...columns.map((c) => ({ name: c.name, type: c.type, mode: 'NULLABLE' })),
          { name: '_run_id', type: 'STRING' },
          { name: '_extracted_at', type: 'TIMESTAMP' },
        ],
      },
      timePartitioning: { type: 'DAY', field: 'day' },
      requirePartitionFilter: true,
    });
    const sink = harness.sink({ table: 'hand_moved', writeMode: 'merge', primaryKey: ['number'] });
    await harness.runInTurn(sink, { columns, runId: 'hand' }, [[1n, '2024-04-01', 'low']], [[1n, '2024-04-05', 'high']]);
    expect(await rowsOf('hand_moved')).toEqual(['1 2024-04-05 high']);
    expect(policy.refusals.filter((refusal) => refusal.table === name('hand_moved'))).toEqual([]);
  });

  it('a TIMESTAMP partition column (updated-at) with the policy: the key moved to a later day is held once', async () => {
    const stamped: Column[] = [column('number', 'INT64'), column('updated_at', 'TIMESTAMP')];
    const refused = await refusalsOfSecondRun(
      policedMerge('moved_updated', 'updated_at', ['number']),
      { columns: stamped, runId: 'updated' },
      [[1n, Date.UTC(2024, 2, 1, 10)]],
      [[1n, Date.UTC(2024, 2, 7, 9)]],
    );
    expect(refused).toEqual([]);
    expect(lastMerge()).toContain("(T.`updated_at` IS NULL OR T.`updated_at` >= TIMESTAMP '0001-01-01 00:00:00+00')");
    const [rows] = await direct.query(`SELECT number, FORMAT_TIMESTAMP('%FT%TZ', updated_at) AS stamp FROM \`${name('moved_updated')}\``);
    expect(rows).toEqual([{ number: 1, stamp: '2024-03-07T09:00:00Z' }]);
  });

  it('the partition column in primaryKey: the MERGE reads only the run partitions (the key fixes its partition), and a key staying there is updated in place', async () => {
    const refused = await refusalsOfSecondRun(
      policedMerge('keyed_by_day', 'day', ['number', 'day']),
      { columns, runId: 'keyed' },
      [
        [1n, '2024-03-01', 'low'],
        [2n, '2024-03-02', 'high'],
      ],
      [[2n, '2024-03-02', 'critical']],
    );
    expect(lastMerge()).toContain("ON T.`number` = S.`number` AND T.`day` = S.`day` AND T.`day` >= DATE '2024-03-02' AND T.`day` < DATE '2024-03-03'");
    expect(refused).toEqual([]);
    expect(await rowsOf('keyed_by_day')).toEqual(['1 2024-03-01 low', '2 2024-03-02 critical']);
  });
});
