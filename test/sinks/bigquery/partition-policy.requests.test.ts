// Tables under policy (issue 38), request shapes against the fake BigQuery REST API: the exact
// MERGE a partitioned target gets (its ON carries a filter covering every partition, or the run's
// partition range when the partition column is part of the key), where the range
// comes from (the rows, or one query of the staging table for a table partitioned by a column the
// job does not name), and what a table's expiration does to the result. End to end, against the
// emulator behind the partition-filter proxy: partition-policy.emulator.test.ts.
import { describe, expect, it } from 'vitest';
import { apiError, FAKE_PROJECT_ID, jobIdOf, jobResource, type RecordedRequest, type Reply } from '../../support/bigquery-fake-server.js';
import { column, runContext, useFakeSinkSetup } from './sink-fixtures.js';

const columns = [column('incident', 'STRING'), { name: 'day', header: 'Day', type: 'DATE' as const, sourceDataType: 'datetime' }, column('status', 'STRING')];
const STAGING = `${FAKE_PROJECT_ID}.ops._tilehouse_staging_open_incidents_incidents_r1`;
const DAY = 86_400_000;

function table(timePartitioning: Record<string, unknown>): Reply {
  return {
    status: 200,
    body: {
      schema: {
        fields: [
          { name: 'incident', type: 'STRING' },
          { name: 'day', type: 'DATE' },
          { name: 'status', type: 'STRING' },
          { name: '_run_id', type: 'STRING' },
          { name: '_extracted_at', type: 'TIMESTAMP' },
        ],
      },
      timePartitioning,
      requirePartitionFilter: true,
    },
  };
}

function answer(fields: string[], values: string[]): Reply {
  return {
    status: 200,
    body: {
      kind: 'bigquery#getQueryResultsResponse',
      jobComplete: true,
      totalRows: '1',
      schema: { fields: fields.map((name) => ({ name, type: name === 'n' || name === 'expired' ? 'INTEGER' : 'STRING' })) },
      rows: [{ f: values.map((v) => ({ v })) }],
      jobReference: { projectId: FAKE_PROJECT_ID, jobId: `q_${Math.random().toString(36).slice(2)}`, location: 'US' },
    },
  };
}

/** The key checks and the staging range query (jobs.query, routed as `other`); the MERGE reports dmlStats. */
function routes(tableReply: Reply, staged: { lo: string; hi: string; expired?: string } = { lo: '', hi: '' }) {
  return {
    'tables.get': (request: RecordedRequest) =>
      request.path.endsWith('/incidents')
        ? tableReply
        : { status: 404, body: { error: { code: 404, message: 'Not found', errors: [{ reason: 'notFound' }] } } },
    'jobs.query': (request: RecordedRequest) => {
      const reply = jobResource(jobIdOf(request), 'DONE');
      (reply.body as { statistics: object }).statistics = { creationTime: '1', query: { dmlStats: { insertedRowCount: '3', updatedRowCount: '0' } } };
      return reply;
    },
    other: (request: RecordedRequest): Reply => {
      const query = (request.json as { query?: string } | undefined)?.query ?? '';
      if (query.startsWith('SELECT CAST(MIN'))
        return answer(
          ['lo', 'hi', ...(staged.expired === undefined ? [] : ['expired'])],
          [staged.lo, staged.hi, ...(staged.expired === undefined ? [] : [staged.expired])],
        );
      return query.includes('IS NULL')
        ? answer(['n'], ['0'])
        : { status: 200, body: { ...(answer(['k0', 'n'], []).body as object), totalRows: '0', rows: [] } };
    },
  };
}

const mergeText = (request: RecordedRequest | undefined) => (request?.json as { configuration: { query: { query: string } } }).configuration.query.query;
const setUp = useFakeSinkSetup();

describe('merge onto a partitioned table that requires a partition filter (fake BigQuery API)', () => {
  it("with partitionBy: the ON covers every partition (a key's day may have moved); the range is known from the rows (no query for it)", async () => {
    const { fake, harness } = await setUp(routes(table({ type: 'DAY', field: 'day' })));
    const sink = harness.sink({ table: 'incidents', writeMode: 'merge', primaryKey: ['incident'], partitionBy: { column: 'day', granularity: 'day' } });
    const result = await harness.run(sink, runContext({ columns, runId: 'r1' }), [
      [
        ['A-1', '2024-03-03', 'open'],
        ['A-2', '2024-03-01', 'open'],
        ['A-3', '2024-03-01', 'closed'],
      ],
    ]);
    expect(mergeText(fake.calls('jobs.query')[0]).split('\n')).toEqual([
      `MERGE \`${FAKE_PROJECT_ID}.ops.incidents\` T`,
      `USING \`${STAGING}\` S`,
      "ON T.`incident` = S.`incident` AND (T.`day` IS NULL OR T.`day` >= DATE '0001-01-01')",
      'WHEN MATCHED THEN UPDATE SET `day` = S.`day`, `status` = S.`status`, `_run_id` = S.`_run_id`, `_extracted_at` = S.`_extracted_at`',
      'WHEN NOT MATCHED THEN INSERT (`incident`, `day`, `status`, `_run_id`, `_extracted_at`) VALUES (S.`incident`, S.`day`, S.`status`, S.`_run_id`, S.`_extracted_at`)',
    ]);
    expect(
      fake
        .calls('other')
        .map((request) => (request.json as { query: string }).query)
        .filter((query) => query.startsWith('SELECT CAST(MIN')),
    ).toEqual([]);
    // The range the rows span, read from the rows (rows itself is the fake's dmlStats: not asserted).
    expect(result.details).toMatchObject({ partitionRange: '2024-03-01..2024-03-04' });
    expect(result.expiredRows).toBeUndefined();
  });

  it("with the partition column in primaryKey: the ON carries the rows' partition range", async () => {
    const { fake, harness } = await setUp(routes(table({ type: 'DAY', field: 'day' })));
    const sink = harness.sink({ table: 'incidents', writeMode: 'merge', primaryKey: ['incident', 'Day'], partitionBy: { column: 'day', granularity: 'day' } });
    await harness.run(sink, runContext({ columns, runId: 'r1' }), [
      [
        ['A-1', '2024-03-03', 'open'],
        ['A-2', '2024-03-01', 'open'],
      ],
    ]);
    expect(mergeText(fake.calls('jobs.query')[0]).split('\n')[2]).toBe(
      "ON T.`incident` = S.`incident` AND T.`day` = S.`day` AND T.`day` >= DATE '2024-03-01' AND T.`day` < DATE '2024-03-04'",
    );
  });

  it('without partitionBy, onto a table made partitioned by hand: one query of the staging table gives the range', async () => {
    const { fake, harness } = await setUp(routes(table({ type: 'DAY', field: 'day' }), { lo: '2024-02-27', hi: '2024-03-02' }));
    const sink = harness.sink({ table: 'incidents', writeMode: 'merge', primaryKey: ['incident'] });
    await harness.run(sink, runContext({ columns, runId: 'r1' }), [
      [
        ['A-1', '2024-02-27', 'open'],
        ['A-2', '2024-03-02', 'open'],
      ],
    ]);
    const ranges = fake
      .calls('other')
      .map((request) => (request.json as { query: string }).query)
      .filter((query) => query.startsWith('SELECT CAST(MIN'));
    expect(ranges).toEqual([`SELECT CAST(MIN(\`day\`) AS STRING) AS lo, CAST(MAX(\`day\`) AS STRING) AS hi FROM \`${STAGING}\``]);
    expect(mergeText(fake.calls('jobs.query')[0]).split('\n')[2]).toBe("ON T.`incident` = S.`incident` AND (T.`day` IS NULL OR T.`day` >= DATE '0001-01-01')");
  });

  it("counts the rows in partitions past the table's expiration: rows is what the table keeps, with a warning", async () => {
    const now = Date.now();
    const day = (offset: number) => new Date(now + offset * DAY).toISOString().slice(0, 10);
    const { harness } = await setUp(routes(table({ type: 'DAY', field: 'day', expirationMs: String(30 * DAY) })));
    const sink = harness.sink({ table: 'incidents', writeMode: 'merge', primaryKey: ['incident'], partitionBy: { column: 'day', granularity: 'day' } });
    const result = await harness.run(sink, runContext({ columns, runId: 'r1' }), [
      [
        ['A-1', day(-60), 'open'],
        ['A-2', day(-1), 'open'],
        ['A-3', day(-31), 'closed'],
      ],
    ]);
    // dmlStats says 3 written; 2 of them fall in expired partitions.
    expect(result).toMatchObject({ rows: 1, expiredRows: 2, details: { insertedRows: 3, partitionExpirationDays: 30 } });
    expect(result.warnings).toHaveLength(1);
  });

  it("the job's partitionExpirationDays wins over the table's (it is patched on before publish)", async () => {
    const now = Date.now();
    const day = (offset: number) => new Date(now + offset * DAY).toISOString().slice(0, 10);
    const { harness } = await setUp(routes(table({ type: 'DAY', field: 'day', expirationMs: String(30 * DAY) })));
    const sink = harness.sink({
      table: 'incidents',
      writeMode: 'merge',
      primaryKey: ['incident'],
      partitionBy: { column: 'day', granularity: 'day' },
      partitionExpirationDays: 90,
    });
    const result = await harness.run(sink, runContext({ columns, runId: 'r1' }), [
      [
        ['A-1', day(-60), 'open'],
        ['A-2', day(-1), 'open'],
        ['A-3', day(-100), 'closed'],
      ],
    ]);
    expect(result).toMatchObject({ rows: 2, expiredRows: 1, details: { partitionExpirationDays: 90 } });
  });

  it("a re-run of a run id adopts the earlier MERGE and counts it at the target with the run's range (a COUNT without it BigQuery refuses)", async () => {
    const base = routes(table({ type: 'DAY', field: 'day' }));
    const { fake, harness } = await setUp({
      ...base,
      // BigQuery's answer to a reused job id, then the earlier job, which reports no dmlStats here.
      'jobs.query': (request: RecordedRequest) => apiError(409, 'duplicate', `Already Exists: Job ${FAKE_PROJECT_ID}:US.${jobIdOf(request)}`),
      'jobs.get': (request: RecordedRequest) => jobResource(jobIdOf(request), 'DONE'),
      other: (request: RecordedRequest): Reply => {
        const query = (request.json as { query?: string } | undefined)?.query ?? '';
        return query.startsWith(`SELECT COUNT(*) AS n FROM \`${FAKE_PROJECT_ID}.ops.incidents\``) ? answer(['n'], ['2']) : base.other(request);
      },
    });
    const sink = harness.sink({ table: 'incidents', writeMode: 'merge', primaryKey: ['incident'], partitionBy: { column: 'day', granularity: 'day' } });
    const result = await harness.run(sink, runContext({ columns, runId: 'r1' }), [
      [
        ['A-1', '2024-03-02', 'open'],
        ['A-2', '2024-03-03', 'open'],
        ['A-3', '2024-03-03', 'closed'],
      ],
    ]);
    const counts = fake
      .calls('other')
      .map((request) => request.json as { query: string; queryParameters?: unknown })
      .filter((json) => json.query.startsWith(`SELECT COUNT(*) AS n FROM \`${FAKE_PROJECT_ID}.ops.incidents\``));
    expect(counts.map((json) => json.query)).toEqual([
      `SELECT COUNT(*) AS n FROM \`${FAKE_PROJECT_ID}.ops.incidents\` WHERE \`_run_id\` = @runId AND \`day\` >= DATE '2024-03-02' AND \`day\` < DATE '2024-03-04'`,
    ]);
    expect(result).toMatchObject({ rows: 2, keptEarlierPublish: true, details: { rowsFrom: 'target', adopted: true } });
  });
});

describe('plan of a merge into a partitioned table (fake BigQuery API)', () => {
  it('says whether the MERGE matches over the whole table or reads only the run partitions (the partition column in the key)', async () => {
    const { harness } = await setUp(routes(table({ type: 'DAY', field: 'day' })));
    const whole = await harness
      .sink({ table: 'incidents', writeMode: 'merge', primaryKey: ['incident'], latestBy: 'day', partitionBy: { column: 'day', granularity: 'day' } })
      .plan(runContext({ columns }));
    expect(whole.details).toContain(
      "the MERGE matches keys over the whole table (a key whose day changed is updated, not inserted again); with day in primaryKey it would read only the run's partitions",
    );
    expect(whole.details.filter((line) => line.startsWith('warning:'))).toEqual([]);
    const keyed = await harness
      .sink({ table: 'incidents', writeMode: 'merge', primaryKey: ['incident', 'day'], partitionBy: { column: 'day', granularity: 'day' } })
      .plan(runContext({ columns }));
    expect(keyed.details).toContain("the MERGE reads only the run's partitions: day is part of the key, so a key's row lies in its partition");
    // The table's own policy is named too.
    expect(keyed.details).toContain('the table requires a partition filter on day: every query tilehouse sends there carries one');
  });
});

// The emulator has no ingestion-time partitions (and enforces no partition filter): the exact
// statement is what can be shown. Whether BigQuery takes `_PARTITIONTIME IS NULL OR _PARTITIONTIME >=
// <least TIMESTAMP>` as its filter follows its documented rule (the partitioning column alone,
// against constants), not a run against BigQuery.
describe('merge onto an ingestion-time table that requires a partition filter (fake BigQuery API)', () => {
  it('the ON covers every partition by _PARTITIONTIME (there is no column to bound)', async () => {
    const ingestion = table({ type: 'DAY' });
    const { fake, harness } = await setUp(routes(ingestion));
    await harness.run(harness.sink({ table: 'incidents', writeMode: 'merge', primaryKey: ['incident'] }), runContext({ columns, runId: 'r1' }), [
      [['A-1', '2024-03-02', 'open']],
    ]);
    expect(mergeText(fake.calls('jobs.query')[0]).split('\n')[2]).toBe(
      "ON T.`incident` = S.`incident` AND (T._PARTITIONTIME IS NULL OR T._PARTITIONTIME >= TIMESTAMP '0001-01-01 00:00:00+00')",
    );
  });
});

describe('partition mode onto an ingestion-time table that requires a partition filter (fake BigQuery API)', () => {
  it('sends no query that reads the table: one copy onto the day partition', async () => {
    const ingestion: Reply = {
      status: 200,
      body: {
        schema: {
          fields: [
            { name: 'incident', type: 'STRING' },
            { name: 'day', type: 'DATE' },
            { name: 'status', type: 'STRING' },
          ],
        },
        timePartitioning: { type: 'DAY' },
        requirePartitionFilter: true,
      },
    };
    const { fake, harness } = await setUp(routes(ingestion));
    const sink = harness.sink({ table: 'incidents', writeMode: 'partition' });
    const result = await harness.run(sink, runContext({ columns, runId: 'r1', window: { from: '2024-03-02', to: '2024-03-03' } }), [
      [['A-1', '2024-03-02', 'open']],
    ]);
    expect(fake.calls('other')).toEqual([]);
    expect(fake.calls('jobs.query')).toEqual([]);
    expect(result.target).toBe(`${FAKE_PROJECT_ID}.ops.incidents$20240302`);
  });
});
