import { setTimeout as sleep } from 'node:timers/promises';
import type { BigQuery } from '@google-cloud/bigquery';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { describeWithEmulator, uniqueDatasetId } from '../support/bigquery-emulator.js';
import { startEmulatorWithCopyJobs, type EmulatorWithCopyJobs } from '../support/bigquery-fake-server.js';
import { writeBigQueryWorkspace } from '../support/bigquery-workspace.js';
import { runCli, sandboxEnv } from '../support/cli-harness.js';
import { detailQuery } from '../support/queries.js';
import { sandboxAndRootForAll } from '../support/sandbox-fixture.js';

interface LedgerRecord {
  run_id: string;
  job: string;
  target: string;
  status: string;
  published: boolean;
  row_count: number;
  error_code: string | null;
}

/** Issue 19: every scheduled run appends its ledger rows, as `tilehouse run` does. */
describeWithEmulator('tilehouse schedule and the run ledger', (endpoint) => {
  const INCIDENTS = 30;
  const fixture = sandboxAndRootForAll({ incidents: INCIDENTS });
  let proxy: EmulatorWithCopyJobs;
  let client: BigQuery;

  beforeAll(async () => {
    // The emulator has no copy jobs (the publish step): a loopback proxy carries them out.
    proxy = await startEmulatorWithCopyJobs(endpoint);
    client = proxy.client();
  });
  afterAll(async () => {
    await proxy.close();
  });

  it('appends one row per run per BigQuery target, succeeded or failed, and none for the CSV sink', async () => {
    const dataset = uniqueDatasetId('tilehouse_schedule');
    const everySecond = { cron: '* * * * * *', timezone: 'UTC' };
    const jobs = [
      {
        name: 'steady',
        tile: SANDBOX_TILE,
        schedule: everySecond,
        query: detailQuery,
        sinks: [{ type: 'bigquery', table: 'steady', writeMode: 'replace' }, { type: 'csv' }],
      },
      // The sandbox answers 400 invalid id for a tile it does not know: every run of this job fails.
      { name: 'gone', tile: 'no-such-tile', schedule: everySecond, query: detailQuery, sinks: [{ type: 'bigquery', table: 'gone', writeMode: 'replace' }] },
    ];
    // The dataset exists, as in production: a job that fails before its first write cannot create it,
    // and the ledger (which never creates datasets) would then only log that it could not append.
    await client.createDataset(dataset, { location: 'US' });
    const workspace = await writeBigQueryWorkspace(fixture.root, fixture.sandbox, jobs, { projectId: endpoint.projectId, dataset }, { itemsPerPage: 10 });
    const ledger = async (): Promise<LedgerRecord[]> => {
      try {
        const [rows] = await client.query({
          query: `SELECT run_id, job, target, status, published, row_count, error_code FROM \`${endpoint.projectId}.${dataset}._tilehouse_runs\` ORDER BY run_id`,
        });
        return rows as LedgerRecord[];
      } catch {
        return []; // not created yet
      }
    };

    const stop = new AbortController();
    const running = runCli(['schedule', '--config', workspace.configFile, '--jobs', workspace.jobsDir, '--grace-seconds', '20'], {
      env: sandboxEnv(fixture.sandbox),
      io: { signal: stop.signal },
      seams: { sinkOptions: { bigqueryClient: client } },
    });
    // Bounded: two runs of each job within 30 s, then stop (the grace period lets a run under way finish).
    const deadline = Date.now() + 30_000;
    for (;;) {
      const rows = await ledger();
      if (['steady', 'gone'].every((job) => rows.filter((row) => row.job === job).length >= 2)) break;
      if (Date.now() > deadline) {
        stop.abort();
        throw new Error(`no two ledger rows per job within 30 s: ${JSON.stringify(rows)}\n${(await running).stderr}`);
      }
      await sleep(250);
    }
    stop.abort();
    const result = await running;
    // In process the command returns 0 once drained; the process maps SIGTERM to 143 (schedule-command.test.ts).
    expect(result.exitCode, result.stderr).toBe(0);

    // Every run the scheduler finished, as its own log lines tell (each with its run id), has its row.
    const finished = result.logs.filter((line) => /^job (steady|gone) (succeeded|failed)/.test(String(line.msg)));
    const runsOf = (job: string) =>
      finished
        .map((line) => (line as { summary: { job: string; runId: string } }).summary)
        .filter((summary) => summary.job === job)
        .map((summary) => summary.runId)
        .sort();
    const rows = await ledger();
    const steady = rows.filter((row) => row.job === 'steady');
    const gone = rows.filter((row) => row.job === 'gone');
    expect(rows).toHaveLength(steady.length + gone.length);
    expect(steady.map((row) => row.run_id)).toEqual(runsOf('steady'));
    expect(gone.map((row) => row.run_id)).toEqual(runsOf('gone'));
    expect(new Set(rows.map((row) => row.run_id)).size).toBe(rows.length);
    for (const row of steady) {
      expect(row).toMatchObject({
        target: `${endpoint.projectId}.${dataset}.steady`,
        status: 'succeeded',
        published: true,
        row_count: INCIDENTS,
        error_code: null,
      });
    }
    for (const row of gone) {
      expect(row).toMatchObject({ target: `${endpoint.projectId}.${dataset}.gone`, status: 'failed', published: false, row_count: 0 });
      expect(row.error_code).toEqual(expect.any(String));
    }
  }, 60_000);
});
