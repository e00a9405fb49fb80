// writeMode: merge, request shapes against the fake BigQuery REST API (see
// bigquery-sink.requests.test.ts): the exact MERGE statement, the key checks over the staging
// table and what is (not) sent when they refuse the run. The emulator runs the same statements
// end to end (merge.emulator.test.ts); it reports no dmlStats and no 409 adoption, hence these.
import { describe, expect, it } from 'vitest';
import { BigQueryDuplicateKeyError, BigQueryNullKeyError } from '../../../src/sinks/bigquery/bigquery-errors.js';
import {
  apiError,
  FAKE_PROJECT_ID,
  jobIdOf,
  jobResource,
  tableIdOf,
  type FakeBigQuery,
  type RecordedRequest,
  type Reply,
} from '../../support/bigquery-fake-server.js';
import { column, runContext, useFakeSinkSetup } from './sink-fixtures.js';

const columns = [column('incident', 'STRING'), column('status', 'STRING'), column('updated', 'INT64')];
const existingTable = {
  status: 200,
  body: {
    schema: {
      fields: [
        { name: 'incident', type: 'STRING' },
        { name: 'status', type: 'STRING' },
        { name: 'updated', type: 'INTEGER' },
        { name: '_run_id', type: 'STRING' },
        { name: '_extracted_at', type: 'TIMESTAMP' },
      ],
    },
  },
};
const STAGING = `${FAKE_PROJECT_ID}.ops._tilehouse_staging_open_incidents_incidents_r1`;
const STAGING_ID = '_tilehouse_staging_open_incidents_incidents_r1';
const PUBLISH_ID = 'tilehouse_open_incidents_ops_incidents_r1_publish';
const LABELS = { tilehouse_job: 'open_incidents', tile: 'tile-42', run_id: 'r1' };

const setUp = useFakeSinkSetup();

function queryText(request: RecordedRequest): string {
  return (request.json as { configuration: { query: { query: string } } }).configuration.query.query;
}

/** getQueryResults' answer: one STRING column per key (k0, k1, …) and the count n. */
function results(rows: readonly (readonly string[])[], width: number): Reply {
  const fields = [...Array.from({ length: width }, (_, index) => ({ name: `k${index}`, type: 'STRING' })), { name: 'n', type: 'INTEGER' }];
  return {
    status: 200,
    body: {
      kind: 'bigquery#getQueryResultsResponse',
      jobComplete: true,
      totalRows: String(rows.length),
      schema: { fields },
      rows: rows.map((row) => ({ f: row.map((v) => ({ v })) })),
    },
  };
}

/**
 * Routes for the key checks (the client sends them to the stateless `jobs.query` endpoint, POST
 * /queries, which the fake routes as `other`): the null-key count answers `nullRows`, the
 * duplicate query `duplicates`. The MERGE job reports dmlStats.
 */
function keyCheckRoutes(answers: { nullRows?: number; duplicates?: string[][]; width?: number } = {}) {
  return {
    'tables.get': () => existingTable,
    'jobs.query': (request: RecordedRequest) => {
      const reply = jobResource(jobIdOf(request), 'DONE');
      (reply.body as { statistics: object }).statistics = { creationTime: '1', query: { dmlStats: { insertedRowCount: '1', updatedRowCount: '2' } } };
      return reply;
    },
    other: (request: RecordedRequest): Reply => {
      const query = (request.json as { query?: string } | undefined)?.query ?? '';
      const jobReference = { projectId: FAKE_PROJECT_ID, jobId: `check_${Math.random().toString(36).slice(2)}`, location: 'US' };
      const reply = query.includes('IS NULL') ? results([[String(answers.nullRows ?? 0)]], 0) : results(answers.duplicates ?? [], answers.width ?? 1);
      return { status: 200, body: { ...(reply.body as object), jobReference } };
    },
  };
}

/** The key checks sent, in order: their SQL and labels. */
function checks(fake: FakeBigQuery): { query: string; labels: unknown }[] {
  return fake.calls('other').map((request) => request.json as { query: string; labels: unknown });
}

function sequence(fake: FakeBigQuery): string[] {
  return fake.requests.map((request) => {
    if (request.call.startsWith('tables.')) return `${request.call} ${tableIdOf(request)}`;
    if (request.call === 'other') {
      const query = (request.json as { query: string }).query;
      return query.startsWith('DELETE') ? 'queries (latest row per key)' : `queries (check: ${query.includes('IS NULL') ? 'null keys' : 'duplicate keys'})`;
    }
    if (request.call.startsWith('jobs.')) return `${request.call} ${jobIdOf(request)}`;
    return request.call;
  });
}

const rows = [
  ['A-1', 'open', 3n],
  ['A-2', 'closed', 5n],
];

describe('writeMode: merge (fake BigQuery API)', () => {
  it('checks the staging table for null and duplicate keys, then publishes with one MERGE query job under the run publish id, then deletes the staging table', async () => {
    const { fake, harness } = await setUp(keyCheckRoutes());
    const result = await harness.run(harness.sink({ table: 'incidents', writeMode: 'merge', primaryKey: ['Incident'] }), runContext({ columns, runId: 'r1' }), [
      rows,
    ]);

    expect(sequence(fake)).toEqual([
      'datasets.get',
      'tables.get incidents',
      `tables.insert ${STAGING_ID}`,
      'jobs.insert tilehouse_open_incidents_ops_incidents_r1_load',
      'queries (check: null keys)',
      'queries (check: duplicate keys)',
      `jobs.query ${PUBLISH_ID}`,
      `tables.delete ${STAGING_ID}`,
    ]);
    const [nullCheck, duplicateCheck] = checks(fake);
    expect(nullCheck?.query).toBe(`SELECT COUNT(*) AS n FROM \`${STAGING}\` WHERE \`incident\` IS NULL`);
    expect(duplicateCheck?.query).toBe(
      `SELECT TO_JSON_STRING(\`incident\`) AS k0, COUNT(*) AS n FROM \`${STAGING}\` GROUP BY \`incident\` HAVING COUNT(*) > 1 ORDER BY n DESC, \`incident\` LIMIT 5`,
    );
    // The checks carry the run's labels too, so their cost is found with the run's.
    expect(nullCheck?.labels).toEqual(LABELS);

    expect(fake.calls('jobs.query')).toHaveLength(1);
    const merge = fake.calls('jobs.query')[0];
    expect(merge?.json).toEqual({
      jobReference: { projectId: FAKE_PROJECT_ID, jobId: PUBLISH_ID, location: 'US' },
      configuration: {
        // A DML statement: no destination table, no dispositions.
        query: {
          query: [
            `MERGE \`${FAKE_PROJECT_ID}.ops.incidents\` T`,
            `USING \`${STAGING}\` S`,
            'ON T.`incident` = S.`incident`',
            'WHEN MATCHED THEN UPDATE SET `status` = S.`status`, `updated` = S.`updated`, `_run_id` = S.`_run_id`, `_extracted_at` = S.`_extracted_at`',
            'WHEN NOT MATCHED THEN INSERT (`incident`, `status`, `updated`, `_run_id`, `_extracted_at`) VALUES (S.`incident`, S.`status`, S.`updated`, S.`_run_id`, S.`_extracted_at`)',
          ].join('\n'),
          useLegacySql: false,
        },
        labels: LABELS,
      },
    });
    // The staging load carries the lineage of this run: _run_id = r1 on every row.
    const upload = fake.calls('jobs.insert')[0]?.upload ?? '';
    expect(
      upload
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as Record<string, unknown>),
    ).toEqual([
      { incident: 'A-1', status: 'open', updated: '3', _run_id: 'r1', _extracted_at: '2024-03-01T12:00:00.000Z' },
      { incident: 'A-2', status: 'closed', updated: '5', _run_id: 'r1', _extracted_at: '2024-03-01T12:00:00.000Z' },
    ]);
    // rows: what the MERGE says it inserted and updated, not what was sent.
    expect(result.rows).toBe(3);
    expect(result.details).toMatchObject({ writeMode: 'merge', publishedBy: 'merge query', jobId: PUBLISH_ID, insertedRows: 1, updatedRows: 2, sentRows: 2 });
  });

  it('with latestBy, counts as duplicates only rows that also tie on it, then deletes the rows it beats from the staging table before the MERGE', async () => {
    const { fake, harness } = await setUp(keyCheckRoutes());
    await harness.run(
      harness.sink({ table: 'incidents', writeMode: 'merge', primaryKey: ['incident'], latestBy: 'Updated' }),
      runContext({ columns, runId: 'r1' }),
      [rows],
    );

    const [, duplicateCheck, latestOnly] = checks(fake);
    expect(duplicateCheck?.query).toBe(
      `SELECT TO_JSON_STRING(\`incident\`) AS k0, TO_JSON_STRING(\`updated\`) AS k1, COUNT(*) AS n FROM \`${STAGING}\` GROUP BY \`incident\`, \`updated\` HAVING COUNT(*) > 1 ORDER BY n DESC, \`incident\`, \`updated\` LIMIT 5`,
    );
    expect(latestOnly?.query).toBe(
      `DELETE FROM \`${STAGING}\` WHERE TO_JSON_STRING(STRUCT(\`incident\`, \`updated\`)) NOT IN (SELECT TO_JSON_STRING(STRUCT(\`incident\`, MAX(\`updated\`) AS \`updated\`)) FROM \`${STAGING}\` GROUP BY \`incident\`)`,
    );
    expect(sequence(fake).slice(-4)).toEqual([
      'queries (check: duplicate keys)',
      'queries (latest row per key)',
      `jobs.query ${PUBLISH_ID}`,
      `tables.delete ${STAGING_ID}`,
    ]);
  });

  it('a key of two columns joins on both and updates neither', async () => {
    const { fake, harness } = await setUp(keyCheckRoutes());
    await harness.run(harness.sink({ table: 'incidents', writeMode: 'merge', primaryKey: ['incident', 'status'] }), runContext({ columns, runId: 'r1' }), [
      rows,
    ]);
    const [nullCheck] = checks(fake);
    const [merge] = fake.calls('jobs.query');
    expect(nullCheck?.query).toContain('WHERE `incident` IS NULL OR `status` IS NULL');
    expect(queryText(merge!)).toContain(
      'ON T.`incident` = S.`incident` AND T.`status` = S.`status`\nWHEN MATCHED THEN UPDATE SET `updated` = S.`updated`, `_run_id`',
    );
  });

  it('creates a missing target with the run schema (lineage included) before the MERGE, never in prepare', async () => {
    const routes = {
      ...keyCheckRoutes(),
      'tables.get': () => ({ status: 404, body: { error: { code: 404, message: 'Not found: Table', errors: [{ reason: 'notFound' }] } } }),
    };
    const { fake, harness } = await setUp(routes);
    await harness.run(harness.sink({ table: 'incidents', writeMode: 'merge', primaryKey: ['incident'] }), runContext({ columns, runId: 'r1' }), [rows]);
    const order = sequence(fake);
    expect(order.indexOf('tables.insert incidents')).toBeGreaterThan(order.indexOf('queries (check: duplicate keys)'));
    expect(order.indexOf('tables.insert incidents')).toBeLessThan(order.indexOf(`jobs.query ${PUBLISH_ID}`));
    const created = fake.calls('tables.insert').find((request) => tableIdOf(request) === 'incidents')?.json as { schema: { fields: { name: string }[] } };
    expect(created.schema.fields.map((field) => field.name)).toEqual(['incident', 'status', 'updated', '_run_id', '_extracted_at']);
  });

  it('refuses a key that rows of the run share: bigquery_duplicate_key naming the values and counts, no MERGE, target untouched, staging deleted', async () => {
    const { fake, harness } = await setUp(
      keyCheckRoutes({
        duplicates: [
          ['"A-1"', '3'],
          ['"A-7"', '2'],
        ],
      }),
    );
    const failure = await harness
      .run(harness.sink({ table: 'incidents', writeMode: 'merge', primaryKey: ['incident'] }), runContext({ columns, runId: 'r1' }), [rows])
      .catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(BigQueryDuplicateKeyError);
    expect((failure as BigQueryDuplicateKeyError).code).toBe('bigquery_duplicate_key');
    expect((failure as Error).message).toBe(
      `job open_incidents: ${FAKE_PROJECT_ID}.ops.incidents: rows with the same primary key (incident) in one run: ("A-1") x3; ("A-7") x2; set latestBy to the column whose highest value wins, or fix the source; nothing was published`,
    );
    expect(fake.calls('jobs.query')).toHaveLength(0);
    expect(fake.calls('tables.patch')).toHaveLength(0);
    expect(fake.calls('tables.insert').map(tableIdOf)).toEqual([STAGING_ID]);
    expect(fake.calls('tables.delete').map(tableIdOf)).toEqual([STAGING_ID]);
    expect(await harness.leftovers()).toEqual([]);
  });

  it('with latestBy, a tie on it is refused too, and the message says latestBy cannot choose', async () => {
    const { harness } = await setUp(keyCheckRoutes({ duplicates: [['"A-1"', '3', '2']], width: 2 }));
    const failure = await harness
      .run(harness.sink({ table: 'incidents', writeMode: 'merge', primaryKey: ['incident'], latestBy: 'updated' }), runContext({ columns, runId: 'r1' }), [
        rows,
      ])
      .catch((error: unknown) => error);
    expect((failure as Error).message).toContain(
      'rows with the same primary key (incident, updated) in one run: ("A-1", 3) x2; they also have the same updated, so latestBy cannot choose one',
    );
  });

  it('refuses a null key: bigquery_null_key with the row count, before the duplicate check, nothing published', async () => {
    const { fake, harness } = await setUp(keyCheckRoutes({ nullRows: 2 }));
    const failure = await harness
      .run(harness.sink({ table: 'incidents', writeMode: 'merge', primaryKey: ['incident'] }), runContext({ columns, runId: 'r1' }), [rows])
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(BigQueryNullKeyError);
    expect((failure as Error).message).toBe(
      `job open_incidents: ${FAKE_PROJECT_ID}.ops.incidents: 2 rows have a null in the primary key (incident), which cannot identify a row; nothing was published`,
    );
    expect(checks(fake)).toHaveLength(1);
    expect(fake.calls('jobs.query')).toHaveLength(0);
    expect(fake.calls('tables.delete').map(tableIdOf)).toEqual([STAGING_ID]);
  });

  it('a retried publish whose MERGE already ran (409 on its job id) adopts that job instead of merging a second time', async () => {
    const routes = keyCheckRoutes();
    const { fake, harness } = await setUp({
      ...routes,
      // The first insert's answer was "lost": BigQuery has the job, so the id is taken.
      'jobs.query': () => apiError(409, 'duplicate', `Already Exists: Job ${FAKE_PROJECT_ID}:US.${PUBLISH_ID}`),
      'jobs.get': (request) => jobResource(jobIdOf(request), 'DONE'),
    });
    const result = await harness.run(harness.sink({ table: 'incidents', writeMode: 'merge', primaryKey: ['incident'] }), runContext({ columns, runId: 'r1' }), [
      rows,
    ]);
    expect(fake.calls('jobs.query').map(jobIdOf)).toEqual([PUBLISH_ID]);
    expect(fake.calls('jobs.get').map(jobIdOf)).toEqual([PUBLISH_ID]);
    expect(result.details).toMatchObject({ jobId: PUBLISH_ID, adopted: true, publishedBy: 'merge query' });
  });

  it('a key column the tile does not have fails at open with bigquery_key_column_invalid, before any request', async () => {
    const { fake, harness } = await setUp(keyCheckRoutes());
    const failure = await harness
      .run(harness.sink({ table: 'incidents', writeMode: 'merge', primaryKey: ['incident', 'Ticket'] }), runContext({ columns, runId: 'r1' }), [rows])
      .catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: 'bigquery_key_column_invalid' });
    expect((failure as Error).message).toContain('primaryKey[1] = "Ticket": no such column');
    expect(fake.requests).toHaveLength(0);
  });
});
