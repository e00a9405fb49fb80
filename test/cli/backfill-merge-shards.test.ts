// Writers that share a BigQuery table (issue 26, item 9): two shards of one backfill merge into the
// same table at once. BigQuery aborts one of two MERGE statements that touch the same data with
// "Could not serialize access to table ... due to concurrent update" (reason invalidQuery) and says
// to retry. The emulator serializes everything and never says it, so a loopback proxy in front of
// it answers the first MERGE of every window with that failure, as BigQuery's job resource would
// carry it, without passing the statement on (an aborted MERGE changes nothing).
import path from 'node:path';
import type { BigQuery } from '@google-cloud/bigquery';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { describeWithEmulator, localBigQueryClient, uniqueDatasetId } from '../support/bigquery-emulator.js';
import { startBigQueryFaultProxy, type BigQueryFaultProxy, type BigQueryRequest } from '../support/bigquery-fault-proxy.js';
import { readTable } from '../support/bigquery-read.js';
import { writeBigQueryWorkspace } from '../support/bigquery-workspace.js';
import { runCli, sandboxEnv, summaryOf } from '../support/cli-harness.js';
import { incidentDaysQuery } from '../support/queries.js';
import { sandboxAndRootForAll } from '../support/sandbox-fixture.js';

const TABLE = 'incident_days';
const job = {
  name: TABLE,
  tile: SANDBOX_TILE,
  query: incidentDaysQuery,
  columns: { Number: { type: 'INT64' }, Day: { type: 'DATE' } },
  sinks: [{ type: 'bigquery', writeMode: 'merge', primaryKey: ['Number'] }],
  backfill: { item: 'day', bucketColumn: 'Day' },
};

interface QueryJobRequest {
  jobReference?: { jobId?: string; projectId?: string };
  configuration?: { query?: { query?: string } };
}

function mergeJobOf(request: BigQueryRequest): QueryJobRequest | undefined {
  const json = request.json as QueryJobRequest | undefined;
  return request.method === 'POST' &&
    /^\/bigquery\/v2\/projects\/[^/]+\/jobs(\?|$)/.test(request.path) &&
    /^\s*MERGE\b/i.test(json?.configuration?.query?.query ?? '')
    ? json
    : undefined;
}

describeWithEmulator('two backfill shards merging into one table', (endpoint) => {
  const fixture = sandboxAndRootForAll({ incidents: 1500, now: new Date('2026-07-10T12:00:00Z') });
  let proxy: BigQueryFaultProxy;
  let client: BigQuery;
  const dataset = uniqueDatasetId('merge_shards');
  /** The MERGE job ids answered with the concurrent-update failure, and those passed on. */
  const aborted: string[] = [];
  const merged: string[] = [];

  beforeAll(async () => {
    const abortedJob = (jobId: string, configuration: unknown, state: 'DONE' | 'RUNNING') => {
      const message = `Could not serialize access to table ${endpoint.projectId}:${dataset}.${TABLE} due to concurrent update`;
      const failed = { errorResult: { reason: 'invalidQuery', location: 'query', message }, errors: [{ reason: 'invalidQuery', location: 'query', message }] };
      return {
        kind: 'bigquery#job',
        jobReference: { projectId: endpoint.projectId, jobId, location: 'US' },
        configuration,
        status: state === 'DONE' ? { state, ...failed } : { state },
        statistics: { creationTime: String(Date.now()) },
      };
    };
    /** MERGE jobs answered RUNNING whose status request says they were aborted. */
    const abortedOnPoll = new Map<string, unknown>();
    proxy = await startBigQueryFaultProxy(endpoint.apiEndpoint, (request) => {
      // Both shards create the dataset at once: the emulator says 500 "already created" where
      // BigQuery says 409, which the sink takes as "there already".
      if (request.method === 'POST' && /\/datasets(\?|$)/.test(request.path)) {
        return {
          action: 'forward',
          rewrite: (answer) =>
            answer.status === 500 && JSON.stringify(answer.body).includes('already created')
              ? { status: 409, body: { error: { code: 409, message: 'Already Exists', errors: [{ reason: 'duplicate', message: 'Already Exists' }] } } }
              : answer,
        };
      }
      const polled = request.method === 'GET' ? abortedOnPoll.get(request.path.split('?')[0]!.split('/').at(-1) ?? '') : undefined;
      if (polled !== undefined) return { action: 'answer', status: 200, body: polled };
      const merge = mergeJobOf(request);
      if (merge === undefined) return { action: 'forward' };
      const jobId = merge.jobReference?.jobId ?? '';
      // Each window's first MERGE (its base id) collides; the retry (`_attempt2`) goes through.
      // Every other one is aborted as BigQuery usually reports it: RUNNING at insert, the failure
      // on the status request; the rest already in the insert's answer.
      if (!/_attempt\d+$/.test(jobId)) {
        aborted.push(jobId);
        if (aborted.length % 2 === 0) return { action: 'answer', status: 200, body: abortedJob(jobId, merge.configuration, 'DONE') };
        abortedOnPoll.set(jobId, abortedJob(jobId, merge.configuration, 'DONE'));
        return { action: 'answer', status: 200, body: abortedJob(jobId, merge.configuration, 'RUNNING') };
      }
      merged.push(jobId);
      return { action: 'forward' };
    });
    client = localBigQueryClient(endpoint);
  });
  afterAll(async () => {
    await proxy?.close();
  });

  it('both exit 0 after retrying the aborted MERGE once per window, the summary counts the retry, and the table holds each source row once', async () => {
    const ws = await writeBigQueryWorkspace(path.join(fixture.root, 'ws'), fixture.sandbox, [job], { projectId: endpoint.projectId, dataset });
    const shard = (index: number) =>
      runCli(
        [
          'backfill',
          '--config',
          ws.configFile,
          '--jobs',
          ws.jobsDir,
          '--job',
          TABLE,
          '--from',
          '2026-07-01',
          '--to',
          '2026-07-05',
          '--run-id',
          'shards-1',
          '--shard-index',
          String(index),
          '--shard-count',
          '2',
          '--json',
        ],
        {
          env: sandboxEnv(fixture.sandbox),
          seams: { sinkOptions: { bigqueryClient: localBigQueryClient({ apiEndpoint: proxy.apiEndpoint, projectId: endpoint.projectId }) } },
        },
      );
    const results = await Promise.all([shard(0), shard(1)]);
    for (const result of results)
      expect(
        result.exitCode,
        `${result.stderr}\n${result.logs
          .filter((line) => Number(line.level) >= 40)
          .map((line) => JSON.stringify(line))
          .join('\n')}`,
      ).toBe(0);

    // Four windows, each MERGE aborted once and then passed on once: merged once, not twice.
    expect(aborted).toHaveLength(4);
    expect(merged).toHaveLength(4);
    expect(merged.every((id) => id.endsWith('_attempt2'))).toBe(true);
    for (const result of results) {
      const summary = summaryOf(result.stdout, 'backfill');
      expect(summary.windows).toHaveLength(2);
      for (const window of summary.windows) expect(window.summary).toMatchObject({ status: 'succeeded', retries: 1 });
    }
    const warnings = results.flatMap((result) => result.logs.map((line) => String(line.msg)).filter((msg) => msg.includes('aborted by a concurrent update')));
    expect(warnings).toHaveLength(4);

    const all = fixture.sandbox.evaluate({ ...incidentDaysQuery, items: incidentDaysQuery.items.map((item) => ({ ...item, filters: [] })) }, SANDBOX_TILE);
    const expected = new Map(
      all.rows
        .filter((row) => (row[1] as string) >= '2026-07-01' && (row[1] as string) < '2026-07-05')
        .map(([number, day, severity]) => [number as number, `${day as string}|${severity as string}`]),
    );
    expect(expected.size).toBeGreaterThan(0);
    const rows = await readTable(client, { projectId: endpoint.projectId, dataset, table: TABLE }, 'number');
    expect(rows).toHaveLength(expected.size);
    expect(new Map(rows.map((row) => [Number(row.number), `${String(row.day)}|${String(row.severity)}`]))).toEqual(expected);
  }, 180_000);
});
