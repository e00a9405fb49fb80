// Every claim about what was published is checked against the target, BigQuery side (issue 26):
// on every publish path (a copy onto a new table, an append copy, a day partition copy, the
// truncating query onto an existing table, the MERGE), a publish job whose insert ran at BigQuery
// but whose answer was lost is adopted by its job id, never run twice and never reported failed.
// Scripted fake (no emulator): the emulator cannot lose an answer, nor answer a reused id 409.
import { describe, expect, it } from 'vitest';
import { BigQueryPublishError } from '../../../src/sinks/bigquery/bigquery-errors.js';
import {
  apiError,
  FAKE_PROJECT_ID,
  fakeClock,
  jobIdOf,
  jobResource,
  tableIdOf,
  type FakeRoutes,
  type RecordedRequest,
  type Reply,
} from '../../support/bigquery-fake-server.js';
import { column, runContext, useFakeSinkSetup } from './sink-fixtures.js';

const setUp = useFakeSinkSetup();
const columns = [column('incident', 'STRING'), column('count', 'INT64')];
const lineage = [
  { name: '_run_id', type: 'STRING' },
  { name: '_extracted_at', type: 'TIMESTAMP' },
];
const existing = (withLineage: boolean) => ({
  status: 200,
  body: { schema: { fields: [{ name: 'incident', type: 'STRING' }, { name: 'count', type: 'INTEGER' }, ...(withLineage ? lineage : [])] } },
});

/** getQueryResults' answer for the merge key checks: no null keys, no duplicates. */
function keyChecks(request: RecordedRequest): Reply {
  const query = (request.json as { query?: string } | undefined)?.query ?? '';
  const jobReference = { projectId: FAKE_PROJECT_ID, jobId: `check_${Math.random().toString(36).slice(2)}`, location: 'US' };
  const counting = query.includes('IS NULL');
  const fields = counting
    ? [{ name: 'n', type: 'INTEGER' }]
    : [
        { name: 'k0', type: 'STRING' },
        { name: 'n', type: 'INTEGER' },
      ];
  return {
    status: 200,
    body: {
      kind: 'bigquery#getQueryResultsResponse',
      jobComplete: true,
      jobReference,
      totalRows: counting ? '1' : '0',
      schema: { fields },
      rows: counting ? [{ f: [{ v: '0' }] }] : [],
    },
  };
}

const PATHS = [
  {
    path: 'copy onto a new table (replace)',
    config: { table: 'incidents' },
    call: 'jobs.copy' as const,
    table: undefined,
    stats: { copy: { copiedRows: '2' } },
  },
  {
    path: 'append copy',
    config: { table: 'incidents', writeMode: 'append' as const },
    call: 'jobs.copy' as const,
    table: existing(true),
    stats: { copy: { copiedRows: '2' } },
  },
  {
    path: 'day partition copy',
    config: { table: 'incidents', writeMode: 'partition' as const },
    call: 'jobs.copy' as const,
    table: existing(false),
    stats: { copy: { copiedRows: '2' } },
  },
  {
    path: 'truncating query onto an existing table (replace)',
    config: { table: 'incidents' },
    call: 'jobs.query' as const,
    table: existing(false),
    stats: undefined,
  },
  {
    path: 'MERGE',
    config: { table: 'incidents', writeMode: 'merge' as const, primaryKey: ['incident'] },
    call: 'jobs.query' as const,
    table: existing(true),
    stats: { query: { dmlStats: { insertedRowCount: '2', updatedRowCount: '0' } } },
  },
];

describe.each(PATHS)('a publish whose answer was lost: $path', ({ config, call, table, stats }) => {
  /** Publish jobs BigQuery ran, by id; the first insert runs it and its answer is lost. */
  function routes(lose: 'first answer' | 'every answer'): { routes: FakeRoutes; ran: string[] } {
    const ran: string[] = [];
    const jobs = new Map<string, Reply>();
    const publish = (request: RecordedRequest): Reply => {
      const id = jobIdOf(request);
      if (jobs.has(id))
        return lose === 'every answer' ? apiError(503, 'backendError', 'lost') : apiError(409, 'duplicate', `Already Exists: Job ${FAKE_PROJECT_ID}:US.${id}`);
      ran.push(id);
      jobs.set(id, { status: 200, body: { ...(jobResource(id, 'DONE').body as object), statistics: { creationTime: fakeClock(), ...stats } } });
      // It ran; the answer never arrives (a 503 from the front end after the job was created).
      return apiError(503, 'backendError', 'The service is currently unavailable');
    };
    return {
      ran,
      routes: {
        ...(table
          ? { 'tables.get': (request: RecordedRequest) => (tableIdOf(request) === 'incidents' ? table : apiError(404, 'notFound', 'Not found: Table')) }
          : {}),
        [call]: publish,
        'jobs.get': (request: RecordedRequest) => jobs.get(jobIdOf(request)) ?? jobResource(jobIdOf(request), 'DONE'),
        other: keyChecks,
      },
    };
  }

  it('the retried insert meets 409 and the job that ran is adopted: published once, counted from its statistics', async () => {
    const { routes: scripted, ran } = routes('first answer');
    const { fake, harness } = await setUp(scripted);
    const result = await harness.run(harness.sink(config), runContext({ columns, runId: 'r1' }), [
      [
        ['A-1', 1n],
        ['A-2', 2n],
      ],
    ]);
    expect(ran).toHaveLength(1);
    expect(fake.calls(call).map(jobIdOf)).toEqual([ran[0], ran[0]]);
    expect(result.details).toMatchObject({ jobId: ran[0], adopted: true });
    expect(result.keptEarlierPublish).toBeUndefined();
    // Counted from the adopted job's statistics where it has them; the truncating query reports
    // none, and its count is then this run's, said to be unverified.
    expect(result.rows).toBe(2);
    expect((result.details as { rowsFrom?: string }).rowsFrom).toBe(stats === undefined ? 'this run (not verified at the target)' : undefined);
  });

  it('when no insert gets an answer, the job is looked up by its id and adopted, not reported failed', async () => {
    const { routes: scripted, ran } = routes('every answer');
    const { fake, harness } = await setUp(scripted);
    const result = await harness.run(harness.sink(config), runContext({ columns, runId: 'r1' }), [
      [
        ['A-1', 1n],
        ['A-2', 2n],
      ],
    ]);
    expect(ran).toHaveLength(1);
    expect(fake.calls(call).length).toBeGreaterThan(1);
    expect(fake.calls('jobs.get').map(jobIdOf)).toContain(ran[0]);
    expect(result.details).toMatchObject({ jobId: ran[0], adopted: true });
  });
});

describe('a publish whose insert never got an answer and never ran', () => {
  it('is reported failed only after BigQuery said no job has its id (404)', async () => {
    const { fake, harness } = await setUp({
      'jobs.copy': () => apiError(503, 'backendError', 'The service is currently unavailable'),
      'jobs.get': (request) => (jobIdOf(request).endsWith('_publish') ? apiError(404, 'notFound', 'Not found: Job') : jobResource(jobIdOf(request), 'DONE')),
    });
    const failure = await harness
      .run(harness.sink({ table: 'incidents' }), runContext({ columns, runId: 'r1' }), [[['A-1', 1n]]])
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(BigQueryPublishError);
    expect((failure as Error).message).toMatch(/copy job \S+_publish onto \S+ failed: BigQuery never answered the insert, and no job has its id/);
    expect(fake.calls('jobs.get').map(jobIdOf)).toContain('tilehouse_open_incidents_ops_incidents_r1_publish');
  });
});
