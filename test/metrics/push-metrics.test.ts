import { readFile, writeFile } from 'node:fs/promises';
import { pino } from 'pino';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { backfillRunMetrics, METRICS, MetricsPusher, scheduleIntervalSeconds, type TileRunMetrics } from '../../src/metrics/push-metrics.js';
import { tileRunRegistry } from '../../src/metrics/tile-run-registry.js';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { runCli, sandboxEnv } from '../support/cli-harness.js';
import { detailQuery, dailyQuery } from '../support/queries.js';
import { describeWithPushgateway, samplesOf } from './pushgateway.js';
import { sandboxWorkspaceForAll } from '../support/sandbox-fixture.js';

const run: TileRunMetrics = { job: 'daily', status: 'succeeded', rows: 12, pages: 2, bytes: 3000, durationMs: 1500, retries: 1, throttled: 2, tokenFetches: 1 };

describe('tileRunRegistry', () => {
  it('sets the last-success time only for a successful run, the last-failure time only for a failed one', async () => {
    const ok = await tileRunRegistry(run, 1_700_000_000_000).metrics();
    expect(samplesOf(ok, METRICS.lastSuccess)).toEqual([{ labels: {}, value: 1_700_000_000 }]);
    expect(samplesOf(ok, METRICS.lastFailure)).toEqual([]);
    for (const status of ['failed', 'partially_published'] as const) {
      const failed = await tileRunRegistry({ ...run, status }, 1_700_000_000_000).metrics();
      expect(samplesOf(failed, METRICS.lastSuccess)).toEqual([]);
      expect(samplesOf(failed, METRICS.lastFailure)).toEqual([{ labels: {}, value: 1_700_000_000 }]);
      expect(samplesOf(failed, METRICS.lastRunSuccess)[0]!.value).toBe(0);
    }
    expect(samplesOf(ok, METRICS.duration)[0]!.value).toBe(1.5);
    expect(samplesOf(ok, METRICS.guardTripped)[0]!.value).toBe(0);
    const refused = await tileRunRegistry({ ...run, status: 'failed', guard: { tripped: true, overridden: false } }, 1_700_000_000_000).metrics();
    expect(samplesOf(refused, METRICS.guardTripped)[0]!.value).toBe(1);
    const overridden = await tileRunRegistry({ ...run, guard: { tripped: true, overridden: true } }, 1_700_000_000_000).metrics();
    expect(samplesOf(overridden, METRICS.guardTripped)[0]!.value).toBe(0);
    expect(samplesOf(ok, METRICS.throttled)[0]!.value).toBe(2);
  });

  it('names the failure by its code, one series, and clears it on success (code="" and 0)', async () => {
    const failed = await tileRunRegistry({ ...run, status: 'failed', error: { code: 'export_api_error' } }, 1_700_000_000_000).metrics();
    expect(samplesOf(failed, METRICS.lastRunError)).toEqual([{ labels: { code: 'export_api_error' }, value: 1 }]);
    const ok = await tileRunRegistry(run, 1_700_000_000_000).metrics();
    expect(samplesOf(ok, METRICS.lastRunError)).toEqual([{ labels: { code: '' }, value: 0 }]);
  });
});

describe('scheduleIntervalSeconds', () => {
  it('is the gap between the next two runs of the cron in its timezone', () => {
    const from = new Date('2026-06-01T00:00:00Z');
    expect(scheduleIntervalSeconds({ cron: '15 6 * * *', timezone: 'Europe/Berlin' }, from)).toBe(86_400);
    expect(scheduleIntervalSeconds({ cron: '0 */6 * * *', timezone: 'UTC' }, from)).toBe(21_600);
    expect(scheduleIntervalSeconds(undefined)).toBeUndefined();
  });

  // croner 11 handles DST as Vixie cron does; these pin what the scheduler will actually wait.
  it('runs a job whose time falls in the spring-forward gap at the end of the gap (03:00), not 03:30', () => {
    // Europe/Berlin skips 02:00-03:00 on 2026-03-29: 02:30 runs at 03:00 CEST (01:00Z), then 02:30 CEST (00:30Z) the next day.
    expect(scheduleIntervalSeconds({ cron: '30 2 * * *', timezone: 'Europe/Berlin' }, new Date('2026-03-28T12:00:00Z'))).toBe(84_600);
  });

  it('keeps an interval job running through the hour repeated at fall back', () => {
    // 02:30 CEST (00:30Z), then the repeated 02:00 CET (01:00Z): croner 10 skipped to 03:00 CET (02:00Z).
    expect(scheduleIntervalSeconds({ cron: '*/30 * * * *', timezone: 'Europe/Berlin' }, new Date('2026-10-25T00:10:00Z'))).toBe(1_800);
  });
});

describe('backfillRunMetrics', () => {
  it('sums the windows and succeeds only when every window did', () => {
    const windows = [run, { ...run, rows: 3, status: 'failed' as const }];
    expect(backfillRunMetrics('daily', windows, { durationMs: 9000, tokenFetches: 1 })).toEqual({
      ...run,
      rows: 15,
      pages: 4,
      bytes: 6000,
      retries: 2,
      throttled: 4,
      tokenFetches: 1,
      durationMs: 9000,
      status: 'failed',
    });
    expect(backfillRunMetrics('daily', [run, run], { durationMs: 1, tokenFetches: 1 }).status).toBe('succeeded');
    expect(backfillRunMetrics('daily', [run, { ...run, status: 'partially_published' }], { durationMs: 1, tokenFetches: 1 }).status).toBe(
      'partially_published',
    );
  });
});

describe('MetricsPusher without a Pushgateway', () => {
  it('logs a failed push and reports false, never throws', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) });
    const pusher = new MetricsPusher({ pushgatewayUrl: 'http://127.0.0.1:9', timeoutMs: 1000, labels: {}, logger });
    expect(await pusher.pushTileRun(run)).toBe(false);
    expect(lines.join('')).toMatch(/metrics push for daily failed/);
  });
});

describeWithPushgateway('metrics of tile runs on a real Pushgateway', (gateway) => {
  const jobs = [
    { name: 'steady', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }], schedule: { cron: '*/15 * * * *' } },
    { name: 'flaky', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }] },
  ];

  const fixture = sandboxWorkspaceForAll({ incidents: 45 }, jobs, { itemsPerPage: 20 });
  beforeAll(async () => {
    const config = parse(await readFile(fixture.workspace.configFile, 'utf8')) as Record<string, unknown>;
    await writeFile(fixture.workspace.configFile, stringify({ ...config, metrics: { pushgatewayUrl: gateway.url, labels: { environment: 'test' } } }));
  });

  const tilehouse = (tiles: string[]) =>
    runCli(['run', '--config', fixture.workspace.configFile, '--jobs', fixture.workspace.jobsDir, ...tiles.flatMap((tile) => ['--tile', tile])], {
      env: sandboxEnv(fixture.sandbox),
    });
  const sample = async (name: string, job: string) => samplesOf(await gateway.scrape(), name).find((s) => s.labels.job === job);

  it("serves each job's run back on /metrics, grouped by job with the configured labels", async () => {
    fixture.sandbox.inject({ kind: 'rate-limit', endpoint: 'export', pageNumber: 1, retryAfter: 0 });
    const before = Date.now() / 1000;
    const result = await tilehouse(['steady', 'flaky']);
    expect(result.exitCode).toBe(0);
    for (const job of ['steady', 'flaky']) {
      expect(await sample(METRICS.rows, job)).toMatchObject({ labels: { job, environment: 'test' }, value: 45 });
      expect((await sample(METRICS.pages, job))?.value).toBe(3);
      expect((await sample(METRICS.lastRunSuccess, job))?.value).toBe(1);
      expect((await sample(METRICS.lastSuccess, job))?.value).toBeGreaterThanOrEqual(Math.floor(before));
      expect((await sample(METRICS.bytes, job))?.value).toBeGreaterThan(1000);
      expect((await sample(METRICS.duration, job))?.value).toBeGreaterThan(0);
      // Where the time went, one series per phase of the run.
      const phases = samplesOf(await gateway.scrape(), METRICS.phaseSeconds).filter((s) => s.labels.job === job);
      expect(phases.map((s) => s.labels.phase).sort()).toEqual(['prepare:csv', 'publish:csv', 'reading', 'source']);
      expect(phases.find((s) => s.labels.phase === 'source')!.value).toBeGreaterThan(0);
    }
    // The cron's interval goes with a scheduled job, for "no success in N intervals"; none without a schedule.
    expect((await sample(METRICS.scheduleInterval, 'steady'))?.value).toBe(900);
    expect(await sample(METRICS.scheduleInterval, 'flaky')).toBeUndefined();
    // One token for the run: the first tile fetched it.
    expect([(await sample(METRICS.tokenFetches, 'steady'))?.value, (await sample(METRICS.tokenFetches, 'flaky'))?.value]).toEqual([1, 0]);
    expect(((await sample(METRICS.throttled, 'steady'))?.value ?? 0) + ((await sample(METRICS.throttled, 'flaky'))?.value ?? 0)).toBe(1);
  });

  it('a failed run leaves the last success time as it was, and says the last run failed', async () => {
    // Its own successful runs first: the test does not lean on the one before it.
    expect((await tilehouse(['steady', 'flaky'])).exitCode).toBe(0);
    const success = (await sample(METRICS.lastSuccess, 'flaky'))!.value;
    const steadySuccess = (await sample(METRICS.lastSuccess, 'steady'))!.value;
    await new Promise((resolve) => setTimeout(resolve, 1100));
    fixture.sandbox.inject({ kind: 'server-error', endpoint: 'export', status: 500, times: Infinity });
    try {
      const result = await tilehouse(['flaky']);
      expect(result.exitCode).toBe(1);
    } finally {
      fixture.sandbox.clearFaults();
    }
    expect((await sample(METRICS.lastSuccess, 'flaky'))?.value).toBe(success);
    expect((await sample(METRICS.lastRunSuccess, 'flaky'))?.value).toBe(0);
    expect((await sample(METRICS.lastFailure, 'flaky'))?.value).toBeGreaterThan(success);
    expect((await sample(METRICS.rows, 'flaky'))?.value).toBe(0);
    expect((await sample(METRICS.retries, 'flaky'))?.value).toBeGreaterThan(0);
    // The other job's group is untouched.
    expect((await sample(METRICS.lastSuccess, 'steady'))?.value).toBe(steadySuccess);

    const recovered = await tilehouse(['flaky']);
    expect(recovered.exitCode).toBe(0);
    expect((await sample(METRICS.lastSuccess, 'flaky'))!.value).toBeGreaterThan(success);
    expect((await sample(METRICS.lastRunSuccess, 'flaky'))?.value).toBe(1);
  });

  it('a run a publish guard refused says so (the metric TilehousePublishGuardTripped fires on), and the next published run clears it', async () => {
    // A published run first, for the guard to hold the next one against.
    expect((await tilehouse(['flaky'])).exitCode).toBe(0);
    const jobFile = `${fixture.workspace.jobsDir}/flaky.yaml`;
    const original = await readFile(jobFile, 'utf8');
    const none = {
      ...detailQuery,
      items: detailQuery.items.map((item, index) => (index === 0 ? { ...item, filters: [{ operator: 'gt', values: ['1000'] }] } : item)),
    };
    await writeFile(jobFile, stringify({ ...jobs[1], query: none }));
    try {
      const refused = await tilehouse(['flaky']);
      expect(refused.exitCode).toBe(1);
      expect(refused.stderr).toContain('publish_guard_tripped');
      expect((await sample(METRICS.guardTripped, 'flaky'))?.value).toBe(1);
      expect((await sample(METRICS.lastRunSuccess, 'flaky'))?.value).toBe(0);
    } finally {
      await writeFile(jobFile, original);
    }
    expect((await tilehouse(['flaky'])).exitCode).toBe(0);
    expect((await sample(METRICS.guardTripped, 'flaky'))?.value).toBe(0);
  });
});

describeWithPushgateway('metrics of a backfill on a real Pushgateway', (gateway) => {
  const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);
  const job = {
    name: 'daily',
    tile: SANDBOX_TILE,
    query: dailyQuery,
    sinks: [{ type: 'csv' }],
    schedule: { cron: '0 6 * * *' },
    backfill: { item: 'day', bucketColumn: 'Day' },
  };

  const fixture = sandboxWorkspaceForAll({ incidents: 1000, now: new Date() }, [job]);
  beforeAll(async () => {
    const config = parse(await readFile(fixture.workspace.configFile, 'utf8')) as Record<string, unknown>;
    await writeFile(fixture.workspace.configFile, stringify({ ...config, metrics: { pushgatewayUrl: gateway.url } }));
  });

  it('pushes one run for the whole backfill, to its own group (mode="backfill"), never the scheduled group', async () => {
    const { configFile, jobsDir } = fixture.workspace;
    const result = await runCli(['backfill', '--config', configFile, '--jobs', jobsDir, '--tile', 'daily', '--from', day(-4), '--to', day(-1), '--json'], {
      env: sandboxEnv(fixture.sandbox),
    });
    expect(result.exitCode).toBe(0);
    const summary = JSON.parse(result.stdout) as { rows: number };
    const samples = samplesOf(await gateway.scrape(), METRICS.rows).filter((sample) => sample.labels.job === 'daily');
    expect(samples).toEqual([{ labels: expect.objectContaining({ job: 'daily', mode: 'backfill' }), value: summary.rows }]);
    expect(samplesOf(await gateway.scrape(), METRICS.lastRunSuccess).find((sample) => sample.labels.job === 'daily')).toMatchObject({
      labels: { mode: 'backfill' },
      value: 1,
    });
    expect(samplesOf(await gateway.scrape(), METRICS.tokenFetches).find((sample) => sample.labels.job === 'daily')?.value).toBe(1);
  });
});
