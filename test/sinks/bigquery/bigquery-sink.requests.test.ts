// Request-shape tests: no emulator. They run the sink with the real client against a scripted fake
// of the BigQuery REST API on loopback (test/support/bigquery-fake-server.ts) and check the exact
// requests sent, for behaviour the emulator cannot show: it ignores partition decorators and
// schemaUpdateOptions, answers a reused job id with 500 instead of 409, and never fails transiently.
import { afterEach, describe, expect, it } from 'vitest';
import { BigQueryLoadError, BigQueryRequestError } from '../../../src/sinks/bigquery/bigquery-errors.js';
import {
  apiError,
  FAKE_PROJECT_ID,
  jobIdOf,
  jobResource,
  startFakeBigQuery,
  type FakeBigQuery,
  type FakeRoutes,
} from '../../support/bigquery-fake-server.js';
import { column, runContext, sinkHarness, type SinkHarness } from './sink-fixtures.js';

const columns = [column('incident', 'STRING'), column('count', 'INT64')];
const existingTable = { status: 200, body: { schema: { fields: [{ name: 'incident', type: 'STRING' }, { name: 'count', type: 'INTEGER' }] } } };

let fake: FakeBigQuery | undefined;
let harness: SinkHarness | undefined;

async function setUp(routes: FakeRoutes): Promise<{ fake: FakeBigQuery; harness: SinkHarness }> {
  fake = await startFakeBigQuery(routes);
  harness = await sinkHarness(fake.client(), 'ops');
  return { fake, harness };
}

afterEach(async () => {
  await harness?.cleanup();
  await fake?.close();
  harness = undefined;
  fake = undefined;
});

type LoadConfiguration = {
  destinationTable: { projectId: string; datasetId: string; tableId: string };
  sourceFormat?: string;
  writeDisposition?: string;
  createDisposition?: string;
  timePartitioning?: unknown;
  schemaUpdateOptions?: string[];
  autodetect?: boolean;
  schema: { fields: { name: string; type: string; mode: string }[] };
};

function loadConfiguration(fake: FakeBigQuery, index = 0): LoadConfiguration {
  const insert = fake.calls('jobs.insert')[index];
  return (insert?.json as { configuration: { load: LoadConfiguration } }).configuration.load;
}

describe('BigQuerySink requests', () => {
  it('uploads the NDJSON file in one multipart load job with an explicit, all-NULLABLE schema', async () => {
    const { fake, harness } = await setUp({});
    const sink = harness.sink({ table: 'incidents' });
    await harness.run(sink, runContext({ columns, runId: 'r1' }), [[['A-1', 3n]], [['A-2', null]]]);

    const [insert] = fake.calls('jobs.insert');
    expect(insert?.path).toBe(`/upload/bigquery/v2/projects/${FAKE_PROJECT_ID}/jobs`);
    expect(insert?.query.get('uploadType')).toBe('multipart');
    expect(insert?.upload).toBe('{"incident":"A-1","count":"3"}\n{"incident":"A-2","count":null}\n');
    expect(loadConfiguration(fake)).toEqual({
      destinationTable: { projectId: FAKE_PROJECT_ID, datasetId: 'ops', tableId: 'incidents' },
      sourceFormat: 'NEWLINE_DELIMITED_JSON',
      createDisposition: 'CREATE_IF_NEEDED',
      writeDisposition: 'WRITE_TRUNCATE',
      schema: {
        fields: [
          { name: 'incident', type: 'STRING', mode: 'NULLABLE' },
          { name: 'count', type: 'INT64', mode: 'NULLABLE' },
        ],
      },
    });
    expect(fake.calls('jobs.insert')).toHaveLength(1);
  });

  it('creates a missing dataset in the configured location', async () => {
    const { fake, harness } = await setUp({ 'datasets.get': () => apiError(404, 'notFound', 'Not found: Dataset') });
    await harness.run(harness.sink({ table: 'incidents' }), runContext({ columns }), [[['A-1', 1n]]]);

    expect(fake.calls('datasets.insert')).toHaveLength(1);
    expect(fake.calls('datasets.insert')[0]?.json).toMatchObject({ location: 'US', datasetReference: { datasetId: 'ops' } });
    // A new dataset has no tables: the schema is not looked up.
    expect(fake.calls('tables.get')).toHaveLength(0);
  });

  it('in partition mode, truncates the run day partition of an ingestion-time day-partitioned table', async () => {
    const { fake, harness } = await setUp({});
    const sink = harness.sink({ table: 'daily', writeMode: 'partition' }, { timezone: 'Europe/Berlin' });
    const result = await harness.run(sink, runContext({ columns, startedAt: new Date('2024-02-29T23:30:00Z') }), [[['A-1', 1n]]]);

    const load = loadConfiguration(fake);
    expect(load.destinationTable.tableId).toBe('daily$20240301');
    expect(load.writeDisposition).toBe('WRITE_TRUNCATE');
    expect(load.timePartitioning).toEqual({ type: 'DAY' });
    expect(fake.calls('tables.get')[0]?.path).toMatch(/\/tables\/daily$/);
    expect(result.target).toBe(`${FAKE_PROJECT_ID}.ops.daily$20240301`);
  });

  it('in partition mode, a backfill writes the partition of its window', async () => {
    const { fake, harness } = await setUp({});
    const sink = harness.sink({ table: 'daily', writeMode: 'partition' });
    await harness.run(sink, runContext({ columns, window: { from: '2023-12-31', to: '2024-01-01' } }), [[['A-1', 1n]]]);

    expect(loadConfiguration(fake).destinationTable.tableId).toBe('daily$20231231');
    expect(jobIdOf(fake.calls('jobs.insert')[0]!)).toContain('2023-12-31_2024-01-01');
  });

  it('in append mode, appends with lineage columns', async () => {
    const { fake, harness } = await setUp({});
    const context = runContext({ columns, runId: 'run-7', startedAt: new Date('2024-03-01T12:00:00.000Z') });
    await harness.run(harness.sink({ table: 'history', writeMode: 'append' }), context, [[['A-1', 1n]]]);

    const load = loadConfiguration(fake);
    expect(load.writeDisposition).toBe('WRITE_APPEND');
    expect(load.schema.fields.slice(2)).toEqual([
      { name: '_run_id', type: 'STRING', mode: 'NULLABLE' },
      { name: '_extracted_at', type: 'TIMESTAMP', mode: 'NULLABLE' },
    ]);
    expect(fake.calls('jobs.insert')[0]?.upload).toBe('{"incident":"A-1","count":"1","_run_id":"run-7","_extracted_at":"2024-03-01T12:00:00.000Z"}\n');
  });

  it('with schema add, allows field addition for new columns, and reports them', async () => {
    const appendedTable = {
      status: 200,
      body: {
        schema: {
          fields: [
            { name: 'incident', type: 'STRING' },
            { name: 'count', type: 'INTEGER' },
            { name: '_run_id', type: 'STRING' },
            { name: '_extracted_at', type: 'TIMESTAMP' },
          ],
        },
      },
    };
    const { fake, harness } = await setUp({ 'tables.get': () => appendedTable });
    const context = runContext({ columns: [...columns, column('region', 'STRING')] });
    const result = await harness.run(harness.sink({ table: 'history', writeMode: 'append', schema: 'add' }), context, [[['A-1', 1n, 'EU']]]);

    expect(loadConfiguration(fake).schemaUpdateOptions).toEqual(['ALLOW_FIELD_ADDITION']);
    expect(result.details).toMatchObject({ schemaAction: 'added:region' });
  });

  it('with schema add and nothing new, sends no schema update options', async () => {
    const { fake, harness } = await setUp({ 'tables.get': () => existingTable });
    const result = await harness.run(harness.sink({ table: 'incidents', schema: 'add' }), runContext({ columns }), [[['A-1', 1n]]]);

    expect(loadConfiguration(fake).schemaUpdateOptions).toBeUndefined();
    expect(result.details).toMatchObject({ schemaAction: 'unchanged' });
  });

  it('with a frozen schema and changed columns, sends no load at all', async () => {
    const { fake, harness } = await setUp({ 'tables.get': () => existingTable });
    const attempt = harness.run(harness.sink({ table: 'incidents' }), runContext({ columns: [column('incident', 'STRING')] }), [[['A-1']]]);

    await expect(attempt).rejects.toThrow('removed: count (INT64)');
    expect(fake.calls('jobs.insert')).toHaveLength(0);
    expect(await harness.leftovers()).toEqual([]);
  });

  describe('when the job id is already taken (409 duplicate)', () => {
    const duplicate = () => apiError(409, 'duplicate', 'Already Exists: Job fake-project:US.tilehouse_...');

    it('awaits the running job and succeeds with it, without a second load', async () => {
      const { fake, harness } = await setUp({
        'jobs.insert': duplicate,
        'jobs.get': (request, attempt) => jobResource(jobIdOf(request), attempt < 3 ? 'RUNNING' : 'DONE'),
      });
      const result = await harness.run(harness.sink({ table: 'incidents' }), runContext({ columns, runId: 'r1' }), [[['A-1', 1n]]]);

      expect(fake.calls('jobs.insert')).toHaveLength(1);
      expect(fake.calls('jobs.get').map(jobIdOf)).toEqual(Array(3).fill('tilehouse_open_incidents_ops_incidents_r1'));
      expect(result.details).toMatchObject({ jobId: 'tilehouse_open_incidents_ops_incidents_r1' });
    });

    it('takes a job that already finished well as this load, and reports what it loaded', async () => {
      const { fake, harness } = await setUp({
        'jobs.insert': duplicate,
        'jobs.get': (request) => ({
          status: 200,
          body: { ...(jobResource(jobIdOf(request), 'DONE').body as object), statistics: { load: { outputRows: '5' } } },
        }),
      });
      const result = await harness.run(harness.sink({ table: 'incidents' }), runContext({ columns }), [[['A-1', 1n]]]);

      expect(fake.calls('jobs.insert')).toHaveLength(1);
      expect(result.rows).toBe(5);
    });

    it('starts a new attempt with a new job id when the earlier job failed', async () => {
      const { fake, harness } = await setUp({
        'jobs.insert': (request, attempt) => (attempt === 1 ? duplicate() : jobResource(jobIdOf(request), 'DONE')),
        'jobs.get': (request) => jobResource(jobIdOf(request), 'DONE', { reason: 'invalid', message: 'earlier data was bad' }),
      });
      const result = await harness.run(harness.sink({ table: 'incidents' }), runContext({ columns, runId: 'r1' }), [[['A-1', 1n]]]);

      expect(fake.calls('jobs.insert').map(jobIdOf)).toEqual([
        'tilehouse_open_incidents_ops_incidents_r1',
        'tilehouse_open_incidents_ops_incidents_r1_attempt2',
      ]);
      expect(result.details).toMatchObject({ jobId: 'tilehouse_open_incidents_ops_incidents_r1_attempt2' });
    });
  });

  describe('retries', () => {
    it('retries an upload refused with rateLimitExceeded, reusing the job id', async () => {
      const { fake, harness } = await setUp({
        'jobs.insert': (request, attempt) => (attempt === 1 ? apiError(403, 'rateLimitExceeded', 'Exceeded rate limits') : jobResource(jobIdOf(request), 'DONE')),
      });
      await harness.run(harness.sink({ table: 'incidents' }), runContext({ columns }), [[['A-1', 1n]]]);

      const ids = fake.calls('jobs.insert').map(jobIdOf);
      expect(ids).toHaveLength(2);
      expect(ids[1]).toBe(ids[0]);
      expect(fake.calls('jobs.insert')[1]?.upload).toBe(fake.calls('jobs.insert')[0]?.upload);
    });

    it('retries on HTTP 5xx and backendError, up to the attempt limit', async () => {
      const { fake, harness } = await setUp({
        'datasets.get': (_, attempt) => (attempt === 1 ? apiError(503, 'backendError', 'Backend error') : { status: 200, body: { location: 'US' } }),
        'tables.get': () => apiError(502, 'badGateway', 'Bad gateway'),
      });
      const attempt = harness.run(harness.sink({ table: 'incidents' }), runContext({ columns }), [[['A-1', 1n]]]);

      await expect(attempt).rejects.toBeInstanceOf(BigQueryRequestError);
      expect(fake.calls('datasets.get')).toHaveLength(2);
      // FAST.retry.attempts = 3
      expect(fake.calls('tables.get')).toHaveLength(3);
      expect(fake.calls('jobs.insert')).toHaveLength(0);
    });

    it('does not retry other errors, and names table, job and reason', async () => {
      const { fake, harness } = await setUp({
        'jobs.insert': () => apiError(400, 'invalid', 'Error while reading data, error message: JSON parsing error in row starting at position 0'),
      });
      const attempt = harness.run(harness.sink({ table: 'incidents' }), runContext({ columns, runId: 'r9' }), [[['A-1', 1n]]]);

      const error = await attempt.then(() => expect.unreachable(), (thrown: unknown) => thrown);
      expect(error).toBeInstanceOf(BigQueryLoadError);
      expect((error as Error).message).toBe(
        `tile tile-42: load job tilehouse_open_incidents_ops_incidents_r9 into ${FAKE_PROJECT_ID}.ops.incidents failed: ` +
          'Error while reading data, error message: JSON parsing error in row starting at position 0',
      );
      expect(fake.calls('jobs.insert')).toHaveLength(1);
      expect(await harness.leftovers()).toEqual([]);
    });

    it('fails a job that finishes with an error, naming its first errors, without another attempt', async () => {
      const { fake, harness } = await setUp({
        'jobs.insert': (request) => jobResource(jobIdOf(request), 'RUNNING'),
        'jobs.get': (request) => ({
          status: 200,
          body: {
            jobReference: { jobId: jobIdOf(request), location: 'US' },
            status: {
              state: 'DONE',
              errorResult: { reason: 'invalid', message: 'Error while reading data' },
              errors: [
                { reason: 'invalid', message: 'Error while reading data' },
                { reason: 'invalid', message: 'Invalid NUMERIC value', location: 'row 3' },
              ],
            },
          },
        }),
      });
      const attempt = harness.run(harness.sink({ table: 'incidents' }), runContext({ columns }), [[['A-1', 1n]]]);

      await expect(attempt).rejects.toThrow(/failed: Error while reading data; Invalid NUMERIC value \(at row 3\)$/);
      expect(fake.calls('jobs.insert')).toHaveLength(1);
      expect(await harness.leftovers()).toEqual([]);
    });

    it('retries a job that fails with backendError under a new job id', async () => {
      const { fake, harness } = await setUp({
        'jobs.get': (request, attempt) =>
          jobResource(jobIdOf(request), 'DONE', attempt === 1 ? { reason: 'backendError', message: 'transient' } : undefined),
        'jobs.insert': (request) => jobResource(jobIdOf(request), 'RUNNING'),
      });
      const result = await harness.run(harness.sink({ table: 'incidents' }), runContext({ columns, runId: 'r2' }), [[['A-1', 1n]]]);

      expect(fake.calls('jobs.insert').map(jobIdOf)).toEqual([
        'tilehouse_open_incidents_ops_incidents_r2',
        'tilehouse_open_incidents_ops_incidents_r2_attempt2',
      ]);
      expect(result.details).toMatchObject({ jobId: 'tilehouse_open_incidents_ops_incidents_r2_attempt2' });
    });
  });
});
