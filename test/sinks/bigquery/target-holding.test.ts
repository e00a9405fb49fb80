import type { BigQuery } from '@google-cloud/bigquery';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { BigQueryPlan } from '../../../src/sinks/bigquery/bigquery-plan.js';
import { bigqueryHolding, type HoldingContext } from '../../../src/sinks/bigquery/target-holding.js';

// What a BigQuery target holds for the publish guard, against a client that records the queries
// it is sent: the query shapes (metadata first, never a whole-table COUNT(*), a partition filter
// wherever the table is read) that the emulator cannot show (it has no INFORMATION_SCHEMA and
// refuses ingestion-time partition copies).

type Query = { query: string; params?: Record<string, unknown> };

function fakeClient(answer: (query: Query) => unknown[] | Error, ledgerExists = true): { client: BigQuery; queries: Query[] } {
  const queries: Query[] = [];
  const client = {
    query: async (query: Query) => {
      queries.push(query);
      const rows = answer(query);
      if (rows instanceof Error) throw rows;
      return [rows];
    },
    dataset: () => ({ table: () => ({ exists: async () => [ledgerExists] }) }),
  } as unknown as BigQuery;
  return { client, queries };
}

function plan(overrides: Partial<BigQueryPlan>): BigQueryPlan {
  return {
    projectId: 'p',
    datasetId: 'd',
    tableId: 't',
    destinationTableId: 't',
    location: 'US',
    writeMode: 'replace',
    schema: 'freeze',
    fields: [],
    identity: { jobName: 'job', datasetId: 'd', tableId: 't', runId: 'r' },
    layout: {},
    labels: {},
    ...overrides,
  } as BigQueryPlan;
}

const retry = { limits: { maxAttempts: 1, baseDelayMs: 1, maxDelayMs: 1 }, logger: pino({ level: 'silent' }) };
const context = (client: BigQuery, overrides: Partial<HoldingContext>): HoldingContext => ({
  client,
  plan: plan({}),
  partitions: [],
  ledger: true,
  recentRuns: 5,
  location: 'US',
  retry,
  ...overrides,
});

describe('bigqueryHolding', () => {
  it('replace: the numRows of the tables.get prepare made, without a request', async () => {
    const { client, queries } = fakeClient(() => []);
    expect(await bigqueryHolding({ exists: true, numRows: 1234 }, context(client, {}))).toMatchObject({
      effect: 'replace',
      rows: 1234,
      readFrom: 'table metadata',
    });
    expect(await bigqueryHolding({ exists: false, numRows: undefined }, context(client, {}))).toMatchObject({ rows: undefined });
    expect(queries).toEqual([]);
  });

  it("partition mode: the day partition from INFORMATION_SCHEMA.PARTITIONS, and the ledger's recent runs; no table data read", async () => {
    const { client, queries } = fakeClient((query) =>
      query.query.includes('INFORMATION_SCHEMA.PARTITIONS')
        ? [{ partition_id: '20260701', total_rows: '40' }]
        : [{ target: 'p.d.t$20260630', published: true, row_count: 50, window_from: null }],
    );
    const holding = await bigqueryHolding(
      { exists: true, numRows: 9999 },
      context(client, { plan: plan({ writeMode: 'partition', destinationTableId: 't$20260701' }), partitions: ['20260701'] }),
    );
    expect(holding).toMatchObject({ effect: 'replace', rows: 40, recentRuns: [50] });
    expect(queries[0]!.query).toBe(
      "SELECT partition_id, total_rows FROM `p.d.INFORMATION_SCHEMA.PARTITIONS` WHERE table_name = @table AND partition_id IN ('20260701')",
    );
    expect(queries.some((query) => /FROM `p\.d\.t`/.test(query.query))).toBe(false);
  });

  it("partition mode without INFORMATION_SCHEMA: the ledger's last published row of that partition", async () => {
    const { client, queries } = fakeClient((query) =>
      query.query.includes('INFORMATION_SCHEMA') ? new Error('not found: INFORMATION_SCHEMA') : [{ target: 'p.d.t$20260701', published: true, row_count: 70 }],
    );
    const holding = await bigqueryHolding(
      { exists: true, numRows: 9999 },
      context(client, { plan: plan({ writeMode: 'partition', destinationTableId: 't$20260701' }), partitions: ['20260701'] }),
    );
    expect(holding).toMatchObject({ rows: 70, readFrom: 'the run ledger of partition 20260701' });
    expect(queries.find((query) => query.query.includes('_tilehouse_runs') && query.query.includes('target = @table'))!.params).toMatchObject({
      table: 'p.d.t$20260701',
    });
  });

  it("partitionBy without INFORMATION_SCHEMA: counts grouped by partition, filtered on the partition column's range, and sums only the replaced ones", async () => {
    const { client, queries } = fakeClient((query) =>
      query.query.includes('INFORMATION_SCHEMA')
        ? new Error('no such view')
        : [
            { partition_id: '20260601', n: 10 },
            { partition_id: '20260602', n: 99 },
            { partition_id: '20260603', n: 5 },
          ],
    );
    const layout = { partition: { field: 'created', columnIndex: 0, columnType: 'TIMESTAMP' as const, type: 'DAY' as const } };
    const holding = await bigqueryHolding({ exists: true, numRows: 9999 }, context(client, { plan: plan({ layout }), partitions: ['20260603', '20260601'] }));
    expect(holding).toMatchObject({ effect: 'replace', rows: 15 });
    const counted = queries.at(-1)!;
    expect(counted.query).toBe(
      "SELECT FORMAT_DATE('%Y%m%d', DATE(`created`)) AS partition_id, COUNT(*) AS n FROM `p.d.t` WHERE `created` >= TIMESTAMP(@low) AND `created` < TIMESTAMP(@high) GROUP BY partition_id",
    );
    expect(counted.params).toEqual({ low: '2026-06-01', high: '2026-06-04' });
    // Never a whole-table COUNT(*): every read of the table filters on its partition column.
    for (const query of queries) expect(query.query).not.toMatch(/COUNT\(\*\)[^W]*$/);
  });

  it('append and merge: the recent runs from the ledger, newest first, open windows and repeated windows left out', async () => {
    const { client } = fakeClient(() => [
      { target: 'p.d.t', published: true, row_count: 5, window_from: { value: '2026-07-03' }, window_open: true },
      { target: 'p.d.t', published: true, row_count: 30, window_from: { value: '2026-07-02' } },
      { target: 'p.d.t', published: true, row_count: 20, window_from: { value: '2026-07-02' } },
      { target: 'p.d.t', published: false, row_count: 0, window_from: { value: '2026-07-01' } },
      { target: 'p.d.t', published: true, row_count: 10, window_from: { value: '2026-07-01' } },
    ]);
    const holding = await bigqueryHolding({ exists: true, numRows: 60 }, context(client, { plan: plan({ writeMode: 'merge' }) }));
    expect(holding).toMatchObject({ effect: 'add', recentRuns: [30, 10] });
    const off = fakeClient(() => []);
    expect(
      await bigqueryHolding({ exists: true, numRows: 60 }, context(off.client, { plan: plan({ writeMode: 'append' }), ledger: false })),
    ).not.toHaveProperty('recentRuns');
    expect(off.queries).toEqual([]);
  });

  it('a read that fails is unreadable, never a trip', async () => {
    const { client } = fakeClient(() => new Error('permission denied'));
    expect(await bigqueryHolding({ exists: true, numRows: 1 }, context(client, { plan: plan({ writeMode: 'append' }) }))).toMatchObject({
      unreadable: expect.stringContaining('permission denied'),
    });
  });
});

describe('bigqueryHolding without numRows', () => {
  it('counts an unpartitioned table whole (BigQuery answers that from metadata), and never a partitioned one', async () => {
    const { client, queries } = fakeClient(() => [{ n: 0 }]);
    expect(await bigqueryHolding({ exists: true, numRows: undefined, partitioned: false }, context(client, {}))).toMatchObject({
      rows: 0,
      readFrom: 'rows counted',
    });
    expect(queries.map((query) => query.query)).toEqual(['SELECT COUNT(*) AS n FROM `p.d.t`']);
    const partitioned = fakeClient(() => [{ n: 0 }]);
    expect(await bigqueryHolding({ exists: true, numRows: undefined, partitioned: true }, context(partitioned.client, {}))).toMatchObject({
      unreadable: 'tables.get gave no numRows',
    });
    expect(partitioned.queries).toEqual([]);
  });
});
