// Request-shape tests for issue 13 against the scripted fake (see bigquery-sink.requests.test.ts
// for why a fake): what the emulator cannot show, because it ignores partition decorators,
// clustering, labels, WRITE_TRUNCATE_DATA and quotas, and reports no load statistics.
import { describe, expect, it } from 'vitest';
import { BigQueryPublishError } from '../../../src/sinks/bigquery/bigquery-errors.js';
import {
  apiError,
  FAKE_PROJECT_ID,
  fakeClock,
  jobIdOf,
  jobResource,
  tableIdOf,
  type FakeBigQuery,
  type FakeRoutes,
} from '../../support/bigquery-fake-server.js';
import type { Column } from '../../../src/transform/column.js';
import { column, runContext, silentLogger, useFakeSinkSetup } from './sink-fixtures.js';
import type { LoadedJob } from '../../../src/config/load-config.js';
import { publishAll } from '../../../src/pipeline/publish-sinks.js';
import type { ReadStats } from '../../../src/pipeline/read-into-sinks.js';
import { countOutcomes } from '../../../src/pipeline/run-jobs.js';
import { publishedSummary, type SessionCounters } from '../../../src/pipeline/job-summary.js';
import { exitCodeOf } from '../../../src/cli/run-command.js';

const columns: Column[] = [{ name: 'day', header: 'Day', type: 'DATE', sourceDataType: 'datetime' }, column('severity', 'STRING'), column('count', 'INT64')];
const STAGING = '_tilehouse_staging_open_incidents_daily_r1';
const LABELS = { tilehouse_job: 'open_incidents', tile: 'tile-42', run_id: 'r1' };
const partitioned = {
  partitionBy: { column: 'Day', granularity: 'day' as const },
  clusterBy: ['severity'],
  requirePartitionFilter: true,
  partitionExpirationDays: 400,
};
const existingDaily = (extra: Record<string, unknown> = {}) => ({
  status: 200,
  body: {
    schema: {
      fields: [
        { name: 'day', type: 'DATE' },
        { name: 'severity', type: 'STRING' },
        { name: 'count', type: 'INTEGER' },
      ],
    },
    timePartitioning: { type: 'DAY', field: 'day', expirationMs: String(400 * 86_400_000) },
    requirePartitionFilter: true,
    clustering: { fields: ['severity'] },
    ...extra,
  },
});
const rows = [
  ['2024-03-02', 'high', 2n],
  ['2024-03-01', 'low', 1n],
  ['2024-03-02', 'low', 5n],
] as const;
const table = (tableId: string) => ({ projectId: FAKE_PROJECT_ID, datasetId: 'ops', tableId });

const setUp = useFakeSinkSetup();

const copies = (fake: FakeBigQuery) =>
  fake
    .calls('jobs.copy')
    .map(
      (request) =>
        (request.json as { configuration: { copy: { sourceTable: { tableId: string }; destinationTable: { tableId: string }; writeDisposition: string } } })
          .configuration.copy,
    );

describe('BigQuerySink requests: partitionBy, clustering, labels, quotas, row counts', () => {
  it('creates a missing table partitioned on the column, clustered, with the required filter and expiration; the staging table partitioned alike', async () => {
    const { fake, harness } = await setUp({});
    await harness.run(harness.sink({ table: 'daily', ...partitioned }), runContext({ columns, runId: 'r1' }), [rows.map((row) => [...row])]);

    const created = Object.fromEntries(fake.calls('tables.insert').map((request) => [tableIdOf(request), request.json as Record<string, unknown>]));
    expect(created.daily).toMatchObject({
      timePartitioning: { type: 'DAY', field: 'day', expirationMs: String(400 * 86_400_000) },
      requirePartitionFilter: true,
      clustering: { fields: ['severity'] },
    });
    expect(created[STAGING]).toMatchObject({ timePartitioning: { type: 'DAY', field: 'day' }, clustering: { fields: ['severity'] } });
    expect(created[STAGING]).not.toHaveProperty('requirePartitionFilter');
    expect(created[STAGING]!.timePartitioning as object).not.toHaveProperty('expirationMs');
    const load = (fake.calls('jobs.insert')[0]?.json as { configuration: { load: Record<string, unknown>; labels: unknown } }).configuration;
    expect(load.load).toMatchObject({
      timePartitioning: { type: 'DAY', field: 'day' },
      clustering: { fields: ['severity'] },
      writeDisposition: 'WRITE_TRUNCATE',
    });
    expect(load.load).not.toHaveProperty('labels');
    expect(load.labels).toEqual(LABELS);
  });

  it('in replace mode, copies each partition its rows fall in from staging$p onto table$p with WRITE_TRUNCATE, and no other', async () => {
    const { fake, harness } = await setUp({
      'tables.get': (request) => (tableIdOf(request) === 'daily' ? existingDaily() : apiError(404, 'notFound', 'Not found')),
    });
    const result = await harness.run(harness.sink({ table: 'daily', ...partitioned }), runContext({ columns, runId: 'r1' }), [
      [[...rows[0]], [...rows[1]]],
      [[...rows[2]]],
    ]);

    expect(copies(fake)).toEqual([
      {
        sourceTable: table(`${STAGING}$20240301`),
        destinationTable: table('daily$20240301'),
        createDisposition: 'CREATE_NEVER',
        writeDisposition: 'WRITE_TRUNCATE',
      },
      {
        sourceTable: table(`${STAGING}$20240302`),
        destinationTable: table('daily$20240302'),
        createDisposition: 'CREATE_NEVER',
        writeDisposition: 'WRITE_TRUNCATE',
      },
    ]);
    expect(fake.calls('jobs.copy').map(jobIdOf)).toEqual([
      'tilehouse_open_incidents_ops_daily_r1_publish_20240301',
      'tilehouse_open_incidents_ops_daily_r1_publish_20240302',
    ]);
    for (const request of fake.calls('jobs.copy')) expect((request.json as { configuration: { labels: unknown } }).configuration.labels).toEqual(LABELS);
    // The table matches the job: nothing patched, no truncating query.
    expect(fake.calls('tables.patch')).toHaveLength(0);
    expect(fake.calls('jobs.query')).toHaveLength(0);
    expect(result).toMatchObject({
      target: `${FAKE_PROJECT_ID}.ops.daily`,
      details: { publishedBy: 'partition copies', partitions: '20240301,20240302', sentRows: 3 },
    });
  });

  // The emulator ignores partition decorators (see the header): which partitions a replace
  // touches shows only in the copy requests the client sends, so this is asserted on those.
  it('in replace mode, rows on two days a week apart copy those two partitions and none of the days between', async () => {
    const { fake, harness } = await setUp({
      'tables.get': (request) => (tableIdOf(request) === 'daily' ? existingDaily() : apiError(404, 'notFound', 'Not found')),
    });
    await harness.run(harness.sink({ table: 'daily', ...partitioned }), runContext({ columns, runId: 'r1' }), [
      [
        ['2024-03-09', 'low', 1n],
        ['2024-03-01', 'high', 2n],
      ],
    ]);

    expect(copies(fake).map((copy) => [copy.sourceTable.tableId, copy.destinationTable.tableId, copy.writeDisposition])).toEqual([
      [`${STAGING}$20240301`, 'daily$20240301', 'WRITE_TRUNCATE'],
      [`${STAGING}$20240309`, 'daily$20240309', 'WRITE_TRUNCATE'],
    ]);
    // No statement that could clear a range of days either.
    expect(fake.calls('jobs.query')).toHaveLength(0);
  });

  it('by month, copies onto table$YYYYMM; a run of a backfill window carries the window label', async () => {
    const { fake, harness } = await setUp({});
    const sink = harness.sink({ table: 'daily', partitionBy: { column: 'day', granularity: 'month' } });
    await harness.run(sink, runContext({ columns, runId: 'r1', window: { from: '2024-02-01', to: '2024-04-01' } }), [
      [
        ['2024-02-29', 'x', 1n],
        ['2024-03-01', 'y', 2n],
      ],
    ]);

    expect(copies(fake).map((copy) => copy.destinationTable.tableId)).toEqual(['daily$202402', 'daily$202403']);
    const labels = [fake.calls('jobs.insert')[0], ...fake.calls('jobs.copy')].map(
      (request) => (request?.json as { configuration: { labels: unknown } }).configuration.labels,
    );
    expect(labels).toEqual(Array(3).fill({ ...LABELS, window: '2024-02-01_2024-04-01' }));
  });

  it('in append mode, appends the partitioned staging table with one WRITE_APPEND copy', async () => {
    const { fake, harness } = await setUp({});
    await harness.run(
      harness.sink({ table: 'daily', writeMode: 'append', partitionBy: { column: 'day', granularity: 'day' } }),
      runContext({ columns, runId: 'r1' }),
      [rows.map((row) => [...row])],
    );

    expect(copies(fake)).toEqual([
      { sourceTable: table(STAGING), destinationTable: table('daily'), createDisposition: 'CREATE_NEVER', writeDisposition: 'WRITE_APPEND' },
    ]);
  });

  it('reports a failure after the first partition copy as partially_published, naming the partitions on each side', async () => {
    const { fake, harness } = await setUp({
      'jobs.copy': (request, attempt) =>
        attempt === 2 ? jobResource(jobIdOf(request), 'DONE', { reason: 'invalid', message: 'partition is locked' }) : jobResource(jobIdOf(request), 'DONE'),
    });
    const error = await harness
      .run(harness.sink({ table: 'daily', ...partitioned }), runContext({ columns, runId: 'r1' }), [
        [...rows.map((row) => [...row]), ['2024-03-03', 'low', 1n]],
      ])
      .then(
        () => expect.unreachable(),
        (thrown: unknown) => thrown,
      );

    expect(error).toMatchObject({
      code: 'partially_published',
      published: ['20240301'],
      unpublished: ['20240302', '20240303'],
      message: expect.stringMatching(
        /partitions 20240301 hold the new run, 20240302, 20240303 still the previous one \(bigquery_publish_failed: .*partition is locked\)/,
      ),
    });
    // No copy after the failed one; the staging table is removed by the abort.
    expect(fake.calls('jobs.copy')).toHaveLength(2);
    expect(fake.calls('tables.delete').map(tableIdOf)).toEqual([STAGING]);
  });

  it('through the pipeline, partition copies that fail after the first make the tile partially_published (exit 3), even as the first sink', async () => {
    const { fake, harness } = await setUp({
      'jobs.copy': (request, attempt) =>
        attempt === 2 ? jobResource(jobIdOf(request), 'DONE', { reason: 'invalid', message: 'partition is locked' }) : jobResource(jobIdOf(request), 'DONE'),
    });
    const writer = await harness.sink({ table: 'daily', ...partitioned }).open(runContext({ columns, runId: 'r1' }));
    await writer.writeRows(rows.map((row) => [...row]));
    const published = await publishAll([writer], { jobName: 'open_incidents', logger: silentLogger });
    // publishedSummary reads only the job's name and tile, and takes the counters as they are.
    const job = { name: 'open_incidents', tile: 'tile-42', query: { items: [] }, sinks: [] } as unknown as LoadedJob;
    const counters = {
      runId: 'r1',
      retries: 0,
      throttled: 0,
      tokenFetches: 0,
      reauthentications: 0,
      restarts: 0,
      bytes: 0,
      targets: [],
    } as unknown as SessionCounters;
    const stats = { rows: 3, rowsDropped: 0, pages: 1, columns, warnings: [], nulledValues: 0 } as unknown as ReadStats;
    const summary = publishedSummary(job, Date.now(), stats, counters, published);

    expect(summary).toMatchObject({
      status: 'partially_published',
      outputs: [],
      unpublished: [],
      mixed: [`${FAKE_PROJECT_ID}.ops.daily`],
      error: { code: 'partially_published' },
    });
    expect(summary.error?.message).toContain(
      `new run in: part of ${FAKE_PROJECT_ID}.ops.daily; previous run still in: the rest of ${FAKE_PROJECT_ID}.ops.daily.`,
    );
    expect(summary.error?.message).toContain(`(partially_published: ${FAKE_PROJECT_ID}.ops.daily: partitions 20240301 hold the new run`);
    // The causes it quotes, one inside the other, are the same job's: named once, in front.
    expect(summary.error?.message.match(/job open_incidents/g)).toEqual(['job open_incidents']);
    expect(summary.error?.message.startsWith('job open_incidents: ')).toBe(true);
    expect(exitCodeOf(countOutcomes([summary]))).toBe(3);
    expect(fake.calls('jobs.copy')).toHaveLength(2);
  });

  it('a failure at the first partition copy is a plain publish failure: nothing changed', async () => {
    const { harness } = await setUp({ 'jobs.copy': (request) => jobResource(jobIdOf(request), 'DONE', { reason: 'invalid', message: 'nope' }) });
    await expect(harness.run(harness.sink({ table: 'daily', ...partitioned }), runContext({ columns }), [rows.map((row) => [...row])])).rejects.toBeInstanceOf(
      BigQueryPublishError,
    );
  });

  it('a run without rows replaces no partition', async () => {
    const { fake, harness } = await setUp({ 'tables.get': () => existingDaily() });
    const result = await harness.run(harness.sink({ table: 'daily', ...partitioned }), runContext({ columns }), [[]]);

    expect(fake.calls('jobs.copy')).toHaveLength(0);
    expect(result).toMatchObject({ rows: 0, details: { partitions: '', publishedBy: 'partition copies' } });
  });

  it('refuses an existing table partitioned otherwise before anything is loaded', async () => {
    const { fake, harness } = await setUp({ 'tables.get': () => existingDaily({ timePartitioning: { type: 'MONTH', field: 'day' } }) });
    const attempt = harness.run(harness.sink({ table: 'daily', ...partitioned }), runContext({ columns }), [rows.map((row) => [...row])]);

    await expect(attempt).rejects.toMatchObject({
      code: 'bigquery_table_layout_mismatch',
      message: expect.stringContaining('is MONTH on day, the job asks for DAY on day'),
    });
    expect(fake.calls('tables.insert')).toHaveLength(0);
    expect(fake.calls('jobs.insert')).toHaveLength(0);
  });

  it('reconciles differing clustering and required filter with one tables.patch right before the copies, never in prepare', async () => {
    const { fake, harness } = await setUp({ 'tables.get': () => existingDaily({ requirePartitionFilter: false, clustering: { fields: ['count'] } }) });
    const writer = await harness.prepare(harness.sink({ table: 'daily', ...partitioned }), runContext({ columns, runId: 'r1' }), [rows.map((row) => [...row])]);
    expect(fake.calls('tables.patch')).toHaveLength(0);
    await writer.publish();

    expect(fake.calls('tables.patch').map((request) => request.json)).toEqual([{ clustering: { fields: ['severity'] }, requirePartitionFilter: true }]);
    expect(fake.requests.findIndex((request) => request.call === 'tables.patch')).toBeLessThan(
      fake.requests.findIndex((request) => request.call === 'jobs.copy'),
    );
  });

  it('fails a row whose partition value is null while rows are written, before anything reaches BigQuery', async () => {
    const { fake, harness } = await setUp({});
    const writer = await harness.sink({ table: 'daily', ...partitioned }).open(runContext({ columns }));
    await expect(writer.writeRows([[...rows[0]], [null, 'low', 1n]])).rejects.toMatchObject({
      code: 'bigquery_partition_value_invalid',
      message: 'job open_incidents: partition column day: value null is null (it would go to the __NULL__ partition); nothing was loaded',
    });
    await writer.abort();
    expect(fake.requests).toEqual([]);
  });

  it('refuses a partition or cluster column the tile lacks when the writer opens, sending nothing', async () => {
    const { fake, harness } = await setUp({});
    await expect(harness.sink({ table: 'daily', partitionBy: { column: 'severity', granularity: 'day' } }).open(runContext({ columns }))).rejects.toMatchObject(
      {
        code: 'bigquery_partition_column_invalid',
        message: expect.stringMatching(/^job open_incidents: sink bigquery ops\.daily: partitionBy\.column = "severity": column severity is STRING/),
      },
    );
    await expect(harness.sink({ table: 'daily', clusterBy: ['nope'] }).open(runContext({ columns }))).rejects.toMatchObject({
      code: 'bigquery_cluster_column_invalid',
    });
    expect(fake.requests).toEqual([]);
    expect(await harness.leftovers()).toEqual([]);
  });

  describe('quotas', () => {
    it('quotaExceeded on the load fails at once with bigquery_quota_exceeded, without a retry or a new job id', async () => {
      const { fake, harness } = await setUp({
        'jobs.insert': () => apiError(403, 'quotaExceeded', 'Quota exceeded: Your table exceeded quota for imports or query appends per table'),
      });
      const attempt = harness.run(harness.sink({ table: 'incidents' }), runContext({ columns, runId: 'r1' }), [[[...rows[0]]]]);

      await expect(attempt).rejects.toMatchObject({
        code: 'bigquery_quota_exceeded',
        message: expect.stringMatching(
          /^job open_incidents: BigQuery refused load job tilehouse_open_incidents_ops_incidents_r1_load for \S+: quota exceeded: Quota exceeded: Your table exceeded quota/,
        ),
      });
      expect(fake.calls('jobs.insert')).toHaveLength(1);
      expect(fake.calls('tables.delete').map(tableIdOf)).toEqual(['_tilehouse_staging_open_incidents_incidents_r1']);
    });

    it('a copy job that finishes with quotaExceeded fails at once too', async () => {
      const { fake, harness } = await setUp({
        'jobs.copy': (request) =>
          jobResource(jobIdOf(request), 'DONE', { reason: 'quotaExceeded', message: 'Quota exceeded: too many table update operations' }),
      });
      await expect(harness.run(harness.sink({ table: 'incidents' }), runContext({ columns }), [[[...rows[0]]]])).rejects.toMatchObject({
        code: 'bigquery_quota_exceeded',
        kind: 'copy',
      });
      expect(fake.calls('jobs.copy')).toHaveLength(1);
    });

    it('rateLimitExceeded on a copy is retried with the same job id, and the run succeeds', async () => {
      const { fake, harness } = await setUp({
        'jobs.copy': (request, attempt) =>
          attempt < 3 ? apiError(403, 'rateLimitExceeded', 'Exceeded rate limits: too many table update operations') : jobResource(jobIdOf(request), 'DONE'),
      });
      await harness.run(harness.sink({ table: 'incidents' }), runContext({ columns, runId: 'r1' }), [[[...rows[0]]]]);
      expect(fake.calls('jobs.copy').map(jobIdOf)).toEqual(Array(3).fill('tilehouse_open_incidents_ops_incidents_r1_publish'));
    });
  });

  describe("BigQuery's row count", () => {
    const loaded =
      (outputRows: string): FakeRoutes['jobs.insert'] =>
      (request) => ({
        status: 200,
        body: { ...(jobResource(jobIdOf(request), 'DONE').body as object), statistics: { creationTime: fakeClock(), load: { outputRows } } },
      });

    it('is reported next to the rows sent when they agree', async () => {
      const { harness } = await setUp({ 'jobs.insert': loaded('3') });
      const result = await harness.run(harness.sink({ table: 'incidents' }), runContext({ columns }), [rows.map((row) => [...row])]);
      expect(result).toMatchObject({ rows: 3, details: { bigqueryRows: 3, sentRows: 3, rowCountChecked: true } });
    });

    it('fails the tile with bigquery_row_count_mismatch before publishing when they differ, and removes the staging table', async () => {
      const { fake, harness } = await setUp({ 'jobs.insert': loaded('2') });
      const attempt = harness.run(harness.sink({ table: 'incidents' }), runContext({ columns, runId: 'r1' }), [rows.map((row) => [...row])]);

      await expect(attempt).rejects.toMatchObject({
        code: 'bigquery_row_count_mismatch',
        message: `job open_incidents: load job tilehouse_open_incidents_ops_incidents_r1_load into ${FAKE_PROJECT_ID}.ops._tilehouse_staging_open_incidents_incidents_r1 reports 2 rows, tilehouse sent 3; nothing was published`,
      });
      expect(fake.calls('jobs.copy')).toHaveLength(0);
      expect(fake.calls('jobs.query')).toHaveLength(0);
      expect(fake.calls('tables.delete').map(tableIdOf)).toEqual(['_tilehouse_staging_open_incidents_incidents_r1']);
    });
  });
});
