// A stop that stops (issue 26, item 7): a run whose BigQuery load job status request never gets
// an answer, sent SIGTERM, exits 143 within the cleanup deadline (`stopDeadlineMs`), and its
// staging table is either gone or named in the summary. The emulator answers every request at
// once, so a loopback proxy in front of it holds the requests a field network loses.
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { BigQuery } from '@google-cloud/bigquery';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { describeWithEmulator, localBigQueryClient, uniqueDatasetId } from '../support/bigquery-emulator.js';
import { jobIdOfPath, startBigQueryFaultProxy, type BigQueryFaultProxy, type FaultDecision } from '../support/bigquery-fault-proxy.js';
import { stagingTables, tableExists } from '../support/bigquery-read.js';
import { writeBigQueryWorkspace } from '../support/bigquery-workspace.js';
import { sandboxEnv } from '../support/cli-harness.js';
import { runStoppedWhen } from '../support/child-process.js';
import { detailQuery } from '../support/queries.js';
import { sandboxAndRootForAll } from '../support/sandbox-fixture.js';

const STOP_DEADLINE_MS = 6_000;
const TABLE = 'stopped_detail';

describeWithEmulator('tilehouse run stopped while BigQuery does not answer', (endpoint) => {
  const fixture = sandboxAndRootForAll({ incidents: 120 });
  let client: BigQuery;
  const proxies: BigQueryFaultProxy[] = [];
  beforeAll(() => {
    // The emulator's address is known once it started, in the describe block's first beforeAll.
    client = localBigQueryClient(endpoint);
  });
  afterAll(async () => {
    for (const proxy of proxies) await proxy.close();
  });

  /**
   * A run through a proxy that says the load is still RUNNING and holds every status request of
   * it (the field case); with `holdAllAfterStop`, every request after the signal is held
   * too (the network gone: cancel and delete never answered).
   */
  async function runAndStop(name: string, holdAllAfterStop: boolean) {
    const dataset = uniqueDatasetId('stop');
    let stopped = false;
    let loadJobId: string | undefined;
    const decide = (request: { method: string; path: string }): FaultDecision => {
      if (stopped && holdAllAfterStop) return { action: 'hold' };
      // The load (a multipart upload): its answer says RUNNING, so the client polls jobs.get.
      if (request.method === 'POST' && request.path.startsWith('/upload/bigquery/v2/')) {
        return {
          action: 'forward',
          rewrite: ({ status, body }) => {
            const job = body as { jobReference?: { jobId?: string }; status?: unknown };
            loadJobId = job.jobReference?.jobId;
            return { status, body: { ...job, status: { state: 'RUNNING' } } };
          },
        };
      }
      if (request.method === 'GET' && loadJobId !== undefined && jobIdOfPath(request.path) === loadJobId) return { action: 'hold' };
      return { action: 'forward' };
    };
    const proxy = await startBigQueryFaultProxy(endpoint.apiEndpoint, decide);
    proxies.push(proxy);
    const ws = await writeBigQueryWorkspace(
      path.join(fixture.root, name),
      fixture.sandbox,
      [{ name: TABLE, tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'bigquery', writeMode: 'replace' }] }],
      { projectId: endpoint.projectId, dataset },
    );
    const environment = parse(await readFile(ws.configFile, 'utf8')) as Record<string, unknown>;
    await writeFile(ws.configFile, stringify({ ...environment, stopDeadlineMs: STOP_DEADLINE_MS }));

    // Bounded well past the deadline, so that a run that overstays fails on elapsedMs, not here.
    const { exit, stdout, stderr } = await runStoppedWhen(['run', '--config', ws.configFile, '--jobs', ws.jobsDir, '--json'], {
      env: { ...process.env, ...sandboxEnv(fixture.sandbox), BIGQUERY_EMULATOR_HOST: proxy.apiEndpoint, CI: '' },
      detached: true,
      ready: () => proxy.held.length > 0,
      awaited: "the load's held status request",
      exitWithinMs: STOP_DEADLINE_MS + 20_000,
      beforeStop: () => {
        stopped = true;
      },
    });
    return { exit, stdout, stderr, dataset, proxy };
  }

  it('exits 143 within stopDeadlineMs and removes the staging table when BigQuery still answers the cleanup', async () => {
    const { exit, stdout, stderr, dataset } = await runAndStop('held-status', false);
    expect(exit.code, stderr).toBe(143);
    expect(exit.elapsedMs).toBeLessThan(STOP_DEADLINE_MS);
    // The status request was abandoned at once, not after the deadline: the cleanup had nothing to wait for.
    expect(exit.elapsedMs).toBeLessThan(STOP_DEADLINE_MS / 2);
    expect(await stagingTables(client, dataset)).toEqual([]);
    expect(await tableExists(client, dataset, TABLE)).toBe(false);
    const summary = JSON.parse(stdout) as { tiles: Array<{ status: string; leftBehind?: string[]; error?: { code: string } }> };
    expect(summary.tiles[0]).toMatchObject({ status: 'failed', error: { code: 'run_stopped' } });
    expect(summary.tiles[0]!.leftBehind, stderr).toBeUndefined();
  }, 120_000);

  it('exits 143 within stopDeadlineMs when no request answers after the stop, naming the staging table it left', async () => {
    const { exit, stdout, stderr, dataset } = await runAndStop('held-everything', true);
    expect(exit.code, stderr).toBe(143);
    expect(exit.elapsedMs, stderr).toBeLessThan(STOP_DEADLINE_MS);
    const staging = await stagingTables(client, dataset);
    expect(staging).toHaveLength(1);
    const summary = JSON.parse(stdout) as { tiles: Array<{ status: string; leftBehind?: string[] }> };
    expect(summary.tiles[0]!.status).toBe('failed');
    expect(summary.tiles[0]!.leftBehind).toEqual([
      expect.stringContaining(`BigQuery load job `),
      `BigQuery staging table ${endpoint.projectId}.${dataset}.${staging[0]} (expires within a day)`,
    ]);
    // The person reading stderr sees the same.
    expect(stderr).toContain(`left behind: BigQuery staging table ${endpoint.projectId}.${dataset}.${staging[0]}`);
  }, 120_000);
});
