import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SANDBOX_TILE, type Sandbox } from '../../sandbox/index.js';
import { ConfigError } from '../../src/config/config-error.js';
import { jobForRun } from '../../src/pipeline/windows/windowed-job.js';
import type { RunnableWorkspace } from '../../src/workspace/load-workspace.js';
import { WorkspaceRunner } from '../../src/workspace/workspace-runner.js';
import { FAST_RETRY, writeWorkspace } from '../support/cli-harness.js';
import { silentLogger } from '../support/fake-sinks.js';
import { dailyQuery, incidentDaysQuery } from '../support/queries.js';
import { loadForRun } from '../support/run-jobs-harness.js';
import { sandboxesEachTest } from '../support/sandbox-fixture.js';

/** A Pushgateway that only records the paths pushed to (job and grouping labels), in order. */
async function recordingPushgateway(): Promise<{ url: string; paths: string[]; server: Server }> {
  const paths: string[] = [];
  const server = createServer((request, response) => {
    paths.push(`${request.method} ${decodeURIComponent(request.url ?? '')}`);
    request.resume();
    request.on('end', () => response.end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, paths, server };
}

const each = sandboxesEachTest();

const ordinary = { name: 'ordinary', tile: SANDBOX_TILE, query: dailyQuery, sinks: [{ type: 'csv', path: 'ordinary.csv' }], schedule: { cron: '0 3 * * *' } };
const incremental = {
  name: 'daily',
  tile: SANDBOX_TILE,
  query: incidentDaysQuery,
  sinks: [{ type: 'csv', path: 'daily/{date}.csv', manifest: true }],
  incremental: { item: 'day', bucketColumn: 'Day', startFrom: '2026-07-01', lookbackDays: 0 },
};

async function setUp(jobs: Array<Record<string, unknown>>): Promise<{ sandbox: Sandbox; workspace: RunnableWorkspace; outDir: string; pushes: string[] }> {
  const sandbox = await each.sandbox({ incidents: 500, now: new Date('2026-07-03T12:00:00Z') });
  const gateway = await recordingPushgateway();
  each.afterThisTest(() => new Promise((resolve) => gateway.server.close(resolve)));
  const root = await each.tempDir();
  const written = await writeWorkspace(root, sandbox, jobs);
  const loaded = await loadForRun(written, sandbox);
  const workspace = { ...loaded, environment: { ...loaded.environment, metrics: { pushgatewayUrl: gateway.url, timeoutMs: 2000, labels: {} } } };
  return { sandbox, workspace, outDir: written.outDir, pushes: gateway.paths };
}

const options = { logger: silentLogger, seams: { retry: FAST_RETRY }, fixFlags: [] };
const tokenRequests = (sandbox: Sandbox) => sandbox.requests.filter((request) => request.endpoint === 'token').length;

describe('WorkspaceRunner.runAll (tilehouse run)', () => {
  it('runs the ordinary jobs first, then catches each incremental job up day by day; one summary counts them all', async () => {
    const { workspace, outDir, pushes } = await setUp([ordinary, incremental]);
    const runner = await WorkspaceRunner.open(workspace, workspace.selected.map(jobForRun), { ...options, oneShot: true });
    let jobsRun = 0;
    const { summary, reports } = await runner.runAll({ runId: 'r1', strict: false, onJobsRun: () => (jobsRun += 1) });
    expect(jobsRun).toBe(1);
    expect(summary.tiles.map((tile) => tile.runId)).toEqual(['r1', 'r1-20260701', 'r1-20260702', 'r1-20260703']);
    expect(summary).toMatchObject({ runId: 'r1', succeeded: 4, failed: 0, partiallyPublished: 0 });
    expect(reports.map((report) => report.windows.map((window) => window.from))).toEqual([['2026-07-01', '2026-07-02', '2026-07-03']]);
    expect((await readFile(path.join(outDir, 'ordinary.csv'), 'utf8')).split('\n')[0]).toContain('Day');
    // The ordinary job's tile is pushed by itself; the incremental job's windows once, as one run, to the schedule's group.
    expect(pushes).toEqual(['POST /metrics/job/ordinary', 'POST /metrics/job/daily']);
  });

  it('refuses two jobs writing one target before any token is fetched', async () => {
    const { sandbox, workspace } = await setUp([ordinary, { ...ordinary, name: 'twin' }]);
    const error = await WorkspaceRunner.open(workspace, workspace.selected, { ...options, oneShot: true }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ConfigError);
    expect(error).toMatchObject({ code: 'config_invalid' });
    expect((error as ConfigError).message).toContain('is also written by job ordinary');
    expect(tokenRequests(sandbox)).toBe(0);
  });

  it('skips the incremental jobs once the stop signal has come, and still counts what ran', async () => {
    const { sandbox, workspace } = await setUp([ordinary, incremental]);
    const stop = new AbortController();
    const runner = await WorkspaceRunner.open(workspace, workspace.selected.map(jobForRun), { ...options, signal: stop.signal });
    const { summary, reports } = await runner.runAll({ strict: false, onJobsRun: () => stop.abort() });
    expect(reports).toEqual([]);
    expect(summary.tiles.map((tile) => tile.job)).toEqual(['ordinary']);
    expect(sandbox.requests.filter((request) => request.endpoint === 'export').length).toBeGreaterThan(0);
  });
});

describe('WorkspaceRunner.runTick (tilehouse schedule)', () => {
  it('opens without the one-shot refusal (a worker keeps running), and runs one job per tick', async () => {
    const { workspace } = await setUp([ordinary, { ...ordinary, name: 'twin' }]);
    const runner = await WorkspaceRunner.open(workspace, workspace.selected, options);
    const { tile, report } = await runner.runTick(workspace.selected[1]!, new AbortController().signal);
    expect(tile).toMatchObject({ job: 'twin', status: 'succeeded' });
    expect(report).toBeUndefined();
  });

  it('catches an incremental job up on a tick and reports the first window that did not succeed, else the last', async () => {
    const { workspace, pushes } = await setUp([incremental]);
    const job = jobForRun(workspace.selected[0]!);
    const runner = await WorkspaceRunner.open(workspace, [job], options);
    const first = await runner.runTick(job, new AbortController().signal);
    expect(first.report?.windows.map((window) => window.from)).toEqual(['2026-07-01', '2026-07-02', '2026-07-03']);
    expect(first.tile?.runId).toMatch(/-20260703$/);
    expect(first.tile?.status).toBe('succeeded');
    // The next tick: only the open today again.
    const next = await runner.runTick(job, new AbortController().signal);
    expect(next.report?.windows.map((window) => window.from)).toEqual(['2026-07-03']);
    expect(pushes).toEqual(['POST /metrics/job/daily', 'POST /metrics/job/daily']);
  });

  it("stops a tick by the tick's own signal: an aborted tick exports nothing", async () => {
    const { sandbox, workspace } = await setUp([ordinary]);
    const runner = await WorkspaceRunner.open(workspace, workspace.selected, options);
    const aborted = new AbortController();
    aborted.abort();
    const { tile } = await runner.runTick(workspace.selected[0]!, aborted.signal);
    expect(tile?.status ?? 'not run').not.toBe('succeeded');
    expect(sandbox.requests.filter((request) => request.endpoint === 'export').length).toBe(0);
  });
});
