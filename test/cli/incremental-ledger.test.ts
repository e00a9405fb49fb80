import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { appendLedgerRow, type LedgerRow } from '../../src/sinks/bigquery/run-ledger.js';
import { describeWithEmulator, localBigQueryClient, uniqueDatasetId } from '../support/bigquery-emulator.js';
import { writeBigQueryWorkspace } from '../support/bigquery-workspace.js';
import { runCli, sandboxEnv, summaryOf } from '../support/cli-harness.js';
import { dailySeverityQuery } from '../support/queries.js';
import { sandboxAndRootForAll } from '../support/sandbox-fixture.js';

// An incremental job whose BigQuery sink's published days are read from the _tilehouse_runs ledger.
const job = (sinks: Array<Record<string, unknown>>) => ({
  name: 'daily',
  tile: SANDBOX_TILE,
  query: dailySeverityQuery,
  sinks,
  columns: { Day: { type: 'DATE' }, Incidents: { type: 'INT64' } },
  incremental: { item: 'day', bucketColumn: 'Day', startFrom: '2026-07-01', lookbackDays: 0 },
});

const fixture = sandboxAndRootForAll({ incidents: 3000, now: new Date('2026-07-05T12:00:00Z') });
const exports = () => fixture.sandbox.requests.filter((request) => request.endpoint === 'export').length;

describe('an incremental job whose run ledger cannot be reached', () => {
  it('fails with incremental_state_unreadable, exit 1, and exports nothing', async () => {
    const workspace = await writeBigQueryWorkspace(
      path.join(fixture.root, 'unreachable'),
      fixture.sandbox,
      [job([{ type: 'bigquery', writeMode: 'partition' }])],
      {
        projectId: 'p',
        dataset: 'd',
      },
    );
    // A closed port: every ledger read is refused.
    const client = localBigQueryClient({ projectId: 'p', apiEndpoint: 'http://127.0.0.1:9' } as Parameters<typeof localBigQueryClient>[0]);
    const before = exports();
    const result = await runCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir, '--json'], {
      env: sandboxEnv(fixture.sandbox),
      seams: { sinkOptions: { bigqueryClient: client } },
    });
    expect(result.exitCode).toBe(1);
    const summary = summaryOf(result.stdout, 'run');
    expect(summary.tiles.map((tile) => tile.error?.code)).toEqual(['incremental_state_unreadable']);
    expect(summary.incremental![0]!.error?.message).toMatch(/job daily: cannot read the run ledger d\._tilehouse_runs for table daily: /);
    expect(summary.incremental![0]!.windows).toEqual([]);
    expect(exports()).toBe(before);
  }, 60_000);
});

describeWithEmulator('an incremental job reading the BigQuery run ledger', (endpoint) => {
  it('resumes after the last day the ledger shows published, and refuses a CSV target that lags far behind it', async () => {
    const client = localBigQueryClient(endpoint);
    const dataset = uniqueDatasetId();
    await client.createDataset(dataset);
    const table = `${endpoint.projectId}.${dataset}.daily`;
    const row = (day: string, overrides: Partial<LedgerRow> = {}): LedgerRow => ({
      runId: `r-${day.replaceAll('-', '')}`,
      job: 'daily',
      tile: SANDBOX_TILE,
      target: `${table}$${day.replaceAll('-', '')}`,
      status: 'succeeded',
      published: true,
      rows: 3,
      window: { from: day, to: day },
      schemaHash: 'h',
      jobId: `j-${day}`,
      loadJobId: `l-${day}`,
      startedAt: new Date(`${day}T13:00:00Z`),
      durationMs: 10,
      ...overrides,
    });
    const retry = { limits: { maxAttempts: 2, baseDelayMs: 10, maxDelayMs: 20 }, logger: pino({ level: 'silent' }) };
    const ledger = { projectId: endpoint.projectId, datasetId: dataset, location: undefined };
    await appendLedgerRow(client, ledger, row('2026-07-01'), retry);
    await appendLedgerRow(client, ledger, row('2026-07-02'), retry);
    // A later day whose latest row failed is not published: the run starts there.
    await appendLedgerRow(client, ledger, row('2026-07-03'), retry);
    await appendLedgerRow(client, ledger, row('2026-07-03', { runId: 'r2-20260703', status: 'failed', published: false, jobId: 'j2' }), retry);

    const bigquery = { type: 'bigquery', writeMode: 'partition' };
    const workspace = await writeBigQueryWorkspace(path.join(fixture.root, dataset), fixture.sandbox, [job([bigquery])], {
      projectId: endpoint.projectId,
      dataset,
    });
    const seams = { sinkOptions: { bigqueryClient: client } };
    const plan = await runCli(['plan', '--config', workspace.configFile, '--jobs', workspace.jobsDir, '--json'], { env: sandboxEnv(fixture.sandbox), seams });
    const [planned] = JSON.parse(plan.stdout) as Array<{ incremental: { windows: Array<{ from: string }>; reason: string } }>;
    expect(planned!.incremental.windows.map((window) => window.from)).toEqual(['2026-07-03', '2026-07-04', '2026-07-05']);
    expect(planned!.incremental.reason).toContain('resume after 2026-07-02');

    const both = await writeBigQueryWorkspace(path.join(fixture.root, `${dataset}-csv`), fixture.sandbox, [job([bigquery, { type: 'csv', manifest: true }])], {
      projectId: endpoint.projectId,
      dataset,
    });
    const before = exports();
    const refused = await runCli(['run', '--config', both.configFile, '--jobs', both.jobsDir], { env: sandboxEnv(fixture.sandbox), seams });
    expect(refused.exitCode).toBe(1);
    expect(refused.stderr).toContain('incremental_state_ambiguous');
    expect(refused.stderr).toContain(`${endpoint.projectId}.${dataset}.daily holds every day up to 2026-07-02, {name}/{date}.csv lacks 2026-07-01`);
    expect(exports()).toBe(before);
  }, 60_000);
});
