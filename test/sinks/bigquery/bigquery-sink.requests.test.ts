// Request-shape tests: no emulator. They run the sink with the real client against a scripted fake
// of the BigQuery REST API on loopback (test/support/bigquery-fake-server.ts) and check the exact
// requests sent, for behaviour the emulator cannot show: it has no copy jobs at all (a copy is
// refused with "unspecified job configuration query"), ignores partition decorators, keeps columns
// added by tables.patch out of its storage, answers a reused job id with 500 instead of 409,
// finishes every job at once (so no signal can arrive while one runs), ignores jobs.cancel, and
// never fails transiently.
import { BigQuery } from '@google-cloud/bigquery';
import { describe, expect, it } from 'vitest';
import { BigQueryLoadError, BigQueryLoadFileError, BigQueryPublishError, BigQueryRequestError } from '../../../src/sinks/bigquery/bigquery-errors.js';
import { STAGING_TABLE_LIFETIME_MS } from '../../../src/sinks/bigquery/staging-table.js';
import {
  apiError,
  FAKE_PROJECT_ID,
  fakeClock,
  jobIdOf,
  jobResource,
  tableIdOf,
  type FakeBigQuery,
  type FakeRoutes,
  type RecordedRequest,
  type Reply,
} from '../../support/bigquery-fake-server.js';
import { column, runContext, type SinkHarness, useFakeSinkSetup } from './sink-fixtures.js';

const columns = [column('incident', 'STRING'), column('count', 'INT64')];
const existingTable = {
  status: 200,
  body: {
    schema: {
      fields: [
        { name: 'incident', type: 'STRING' },
        { name: 'count', type: 'INTEGER' },
      ],
    },
  },
};
const STAGING = '_tilehouse_staging_open_incidents_incidents_r1';
const LOAD_ID = 'tilehouse_open_incidents_ops_incidents_r1_load';
const PUBLISH_ID = 'tilehouse_open_incidents_ops_incidents_r1_publish';

const setUp = useFakeSinkSetup();

type TableReference = { projectId: string; datasetId: string; tableId: string };
type LoadConfiguration = {
  destinationTable: TableReference;
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

function copyRequest(fake: FakeBigQuery, index = 0): unknown {
  return fake.calls('jobs.copy')[index]?.json;
}

/** The requests in order, as `call table-or-job`, for checking what happened when. */
function sequence(fake: FakeBigQuery): string[] {
  return fake.requests.map((request) => {
    if (request.call.startsWith('tables.')) return `${request.call} ${tableIdOf(request)}`;
    if (request.call.startsWith('jobs.')) return `${request.call} ${jobIdOf(request)}`;
    return request.call;
  });
}

const table = (tableId: string): TableReference => ({ projectId: FAKE_PROJECT_ID, datasetId: 'ops', tableId });

describe('BigQuerySink requests', () => {
  describe('prepare', () => {
    it('creates the staging table with the schema and a day of lifetime, then loads the file into it in one multipart load job', async () => {
      const { fake, harness } = await setUp({});
      const before = Date.now();
      await harness.prepare(harness.sink({ table: 'incidents' }), runContext({ columns, runId: 'r1' }), [[['A-1', 3n]], [['A-2', null]]]);

      expect(sequence(fake)).toEqual(['datasets.get', 'tables.get incidents', `tables.insert ${STAGING}`, `jobs.insert ${LOAD_ID}`]);
      const created = fake.calls('tables.insert')[0]?.json as { expirationTime: string; schema: unknown; tableReference: TableReference };
      expect(created.tableReference).toEqual(table(STAGING));
      expect(created.schema).toEqual({
        fields: [
          { name: 'incident', type: 'STRING', mode: 'NULLABLE' },
          { name: 'count', type: 'INT64', mode: 'NULLABLE' },
        ],
      });
      const expiresIn = Number(created.expirationTime) - before;
      expect(expiresIn).toBeGreaterThanOrEqual(STAGING_TABLE_LIFETIME_MS);
      expect(expiresIn).toBeLessThan(STAGING_TABLE_LIFETIME_MS + 60_000);

      const [insert] = fake.calls('jobs.insert');
      expect(insert?.path).toBe(`/upload/bigquery/v2/projects/${FAKE_PROJECT_ID}/jobs`);
      expect(insert?.query.get('uploadType')).toBe('multipart');
      expect(insert?.upload).toBe('{"incident":"A-1","count":"3"}\n{"incident":"A-2","count":null}\n');
      expect(loadConfiguration(fake)).toEqual({
        destinationTable: table(STAGING),
        sourceFormat: 'NEWLINE_DELIMITED_JSON',
        createDisposition: 'CREATE_NEVER',
        writeDisposition: 'WRITE_TRUNCATE',
        schema: {
          fields: [
            { name: 'incident', type: 'STRING', mode: 'NULLABLE' },
            { name: 'count', type: 'INT64', mode: 'NULLABLE' },
          ],
        },
      });
      expect(await harness.leftovers()).toEqual([]);
    });

    it('reuses a staging table that a retried prepare of the same run left (409 on create)', async () => {
      const { fake, harness } = await setUp({
        'tables.insert': () => apiError(409, 'duplicate', 'Already Exists: Table'),
        'tables.get': (request) =>
          tableIdOf(request) === STAGING ? { status: 200, body: { creationTime: '1700000000000' } } : apiError(404, 'notFound', 'Not found: Table'),
      });
      await harness.prepare(harness.sink({ table: 'incidents' }), runContext({ columns, runId: 'r1' }), [[['A-1', 1n]]]);

      expect(sequence(fake)).toEqual(['datasets.get', 'tables.get incidents', `tables.insert ${STAGING}`, `tables.get ${STAGING}`, `jobs.insert ${LOAD_ID}`]);
      expect(loadConfiguration(fake).destinationTable.tableId).toBe(STAGING);
    });

    it('creates a missing dataset in the configured location', async () => {
      const { fake, harness } = await setUp({ 'datasets.get': () => apiError(404, 'notFound', 'Not found: Dataset') });
      await harness.run(harness.sink({ table: 'incidents' }), runContext({ columns }), [[['A-1', 1n]]]);

      expect(fake.calls('datasets.insert')).toHaveLength(1);
      expect(fake.calls('datasets.insert')[0]?.json).toMatchObject({ location: 'US', datasetReference: { datasetId: 'ops' } });
      // A new dataset has no tables: the schema is not looked up.
      expect(fake.calls('tables.get')).toHaveLength(0);
    });

    it('with a frozen schema and changed columns, creates no staging table and sends no job at all', async () => {
      const { fake, harness } = await setUp({ 'tables.get': () => existingTable });
      const attempt = harness.run(harness.sink({ table: 'incidents' }), runContext({ columns: [column('incident', 'STRING')] }), [[['A-1']]]);

      await expect(attempt).rejects.toThrow('removed: count (INT64)');
      expect(sequence(fake)).toEqual(['datasets.get', 'tables.get incidents']);
      expect(await harness.leftovers()).toEqual([]);
    });

    it('fails with bigquery_load_file_missing when the load file is gone, without an upload or a crash', async () => {
      const { fake, harness } = await setUp({});
      const writer = await harness.sink({ table: 'incidents' }).open(runContext({ columns, runId: 'r1' }));
      await writer.writeRows([['A-1', 1n]]);
      const [file] = await harness.leftovers();
      const { rm } = await import('node:fs/promises');
      await rm(`${harness.tempDirectory}/${file}`);

      const error = await writer.prepare().then(
        () => expect.unreachable(),
        (thrown: unknown) => thrown,
      );
      expect(error).toBeInstanceOf(BigQueryLoadFileError);
      expect((error as BigQueryLoadFileError).code).toBe('bigquery_load_file_missing');
      expect((error as Error).message).toMatch(/^job open_incidents: cannot read the load file .*\.ndjson: ENOENT/);
      await writer.abort();

      expect(fake.calls('jobs.insert')).toHaveLength(0);
      expect(sequence(fake).slice(-1)).toEqual([`tables.delete ${STAGING}`]);
    });
  });

  describe('publish', () => {
    it('in replace mode, replaces the rows of an existing table with one WRITE_TRUNCATE_DATA query job (keeping its metadata), then deletes the staging table', async () => {
      const { fake, harness } = await setUp({ 'tables.get': () => existingTable });
      const result = await harness.run(harness.sink({ table: 'incidents' }), runContext({ columns, runId: 'r1' }), [[['A-1', 1n]]]);

      expect(sequence(fake)).toEqual([
        'datasets.get',
        'tables.get incidents',
        `tables.insert ${STAGING}`,
        `jobs.insert ${LOAD_ID}`,
        `jobs.query ${PUBLISH_ID}`,
        `tables.delete ${STAGING}`,
      ]);
      expect(fake.calls('jobs.copy')).toHaveLength(0);
      expect(fake.calls('jobs.query')[0]?.path).toBe(`/bigquery/v2/projects/${FAKE_PROJECT_ID}/jobs`);
      expect(fake.calls('jobs.query')[0]?.json).toEqual({
        jobReference: { projectId: FAKE_PROJECT_ID, jobId: PUBLISH_ID, location: 'US' },
        configuration: {
          query: {
            query: `SELECT \`incident\` AS \`incident\`, \`count\` AS \`count\` FROM \`${FAKE_PROJECT_ID}.ops.${STAGING}\``,
            useLegacySql: false,
            destinationTable: table('incidents'),
            createDisposition: 'CREATE_NEVER',
            writeDisposition: 'WRITE_TRUNCATE_DATA',
          },
          labels: { tilehouse_job: 'open_incidents', tile: 'tile-42', run_id: 'r1' },
        },
      });
      expect(result).toEqual({
        sink: 'bigquery',
        target: `${FAKE_PROJECT_ID}.ops.incidents`,
        rows: 1,
        details: {
          jobId: PUBLISH_ID,
          loadJobId: LOAD_ID,
          writeMode: 'replace',
          schemaAction: 'unchanged',
          publishedBy: 'truncate-data query',
          sentRows: 1,
          loadFileBytes: expect.any(Number),
          rowCountChecked: false,
        },
      });
    });

    it('in replace mode, selects the table columns in the table order and names, and a column the run lacks as a typed NULL', async () => {
      const { fake, harness } = await setUp({
        'tables.get': () => ({
          status: 200,
          body: {
            schema: {
              fields: [
                { name: 'COUNT', type: 'INTEGER', description: 'kept' },
                { name: '_run_id', type: 'STRING' },
                { name: 'Incident', type: 'STRING' },
              ],
            },
          },
        }),
      });
      await harness.run(harness.sink({ table: 'incidents' }), runContext({ columns, runId: 'r1' }), [[['A-1', 1n]]]);

      const query = (fake.calls('jobs.query')[0]?.json as { configuration: { query: { query: string } } }).configuration.query.query;
      expect(query).toBe(
        `SELECT \`count\` AS \`COUNT\`, CAST(NULL AS STRING) AS \`_run_id\`, \`incident\` AS \`Incident\` FROM \`${FAKE_PROJECT_ID}.ops.${STAGING}\``,
      );
    });

    it('creates a missing target right before the copy, never in prepare, and never lets the copy create it', async () => {
      const { fake, harness } = await setUp({});
      const writer = await harness.prepare(harness.sink({ table: 'incidents' }), runContext({ columns, runId: 'r1' }), [[['A-1', 1n]]]);
      expect(fake.calls('tables.insert').map(tableIdOf)).toEqual([STAGING]);

      await writer.publish();
      expect(sequence(fake).slice(4)).toEqual(['tables.insert incidents', `jobs.copy ${PUBLISH_ID}`, `tables.delete ${STAGING}`]);
      // A new table has no metadata to keep: the free copy with WRITE_TRUNCATE publishes it.
      expect(copyRequest(fake)).toEqual({
        jobReference: { projectId: FAKE_PROJECT_ID, jobId: PUBLISH_ID, location: 'US' },
        configuration: {
          copy: { sourceTable: table(STAGING), destinationTable: table('incidents'), createDisposition: 'CREATE_NEVER', writeDisposition: 'WRITE_TRUNCATE' },
          labels: { tilehouse_job: 'open_incidents', tile: 'tile-42', run_id: 'r1' },
        },
      });
      expect(fake.calls('tables.insert')[1]?.json).toEqual({
        tableReference: table('incidents'),
        schema: {
          fields: [
            { name: 'incident', type: 'STRING', mode: 'NULLABLE' },
            { name: 'count', type: 'INT64', mode: 'NULLABLE' },
          ],
        },
      });
    });

    it('reports the rows BigQuery says it copied', async () => {
      const { harness } = await setUp({
        'jobs.copy': (request) => ({
          status: 200,
          body: { ...(jobResource(jobIdOf(request), 'DONE').body as object), statistics: { copy: { copiedRows: '5' } } },
        }),
      });
      const result = await harness.run(harness.sink({ table: 'incidents' }), runContext({ columns }), [[['A-1', 1n]]]);

      expect(result.rows).toBe(5);
    });

    it('in partition mode, creates a missing table with DAY partitioning and truncates the run day partition of it', async () => {
      const { fake, harness } = await setUp({});
      const sink = harness.sink({ table: 'daily', writeMode: 'partition' }, { timezone: 'Europe/Berlin' });
      const result = await harness.run(sink, runContext({ columns, startedAt: new Date('2024-02-29T23:30:00Z') }), [[['A-1', 1n]]]);

      const created = fake.calls('tables.insert').find((request) => tableIdOf(request) === 'daily');
      expect(created?.json).toMatchObject({ timePartitioning: { type: 'DAY' }, schema: { fields: [{ name: 'incident' }, { name: 'count' }] } });
      // The staging table itself is a plain table: the load never sees the partition.
      expect(loadConfiguration(fake).timePartitioning).toBeUndefined();
      expect(copyRequest(fake)).toMatchObject({
        configuration: { copy: { destinationTable: table('daily$20240301'), writeDisposition: 'WRITE_TRUNCATE', createDisposition: 'CREATE_NEVER' } },
      });
      expect(fake.calls('tables.get')[0]?.path).toMatch(/\/tables\/daily$/);
      expect(result.target).toBe(`${FAKE_PROJECT_ID}.ops.daily$20240301`);
    });

    it('in partition mode, leaves an existing table alone and copies onto the partition of the backfill window', async () => {
      const { fake, harness } = await setUp({ 'tables.get': () => existingTable });
      const sink = harness.sink({ table: 'daily', writeMode: 'partition' });
      await harness.run(sink, runContext({ columns, window: { from: '2023-12-31', to: '2024-01-01' } }), [[['A-1', 1n]]]);

      expect(fake.calls('tables.insert').map(tableIdOf)).toEqual([expect.stringMatching(/^_tilehouse_staging_open_incidents_daily_2023_12_31_2024_01_01_run/)]);
      expect(copyRequest(fake)).toMatchObject({ configuration: { copy: { destinationTable: table('daily$20231231') } } });
      expect(jobIdOf(fake.calls('jobs.insert')[0]!)).toMatch(/_2023-12-31_2024-01-01_run-\w+_load$/);
      expect(jobIdOf(fake.calls('jobs.copy')[0]!)).toMatch(/_2023-12-31_2024-01-01_run-\w+_publish$/);
    });

    it('in append mode, loads lineage columns into the staging table and appends it with WRITE_APPEND', async () => {
      const { fake, harness } = await setUp({});
      const context = runContext({ columns, runId: 'run-7', startedAt: new Date('2024-03-01T12:00:00.000Z') });
      await harness.run(harness.sink({ table: 'history', writeMode: 'append' }), context, [[['A-1', 1n]]]);

      const load = loadConfiguration(fake);
      expect(load.writeDisposition).toBe('WRITE_TRUNCATE');
      expect(load.schema.fields.slice(2)).toEqual([
        { name: '_run_id', type: 'STRING', mode: 'NULLABLE' },
        { name: '_extracted_at', type: 'TIMESTAMP', mode: 'NULLABLE' },
      ]);
      expect(fake.calls('jobs.insert')[0]?.upload).toBe('{"incident":"A-1","count":"1","_run_id":"run-7","_extracted_at":"2024-03-01T12:00:00.000Z"}\n');
      expect(copyRequest(fake)).toMatchObject({ configuration: { copy: { destinationTable: table('history'), writeDisposition: 'WRITE_APPEND' } } });
    });

    it('with schema add in append mode, adds the new NULLABLE columns with tables.patch before the copy, keeping the existing fields as they were', async () => {
      const existingFields = [
        { name: 'incident', type: 'STRING', mode: 'REQUIRED', description: 'kept as it is' },
        { name: 'count', type: 'INTEGER' },
        { name: '_run_id', type: 'STRING' },
        { name: '_extracted_at', type: 'TIMESTAMP' },
      ];
      const { fake, harness } = await setUp({ 'tables.get': () => ({ status: 200, body: { schema: { fields: existingFields } } }) });
      const context = runContext({ columns: [...columns, column('region', 'STRING')], runId: 'r1' });
      const writer = await harness.prepare(harness.sink({ table: 'history', writeMode: 'append', schema: 'add' }), context, [[['A-1', 1n, 'EU']]]);
      expect(fake.calls('tables.patch')).toHaveLength(0);

      const result = await writer.publish();
      expect(sequence(fake).slice(-3)).toEqual([
        'tables.patch history',
        'jobs.copy tilehouse_open_incidents_ops_history_r1_publish',
        'tables.delete _tilehouse_staging_open_incidents_history_r1',
      ]);
      expect(fake.calls('tables.patch')[0]?.json).toEqual({
        schema: { fields: [...existingFields, { name: 'region', type: 'STRING', mode: 'NULLABLE' }] },
      });
      expect(loadConfiguration(fake).schemaUpdateOptions).toBeUndefined();
      expect(result.details).toMatchObject({ schemaAction: 'added:region' });
    });

    it('with schema add in replace mode, adds the new columns with tables.patch, then selects them too: WRITE_TRUNCATE_DATA keeps the table schema', async () => {
      const { fake, harness } = await setUp({ 'tables.get': () => existingTable });
      const context = runContext({ columns: [...columns, column('region', 'STRING')], runId: 'r1' });
      const result = await harness.run(harness.sink({ table: 'incidents', schema: 'add' }), context, [[['A-1', 1n, 'EU']]]);

      expect(sequence(fake).slice(-3)).toEqual(['tables.patch incidents', `jobs.query ${PUBLISH_ID}`, `tables.delete ${STAGING}`]);
      expect(fake.calls('tables.patch')[0]?.json).toEqual({
        schema: { fields: [...existingTable.body.schema.fields, { name: 'region', type: 'STRING', mode: 'NULLABLE' }] },
      });
      const query = (fake.calls('jobs.query')[0]?.json as { configuration: { query: { query: string } } }).configuration.query.query;
      expect(query).toMatch(/^SELECT `incident` AS `incident`, `count` AS `count`, `region` AS `region` FROM /);
      expect(result.details).toMatchObject({ schemaAction: 'added:region' });
    });

    it('fails naming the copy job when BigQuery refuses the copy, and abort then deletes the staging table', async () => {
      const { fake, harness } = await setUp({
        'jobs.copy': (request) => jobResource(jobIdOf(request), 'RUNNING'),
        'jobs.get': (request) =>
          jobIdOf(request).endsWith('_publish')
            ? jobResource(jobIdOf(request), 'DONE', { reason: 'invalid', message: 'Provided Schema does not match Table' })
            : jobResource(jobIdOf(request), 'DONE'),
      });
      const writer = await harness.prepare(harness.sink({ table: 'incidents' }), runContext({ columns, runId: 'r1' }), [[['A-1', 1n]]]);

      const error = await writer.publish().then(
        () => expect.unreachable(),
        (thrown: unknown) => thrown,
      );
      expect(error).toBeInstanceOf(BigQueryPublishError);
      expect((error as BigQueryPublishError).code).toBe('bigquery_publish_failed');
      expect((error as Error).message).toBe(
        `job open_incidents: copy job ${PUBLISH_ID} onto ${FAKE_PROJECT_ID}.ops.incidents failed: Provided Schema does not match Table`,
      );
      expect(fake.calls('tables.delete')).toHaveLength(0);

      await writer.abort();
      await writer.abort();
      expect(sequence(fake).slice(-1)).toEqual([`tables.delete ${STAGING}`]);
      expect(fake.calls('tables.delete')).toHaveLength(1);
      expect(fake.calls('jobs.cancel')).toHaveLength(0);
    });

    it('deletes the staging table best effort: a failed delete is logged, the publish still succeeds', async () => {
      const { harness } = await setUp({ 'tables.delete': () => apiError(403, 'accessDenied', 'Access Denied: Table') });
      const result = await harness.run(harness.sink({ table: 'incidents' }), runContext({ columns }), [[['A-1', 1n]]]);

      expect(result.rows).toBe(1);
    });

    it('after a successful publish, abort sends nothing', async () => {
      const { fake, harness } = await setUp({});
      const writer = await harness.prepare(harness.sink({ table: 'incidents' }), runContext({ columns }), [[['A-1', 1n]]]);
      await writer.publish();
      const sent = fake.requests.length;

      await writer.abort();
      expect(fake.requests.length).toBe(sent);
    });
  });

  describe('the project', () => {
    // What google-auth-library rejects with when Application Default Credentials name no project.
    const NO_ADC_PROJECT =
      'Unable to detect a Project Id in the current environment. \nTo learn more about authentication and Google APIs, visit: \nhttps://cloud.google.com/docs/authentication/getting-started';

    /** A harness whose client has no project and whose ADC lookup fails with `message`. */
    function withoutProject(message: string): Promise<{ fake: FakeBigQuery; harness: SinkHarness }> {
      return setUp({}, (fake) => {
        const client = new BigQuery({ apiEndpoint: fake.endpoint.apiEndpoint });
        Object.assign(client, { getProjectId: () => Promise.reject(new Error(message)) });
        return client;
      });
    }

    it('is bigquery_project_unknown (exit 2) when neither the config nor Application Default Credentials name one, before any request', async () => {
      const { fake, harness } = await withoutProject(NO_ADC_PROJECT);
      const sink = harness.sink({ table: 'incidents' });
      const message =
        'job open_incidents: no BigQuery project: set sinks.bigquery.projectId in the environment config, or run "gcloud auth application-default login" (Workload Identity in a cluster)';

      await expect(sink.open(runContext({ columns }))).rejects.toMatchObject({ code: 'bigquery_project_unknown', exitCode: 2, message });
      expect(await sink.plan(runContext({ columns }))).toMatchObject({ action: 'refuse', details: [`bigquery_project_unknown: ${message}`] });
      expect(fake.requests).toEqual([]);
      expect(await harness.leftovers()).toEqual([]);
    });

    it('any other failure to find it is bigquery_request_failed, quoting it', async () => {
      const { harness } = await withoutProject('connect ECONNREFUSED 169.254.169.254:80');
      await expect(harness.sink({ table: 'incidents' }).open(runContext({ columns }))).rejects.toMatchObject({
        code: 'bigquery_request_failed',
        message: 'job open_incidents: finding the project of Application Default Credentials failed: connect ECONNREFUSED 169.254.169.254:80',
      });
    });
  });

  describe('abort before publish', () => {
    it('deletes the staging table after a prepare, and leaves the target without a single request', async () => {
      const { fake, harness } = await setUp({ 'tables.get': () => existingTable });
      const writer = await harness.prepare(harness.sink({ table: 'incidents' }), runContext({ columns, runId: 'r1' }), [[['A-1', 1n]]]);

      await writer.abort();
      expect(sequence(fake).slice(3)).toEqual([`jobs.insert ${LOAD_ID}`, `tables.delete ${STAGING}`]);
      expect(fake.calls('jobs.copy')).toHaveLength(0);
      await expect(writer.publish()).rejects.toThrow(/: bigquery [\w.$-]+: publish called on a writer that is aborted$/);
    });
  });

  describe('the run abort signal', () => {
    it('fired while the staging load runs: stops waiting, sends no copy, and abort cancels the load and deletes the staging table', async () => {
      const controller = new AbortController();
      const { fake, harness } = await setUp({
        'jobs.insert': (request) => jobResource(jobIdOf(request), 'RUNNING'),
        'jobs.get': (request, attempt) => {
          if (attempt === 2) controller.abort(new Error('SIGTERM'));
          return jobResource(jobIdOf(request), 'RUNNING');
        },
      });
      const writer = await harness.sink({ table: 'incidents' }).open(runContext({ columns, runId: 'r1', signal: controller.signal }));
      await writer.writeRows([['A-1', 1n]]);

      await expect(writer.prepare()).rejects.toThrow('SIGTERM');
      expect(fake.calls('jobs.get')).toHaveLength(2);
      await writer.abort();

      expect(fake.calls('jobs.copy')).toHaveLength(0);
      expect(sequence(fake).slice(-2)).toEqual([`jobs.cancel ${LOAD_ID}`, `tables.delete ${STAGING}`]);
      expect(fake.calls('jobs.cancel')[0]?.path).toBe(`/bigquery/v2/projects/${FAKE_PROJECT_ID}/jobs/${LOAD_ID}/cancel`);
      expect(fake.calls('jobs.cancel')[0]?.query.get('location')).toBe('US');
      expect(await harness.leftovers()).toEqual([]);
    });

    it('already fired before prepare: sends nothing to BigQuery', async () => {
      const controller = new AbortController();
      controller.abort(new Error('SIGINT'));
      const { fake, harness } = await setUp({});
      const writer = await harness.sink({ table: 'incidents' }).open(runContext({ columns, signal: controller.signal }));
      await writer.writeRows([['A-1', 1n]]);

      await expect(writer.prepare()).rejects.toThrow('SIGINT');
      await writer.abort();
      expect(fake.requests).toEqual([]);
      expect(await harness.leftovers()).toEqual([]);
    });

    it('fired while the copy runs: publish keeps waiting and returns the copy job real outcome', async () => {
      const controller = new AbortController();
      const { fake, harness } = await setUp({
        'jobs.copy': (request) => jobResource(jobIdOf(request), 'RUNNING'),
        'jobs.get': (request, attempt) => {
          if (attempt === 1) controller.abort(new Error('SIGTERM'));
          if (attempt < 4) return jobResource(jobIdOf(request), 'RUNNING');
          return { status: 200, body: { ...(jobResource(jobIdOf(request), 'DONE').body as object), statistics: { copy: { copiedRows: '1' } } } };
        },
      });
      const writer = await harness.sink({ table: 'incidents' }).open(runContext({ columns, runId: 'r1', signal: controller.signal }));
      await writer.writeRows([['A-1', 1n]]);
      await writer.prepare();

      const result = await writer.publish();
      expect(controller.signal.aborted).toBe(true);
      expect(fake.calls('jobs.get').map(jobIdOf)).toEqual(Array(4).fill(PUBLISH_ID));
      expect(result).toMatchObject({ rows: 1, details: { jobId: PUBLISH_ID } });
      // Published: the abort the pipeline sends after a signal changes nothing.
      await writer.abort();
      expect(fake.calls('jobs.cancel')).toHaveLength(0);
      expect(fake.calls('tables.delete')).toHaveLength(1);
    });

    it('fired while the copy runs: a copy that then fails is reported as that failure', async () => {
      const controller = new AbortController();
      const { harness } = await setUp({
        'jobs.copy': (request) => jobResource(jobIdOf(request), 'RUNNING'),
        'jobs.get': (request, attempt) => {
          controller.abort(new Error('SIGTERM'));
          return attempt < 3
            ? jobResource(jobIdOf(request), 'RUNNING')
            : jobResource(jobIdOf(request), 'DONE', { reason: 'invalid', message: 'schema mismatch' });
        },
      });
      const writer = await harness.sink({ table: 'incidents' }).open(runContext({ columns, signal: controller.signal }));
      await writer.prepare();

      await expect(writer.publish()).rejects.toThrow(/copy job \S+_publish onto \S+ failed: schema mismatch$/);
    });
  });

  describe('re-running with the same run id (the append idempotency key)', () => {
    /**
     * A fake with memory, like BigQuery: a job id is taken once (then 409), a table exists from
     * insert to delete, and a copy that ran is counted, so a second append would show.
     */
    function bigQueryWithMemory(): { routes: FakeRoutes; appliedCopies: () => number } {
      const jobs = new Map<string, Reply>();
      const tables = new Set<string>(['history']);
      let applied = 0;
      const insertJob = (request: RecordedRequest, apply: () => void): Reply => {
        const id = jobIdOf(request);
        if (jobs.has(id)) return apiError(409, 'duplicate', `Already Exists: Job ${FAKE_PROJECT_ID}:US.${id}`);
        apply();
        const done = { status: 200, body: { ...(jobResource(id, 'DONE').body as object), statistics: { creationTime: fakeClock() } } };
        jobs.set(id, done);
        return done;
      };
      return {
        appliedCopies: () => applied,
        routes: {
          'tables.get': (request) =>
            tables.has(tableIdOf(request))
              ? {
                  status: 200,
                  body: {
                    schema: {
                      fields: [
                        ...columns.map((c) => ({ name: c.name, type: c.type })),
                        { name: '_run_id', type: 'STRING' },
                        { name: '_extracted_at', type: 'TIMESTAMP' },
                      ],
                    },
                  },
                }
              : apiError(404, 'notFound', 'Not found: Table'),
          'tables.insert': (request) => {
            tables.add(tableIdOf(request));
            return { status: 200, body: { ...(request.json as object), creationTime: fakeClock() } };
          },
          'tables.delete': (request) => {
            tables.delete(tableIdOf(request));
            return { status: 204 };
          },
          'jobs.insert': (request) => insertJob(request, () => undefined),
          'jobs.copy': (request) =>
            insertJob(request, () => {
              applied += 1;
            }),
          'jobs.get': (request) => jobs.get(jobIdOf(request)) ?? apiError(404, 'notFound', 'Not found: Job'),
        },
      };
    }

    it('adopts the earlier copy job (409) instead of appending the run a second time', async () => {
      const memory = bigQueryWithMemory();
      const { fake, harness } = await setUp(memory.routes);
      const sink = harness.sink({ table: 'history', writeMode: 'append' });
      const first = await harness.run(sink, runContext({ columns, runId: 'run-once' }), [[['A-1', 1n]]]);
      const second = await harness.run(sink, runContext({ columns, runId: 'run-once' }), [[['A-1', 1n]]]);

      expect(memory.appliedCopies()).toBe(1);
      const publishId = 'tilehouse_open_incidents_ops_history_run-once_publish';
      expect(first.details).toMatchObject({
        jobId: publishId,
        loadJobId: 'tilehouse_open_incidents_ops_history_run-once_load',
        writeMode: 'append',
        schemaAction: 'unchanged',
      });
      expect(first.details).not.toHaveProperty('adopted');
      expect(second.details).toMatchObject({ jobId: publishId, adopted: true });
      expect(fake.calls('jobs.copy').map(jobIdOf)).toEqual([publishId, publishId]);
      // The earlier load's staging table was deleted by the first publish, and the one the second
      // run created is newer than that load: adopting it would copy an empty table, so the second
      // run loads again under the next id.
      expect(fake.calls('jobs.insert').map(jobIdOf)).toEqual([
        'tilehouse_open_incidents_ops_history_run-once_load',
        'tilehouse_open_incidents_ops_history_run-once_load',
        'tilehouse_open_incidents_ops_history_run-once_load_attempt2',
      ]);
      // Both runs clean up their staging table.
      expect(fake.calls('tables.delete').map(tableIdOf)).toEqual(Array(2).fill('_tilehouse_staging_open_incidents_history_run_once'));
    });

    it('with another run id, appends again', async () => {
      const memory = bigQueryWithMemory();
      const { harness } = await setUp(memory.routes);
      const sink = harness.sink({ table: 'history', writeMode: 'append' });
      await harness.run(sink, runContext({ columns, runId: 'run-a' }), [[['A-1', 1n]]]);
      await harness.run(sink, runContext({ columns, runId: 'run-b' }), [[['A-1', 1n]]]);

      expect(memory.appliedCopies()).toBe(2);
    });
  });

  describe('when the load job id is already taken (409 duplicate)', () => {
    const duplicate = () => apiError(409, 'duplicate', 'Already Exists: Job fake-project:US.tilehouse_...');
    const stagingExists = (request: RecordedRequest) => (tableIdOf(request) === STAGING ? { status: 200, body: {} } : apiError(404, 'notFound', 'Not found'));

    it('awaits the running job and succeeds with it, without a second load', async () => {
      const { fake, harness } = await setUp({
        'jobs.insert': duplicate,
        'tables.get': stagingExists,
        'jobs.get': (request, attempt) => jobResource(jobIdOf(request), attempt < 3 ? 'RUNNING' : 'DONE'),
      });
      const result = await harness.run(harness.sink({ table: 'incidents' }), runContext({ columns, runId: 'r1' }), [[['A-1', 1n]]]);

      expect(fake.calls('jobs.insert')).toHaveLength(1);
      expect(fake.calls('jobs.get').map(jobIdOf)).toEqual(Array(3).fill(LOAD_ID));
      expect(result.details).toMatchObject({ loadJobId: LOAD_ID, jobId: PUBLISH_ID });
    });

    it('takes a job that already finished well as this load, when it loaded as many rows as this run sent', async () => {
      const { fake, harness } = await setUp({
        'jobs.insert': duplicate,
        'tables.get': stagingExists,
        'jobs.get': (request) => ({
          status: 200,
          body: { ...(jobResource(jobIdOf(request), 'DONE').body as object), statistics: { creationTime: fakeClock(), load: { outputRows: '2' } } },
        }),
      });
      const result = await harness.run(harness.sink({ table: 'incidents' }), runContext({ columns, runId: 'r1' }), [
        [
          ['A-1', 1n],
          ['A-2', 2n],
        ],
      ]);

      expect(fake.calls('jobs.insert')).toHaveLength(1);
      expect(result.rows).toBe(2);
      expect(result.details).toMatchObject({ bigqueryRows: 2, sentRows: 2, rowCountChecked: true });
    });

    it('does not adopt a finished job that loaded another number of rows (an earlier extraction of the same run id): loads again under the next id', async () => {
      const { fake, harness } = await setUp({
        'jobs.insert': (request, attempt) =>
          attempt === 1
            ? duplicate()
            : {
                status: 200,
                body: { ...(jobResource(jobIdOf(request), 'DONE').body as object), statistics: { creationTime: fakeClock(), load: { outputRows: '1' } } },
              },
        'tables.get': stagingExists,
        'jobs.get': (request) => ({
          status: 200,
          body: { ...(jobResource(jobIdOf(request), 'DONE').body as object), statistics: { creationTime: fakeClock(), load: { outputRows: '5' } } },
        }),
      });
      const result = await harness.run(harness.sink({ table: 'incidents' }), runContext({ columns, runId: 'r1' }), [[['A-1', 1n]]]);

      expect(fake.calls('jobs.insert').map(jobIdOf)).toEqual([LOAD_ID, `${LOAD_ID}_attempt2`]);
      expect(result.details).toMatchObject({ loadJobId: `${LOAD_ID}_attempt2`, bigqueryRows: 1, sentRows: 1 });
    });

    it('starts a new attempt with a new job id when the earlier job failed', async () => {
      const { fake, harness } = await setUp({
        'jobs.insert': (request, attempt) => (attempt === 1 ? duplicate() : jobResource(jobIdOf(request), 'DONE')),
        'jobs.get': (request) => jobResource(jobIdOf(request), 'DONE', { reason: 'invalid', message: 'earlier data was bad' }),
      });
      const result = await harness.run(harness.sink({ table: 'incidents' }), runContext({ columns, runId: 'r1' }), [[['A-1', 1n]]]);

      expect(fake.calls('jobs.insert').map(jobIdOf)).toEqual([LOAD_ID, `${LOAD_ID}_attempt2`]);
      expect(result.details).toMatchObject({ loadJobId: `${LOAD_ID}_attempt2` });
    });
  });

  describe('retries', () => {
    it('retries an upload refused with rateLimitExceeded, reusing the job id', async () => {
      const { fake, harness } = await setUp({
        'jobs.insert': (request, attempt) =>
          attempt === 1 ? apiError(403, 'rateLimitExceeded', 'Exceeded rate limits') : jobResource(jobIdOf(request), 'DONE'),
      });
      await harness.run(harness.sink({ table: 'incidents' }), runContext({ columns }), [[['A-1', 1n]]]);

      const ids = fake.calls('jobs.insert').map(jobIdOf);
      expect(ids).toHaveLength(2);
      expect(ids[1]).toBe(ids[0]);
      expect(fake.calls('jobs.insert')[1]?.upload).toBe(fake.calls('jobs.insert')[0]?.upload);
    });

    it('retries a copy refused with backendError, reusing the job id', async () => {
      const { fake, harness } = await setUp({
        'jobs.copy': (request, attempt) => (attempt === 1 ? apiError(503, 'backendError', 'Backend error') : jobResource(jobIdOf(request), 'DONE')),
      });
      await harness.run(harness.sink({ table: 'incidents' }), runContext({ columns, runId: 'r1' }), [[['A-1', 1n]]]);

      expect(fake.calls('jobs.copy').map(jobIdOf)).toEqual([PUBLISH_ID, PUBLISH_ID]);
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
      expect(fake.calls('tables.insert')).toHaveLength(0);
    });

    it('does not retry other errors, names table, job and reason, and deletes the staging table', async () => {
      const { fake, harness } = await setUp({
        'jobs.insert': () => apiError(400, 'invalid', 'Error while reading data, error message: JSON parsing error in row starting at position 0'),
      });
      const attempt = harness.run(harness.sink({ table: 'incidents' }), runContext({ columns, runId: 'r1' }), [[['A-1', 1n]]]);

      const error = await attempt.then(
        () => expect.unreachable(),
        (thrown: unknown) => thrown,
      );
      expect(error).toBeInstanceOf(BigQueryLoadError);
      expect((error as Error).message).toBe(
        `job open_incidents: load job ${LOAD_ID} into ${FAKE_PROJECT_ID}.ops.${STAGING} failed: ` +
          'Error while reading data, error message: JSON parsing error in row starting at position 0',
      );
      expect(fake.calls('jobs.insert')).toHaveLength(1);
      expect(sequence(fake).slice(-1)).toEqual([`tables.delete ${STAGING}`]);
      expect(fake.calls('jobs.cancel')).toHaveLength(0);
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
      expect(fake.calls('jobs.copy')).toHaveLength(0);
      expect(await harness.leftovers()).toEqual([]);
    });

    it('retries a job that fails with backendError under a new job id', async () => {
      const { fake, harness } = await setUp({
        'jobs.get': (request, attempt) => jobResource(jobIdOf(request), 'DONE', attempt === 1 ? { reason: 'backendError', message: 'transient' } : undefined),
        'jobs.insert': (request) => jobResource(jobIdOf(request), 'RUNNING'),
      });
      const result = await harness.run(harness.sink({ table: 'incidents' }), runContext({ columns, runId: 'r1' }), [[['A-1', 1n]]]);

      expect(fake.calls('jobs.insert').map(jobIdOf)).toEqual([LOAD_ID, `${LOAD_ID}_attempt2`]);
      expect(result.details).toMatchObject({ loadJobId: `${LOAD_ID}_attempt2` });
    });

    it('gives up waiting for a copy after the polling limit, saying it may still complete', async () => {
      const { harness } = await setUp({
        'jobs.copy': (request) => jobResource(jobIdOf(request), 'RUNNING'),
        'jobs.get': (request) => jobResource(jobIdOf(request), jobIdOf(request).endsWith('_publish') ? 'RUNNING' : 'DONE'),
      });
      const sink = harness.sink({ table: 'incidents' }, { polling: { initialIntervalMs: 1, maxIntervalMs: 2, jobAttempts: 3, maxWaitMs: 50 } });

      await expect(harness.run(sink, runContext({ columns, runId: 'r1' }), [[['A-1', 1n]]])).rejects.toMatchObject({
        code: 'bigquery_job_timeout',
        message: expect.stringMatching(new RegExp(`copy job ${PUBLISH_ID} for \\S+ was not done after 0 s; it may still complete`)),
      });
    });
  });
});
