// Runs of the real CLI (child processes) exporting to the real OpenTelemetry Collector, whose file
// exporter's output is read back: the span tree, a failed tile, TRACEPARENT, SIGTERM, the metrics
// against the run summary, and collectors that refuse, fail or hang.
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SANDBOX_TILE, startSandbox, type Sandbox } from '../../sandbox/index.js';
import { listFiles, sandboxEnv, writeWorkspace, summaryOf } from '../support/cli-harness.js';
import { exitWithin, spawnCli as spawnChild, splitStderr } from '../support/child-process.js';
import { describeWithCollector, type ReceivedSpan } from '../support/otel-collector.js';
import { dailySeverityQuery, detailQuery } from '../support/queries.js';
import { dayFromToday } from '../support/window-oracle.js';
import { spawnCli } from '../support/spawn-cli.js';
import { sandboxAndRootForAll } from '../support/sandbox-fixture.js';
import { waitUntil } from '../support/wait-until.js';

const fixture = sandboxAndRootForAll({ incidents: 150 });
let slow: Sandbox;

beforeAll(async () => {
  // 30 pages at 60 ms each: long enough to be stopped in the middle.
  slow = await startSandbox({ incidents: 600, latencyMs: 60 });
});
afterAll(async () => {
  await slow?.close();
});

/** The summary `run --json` printed. */
const runSummaryOf = (stdout: string) => summaryOf(stdout, 'run');

const detail = (name: string, tile = SANDBOX_TILE) => ({ name, tile, query: detailQuery, sinks: [{ type: 'csv' }] });

let runs = 0;
/** A fresh run id: the collector holds every test's spans, each test reads its own by the resource's run id. */
const newRunId = (label: string) => `otel-${label}-${process.pid}-${++runs}`;

function ofRun(spans: ReceivedSpan[], runId: string): ReceivedSpan[] {
  return spans.filter((span) => span.resource['tilehouse.run_id'] === runId);
}

function childrenOf(spans: ReceivedSpan[], parent: ReceivedSpan): ReceivedSpan[] {
  return spans.filter((span) => span.parentSpanId === parent.spanId);
}

describeWithCollector('tilehouse run exporting to a real OpenTelemetry Collector', (collector) => {
  const otelEnv = () => ({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint, OTEL_EXPORTER_OTLP_TIMEOUT: '3000' });

  it('sends one trace: run → tile → token, pages, prepare, publish, with their attributes; log lines carry its ids', async () => {
    const workspace = await writeWorkspace(path.join(fixture.root, 'tree'), fixture.sandbox, [detail('detail_a'), detail('detail_b')], {
      itemsPerPage: 40,
      concurrency: 2,
    });
    const runId = newRunId('tree');
    const result = await spawnCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir, '--run-id', runId], {
      env: { ...sandboxEnv(fixture.sandbox), ...otelEnv() },
      timeoutMs: 60_000,
    });
    expect(result.code, result.stderr).toBe(0);
    const spans = await collector.until(({ spans }) => {
      const mine = ofRun(spans, runId);
      return mine.some((span) => span.name === 'tilehouse.run') ? mine : undefined;
    });
    const [run, ...others] = spans.filter((span) => span.name === 'tilehouse.run');
    expect(others).toEqual([]);
    expect(run!.parentSpanId).toBe('');
    expect(run!.status.code).not.toBe(2);
    expect(run!.attributes).toMatchObject({
      'tilehouse.command': 'run',
      'tilehouse.run_id': runId,
      'tilehouse.exit_code': 0,
      'tilehouse.jobs': ['detail_a', 'detail_b'],
    });
    expect(run!.resource).toMatchObject({ 'service.name': 'tilehouse', 'service.version': expect.any(String), 'tilehouse.run_id': runId });
    expect(new Set(spans.map((span) => span.traceId))).toEqual(new Set([run!.traceId]));

    const tiles = childrenOf(spans, run!).filter((span) => span.name === 'tilehouse.tile');
    expect(tiles.map((tile) => tile.attributes['tilehouse.job']).sort()).toEqual(['detail_a', 'detail_b']);
    for (const tile of tiles) {
      expect(tile.attributes).toMatchObject({
        'tilehouse.status': 'succeeded',
        'tilehouse.rows': 150,
        'tilehouse.pages': 4,
        'tilehouse.tile_id': SANDBOX_TILE,
      });
      const children = childrenOf(spans, tile);
      const pages = children.filter((span) => span.name === 'tilehouse.page');
      expect(pages.map((page) => page.attributes['tilehouse.page.number']).sort()).toEqual([0, 1, 2, 3]);
      for (const page of pages) {
        expect(page.attributes).toMatchObject({
          'http.request.method': 'POST',
          'http.response.status_code': 200,
          'tilehouse.attempts': 1,
          'http.response.body.size': expect.any(Number),
        });
      }
      expect(pages.map((page) => page.attributes['tilehouse.page.rows']).reduce((sum, rows) => Number(sum) + Number(rows), 0)).toBe(150);
      const prepare = children.filter((span) => span.name === 'tilehouse.sink.prepare');
      const publish = children.filter((span) => span.name === 'tilehouse.sink.publish');
      const target = path.join(workspace.outDir, `${String(tile.attributes['tilehouse.job'])}.csv`);
      expect(prepare.map((span) => span.attributes['tilehouse.sink.target'])).toEqual([target]);
      expect(publish.map((span) => span.attributes)).toEqual([
        expect.objectContaining({ 'tilehouse.sink.target': target, 'tilehouse.sink.kind': 'csv', 'tilehouse.rows': 150 }),
      ]);
      // Prepare ends before publish starts: the two phases, in order (a start time may be
      // rounded to the millisecond by the SDK's clock).
      expect(prepare[0]!.endNs <= publish[0]!.startNs + 1_000_000n, `${prepare[0]!.endNs} ${publish[0]!.startNs}`).toBe(true);
    }
    // The run's one token (tokenScope run): a child of the tile that fetched it, beside its pages.
    const tokens = spans.filter((span) => span.name === 'tilehouse.token');
    expect(tokens).toHaveLength(1);
    expect(tiles.map((tile) => tile.spanId)).toContain(tokens[0]!.parentSpanId);
    expect(tokens[0]!.attributes['url.full']).toMatch(/^http:\/\/127\.0\.0\.1:\d+\//);

    // A JSON log line written inside a span names it.
    const { logs } = splitStderr(result.stderr);
    const succeeded = logs.find((line) => line.msg === 'job detail_a succeeded: 150 rows in 4 pages');
    const tileA = tiles.find((tile) => tile.attributes['tilehouse.job'] === 'detail_a')!;
    expect(succeeded).toMatchObject({ trace_id: run!.traceId, span_id: tileA.spanId });
    expect(logs.find((line) => line.msg === 'run starting')).toMatchObject({ trace_id: run!.traceId, span_id: run!.spanId });
  }, 90_000);

  it('marks a failed tile ERROR with its code, the other tile OK, and the run ERROR (exit 1)', async () => {
    const workspace = await writeWorkspace(path.join(fixture.root, 'failed'), fixture.sandbox, [detail('good'), detail('bad', 'no-such-tile')], {
      itemsPerPage: 40,
    });
    const runId = newRunId('failed');
    const result = await spawnCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir, '--run-id', runId, '--json'], {
      env: { ...sandboxEnv(fixture.sandbox), ...otelEnv() },
      timeoutMs: 60_000,
    });
    expect(result.code, result.stderr).toBe(1);
    const summary = runSummaryOf(result.stdout);
    const failed = summary.tiles.find((tile) => tile.job === 'bad')!;
    expect(failed.error?.code).toBe('export_api_error');
    const spans = await collector.until(({ spans }) => {
      const mine = ofRun(spans, runId);
      return mine.some((span) => span.name === 'tilehouse.run') ? mine : undefined;
    });
    const tile = (job: string) => spans.find((span) => span.name === 'tilehouse.tile' && span.attributes['tilehouse.job'] === job)!;
    expect(tile('bad').status).toEqual({ code: 2, message: `export_api_error: ${failed.error!.message}` });
    expect(tile('bad').attributes).toMatchObject({ 'error.type': 'export_api_error', 'tilehouse.status': 'failed' });
    expect(tile('good').status.code).not.toBe(2);
    expect(tile('good').attributes['error.type']).toBeUndefined();
    // The page that was refused: ERROR, with the HTTP status it got.
    const refused = childrenOf(spans, tile('bad')).find((span) => span.name === 'tilehouse.page')!;
    expect(refused.status.code).toBe(2);
    expect(refused.attributes).toMatchObject({ 'http.response.status_code': 400, 'error.type': 'export_api_error' });
    const run = spans.find((span) => span.name === 'tilehouse.run')!;
    expect(run.status.code).toBe(2);
    expect(run.attributes).toMatchObject({ 'error.type': 'export_api_error', 'tilehouse.exit_code': 1 });
  }, 90_000);

  it('makes the run a child of the trace TRACEPARENT names; the resource names the pod, OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win', async () => {
    const workspace = await writeWorkspace(path.join(fixture.root, 'parent'), fixture.sandbox, [detail('detail_p')], { itemsPerPage: 40 });
    const runId = newRunId('parent');
    const traceId = '0af7651916cd43dd8448eb211c80319c';
    const parentId = 'b7ad6b7169203331';
    const env = {
      ...sandboxEnv(fixture.sandbox),
      ...otelEnv(),
      TRACEPARENT: `00-${traceId}-${parentId}-01`,
      TRACESTATE: 'airflow=dag-run-7',
      // As the generated manifests pass them (downward API), and as an operator may add to them.
      K8S_POD_NAME: 'tilehouse-detail-p-29384-abcde',
      K8S_NAMESPACE_NAME: 'tilehouse',
      K8S_NODE_NAME: 'node-3',
      OTEL_SERVICE_NAME: 'tilehouse-nightly',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=staging,service.name=ignored',
    };
    const result = await spawnCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir, '--run-id', runId], { env, timeoutMs: 60_000 });
    expect(result.code, result.stderr).toBe(0);
    const spans = await collector.until(({ spans }) => {
      const mine = ofRun(spans, runId);
      return mine.some((span) => span.name === 'tilehouse.run') ? mine : undefined;
    });
    const run = spans.find((span) => span.name === 'tilehouse.run')!;
    expect(run.traceId).toBe(traceId);
    expect(run.parentSpanId).toBe(parentId);
    expect(spans.every((span) => span.traceId === traceId)).toBe(true);
    expect(run.resource).toMatchObject({
      'service.name': 'tilehouse-nightly',
      'deployment.environment.name': 'staging',
      'k8s.pod.name': 'tilehouse-detail-p-29384-abcde',
      'k8s.namespace.name': 'tilehouse',
      'k8s.node.name': 'node-3',
      'tilehouse.command': 'run',
      'tilehouse.jobs': ['detail_p'],
    });
  }, 60_000);

  it('starts a trace of its own when TRACEPARENT is malformed', async () => {
    const workspace = await writeWorkspace(path.join(fixture.root, 'bad-parent'), fixture.sandbox, [detail('detail_q')], { itemsPerPage: 40 });
    const runId = newRunId('bad-parent');
    const result = await spawnCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir, '--run-id', runId], {
      env: { ...sandboxEnv(fixture.sandbox), ...otelEnv(), TRACEPARENT: '00-not-a-trace-01' },
      timeoutMs: 60_000,
    });
    expect(result.code, result.stderr).toBe(0);
    const run = await collector.until(({ spans }) => ofRun(spans, runId).find((span) => span.name === 'tilehouse.run'));
    expect(run.parentSpanId).toBe('');
    expect(run.traceId).toMatch(/^[0-9a-f]{32}$/);
  }, 60_000);

  it("sends run metrics (delta) whose values equal the run summary's", async () => {
    const workspace = await writeWorkspace(path.join(fixture.root, 'metrics'), fixture.sandbox, [detail('detail_m'), detail('detail_x', 'no-such-tile')], {
      itemsPerPage: 40,
    });
    const runId = newRunId('metrics');
    const result = await spawnCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir, '--run-id', runId, '--json'], {
      env: { ...sandboxEnv(fixture.sandbox), ...otelEnv() },
      timeoutMs: 60_000,
    });
    expect(result.code, result.stderr).toBe(1);
    const summary = runSummaryOf(result.stdout);
    const points = await collector.until(({ points }) => {
      const mine = points.filter((point) => point.resource['tilehouse.run_id'] === runId);
      return mine.some((point) => point.metric === 'tilehouse.runs') ? mine : undefined;
    });
    const value = (metric: string, job: string) => points.filter((point) => point.metric === metric && point.attributes['tilehouse.job'] === job);
    for (const tile of summary.tiles) {
      const expected = {
        'tilehouse.rows': tile.rows,
        'tilehouse.pages': tile.pages,
        'tilehouse.bytes': tile.bytes,
        'tilehouse.retries': tile.retries,
        'tilehouse.throttled_responses': tile.throttled,
        'tilehouse.token_fetches': tile.tokenFetches,
      };
      for (const [metric, wanted] of Object.entries(expected)) {
        const got = value(metric, tile.job);
        expect(
          got.map((point) => point.value),
          `${metric} ${tile.job}`,
        ).toEqual([wanted]);
        expect(got[0]!.temporality, 'delta: a process that lives one run').toBe(1);
        expect(got[0]!.attributes['tilehouse.status']).toBe(tile.status);
      }
      expect(value('tilehouse.runs', tile.job).map((point) => [point.value, point.attributes['error.type']])).toEqual([[1, tile.error?.code]]);
      expect(value('tilehouse.run.duration', tile.job)[0]!.value).toBeCloseTo(tile.durationMs / 1000, 3);
    }
    expect(value('tilehouse.last_success', 'detail_m')).toHaveLength(1);
    expect(value('tilehouse.last_success', 'detail_x')).toEqual([]);
    expect(value('tilehouse.last_run', 'detail_x')).toHaveLength(1);
  }, 60_000);

  it('traces a backfill as run → window → tile, each window with its dates and run id', async () => {
    const now = await startSandbox({ incidents: 1000, now: new Date() });
    try {
      const job = {
        name: 'daily_severity',
        tile: SANDBOX_TILE,
        query: dailySeverityQuery,
        sinks: [{ type: 'csv' }],
        columns: { Day: { type: 'DATE' }, Incidents: { type: 'INT64' } },
        backfill: { item: 'day', bucketColumn: 'Day' },
      };
      const workspace = await writeWorkspace(path.join(fixture.root, 'backfill'), now, [job], { itemsPerPage: 100 });
      const runId = newRunId('backfill');
      const [from, to] = [dayFromToday(-5), dayFromToday(-2)];
      const result = await spawnCli(
        ['backfill', '--config', workspace.configFile, '--jobs', workspace.jobsDir, '--job', 'daily_severity', '--from', from, '--to', to, '--run-id', runId],
        {
          env: { ...sandboxEnv(now), ...otelEnv() },
          timeoutMs: 60_000,
        },
      );
      expect(result.code, result.stderr).toBe(0);
      const spans = await collector.until(({ spans }) => {
        const mine = ofRun(spans, runId);
        return mine.some((span) => span.name === 'tilehouse.run') ? mine : undefined;
      });
      const run = spans.find((span) => span.name === 'tilehouse.run')!;
      expect(run.attributes).toMatchObject({
        'tilehouse.command': 'backfill',
        'tilehouse.backfill.from': from,
        'tilehouse.backfill.to': to,
        'tilehouse.exit_code': 0,
      });
      const windows = childrenOf(spans, run).filter((span) => span.name === 'tilehouse.window');
      expect(windows.map((window) => window.attributes['tilehouse.window.start']).sort()).toEqual([dayFromToday(-5), dayFromToday(-4), dayFromToday(-3)]);
      for (const window of windows) {
        expect(window.attributes['tilehouse.run_id']).toBe(`${runId}-${String(window.attributes['tilehouse.window.start']).replaceAll('-', '')}`);
        expect(childrenOf(spans, window).map((span) => span.name)).toEqual(['tilehouse.tile']);
      }
    } finally {
      await now.close();
    }
  }, 60_000);

  it('traces each tick of the schedule worker as a trace of its own, flushed when it stops', async () => {
    const workspace = await writeWorkspace(
      path.join(fixture.root, 'schedule'),
      fixture.sandbox,
      [{ ...detail('detail_tick'), schedule: { cron: '* * * * * *', timezone: 'UTC' } }],
      { itemsPerPage: 40 },
    );
    const child = spawnChild(['schedule', '--config', workspace.configFile, '--jobs', workspace.jobsDir], {
      env: { ...process.env, ...sandboxEnv(fixture.sandbox), ...otelEnv(), CI: '' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    // A start-up and two ticks of a one-page run: seconds, many more on a busy machine.
    const exited = exitWithin(child, 60_000);
    await waitUntil(() => (stderr.match(/job detail_tick succeeded/g) ?? []).length >= 2, 'two succeeded ticks of detail_tick', {
      withinMs: 45_000,
      everyMs: 50,
      gaveUp: () => child.exitCode !== null,
    });
    child.kill('SIGTERM');
    expect((await exited).code, stderr).toBe(143);
    const roots = await collector.until(({ spans }) => {
      const ticks = spans.filter(
        (span) =>
          span.name === 'tilehouse.run' &&
          span.attributes['tilehouse.command'] === 'schedule' &&
          (span.attributes['tilehouse.jobs'] as string[])?.[0] === 'detail_tick',
      );
      return ticks.length >= 2 ? ticks : undefined;
    });
    expect(new Set(roots.map((span) => span.traceId)).size).toBe(roots.length);
    const { spans } = await collector.received();
    for (const tick of roots.slice(0, 2)) {
      expect(tick.status.code).not.toBe(2);
      expect(spans.filter((span) => span.parentSpanId === tick.spanId).map((span) => span.name)).toEqual(['tilehouse.tile']);
    }
  }, 90_000);

  it('sends the fixture.root span, ERROR with the signal, before exiting 143 on SIGTERM mid-export', async () => {
    const workspace = await writeWorkspace(path.join(fixture.root, 'sigterm'), slow, [detail('detail_slow')], { itemsPerPage: 20, concurrency: 1 });
    const runId = newRunId('sigterm');
    const before = slow.requests.length;
    const child = spawnChild(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir, '--run-id', runId], {
      env: { ...process.env, ...sandboxEnv(slow), ...otelEnv(), CI: '' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = exitWithin(child, 30_000);
    await waitUntil(() => slow.requests.slice(before).filter((request) => request.endpoint === 'export').length >= 5, 'five export requests', {
      gaveUp: () => child.exitCode !== null,
    });
    child.kill('SIGTERM');
    const { code } = await exited;
    expect(code, stderr).toBe(143);
    // Read after the exit: whatever arrives now was sent before the process ended (the collector
    // writes it out a little later, later still on a busy machine: its default wait, not 3 s).
    const spans = await collector.until(({ spans }) => {
      const mine = ofRun(spans, runId);
      return mine.some((span) => span.name === 'tilehouse.run') ? mine : undefined;
    });
    const run = spans.find((span) => span.name === 'tilehouse.run')!;
    expect(run.status).toEqual({ code: 2, message: 'run_stopped: stopped by SIGTERM' });
    expect(run.events.map((event) => [event.name, event.attributes.reason])).toEqual([['tilehouse.signal', 'stopped by SIGTERM']]);
    const tile = spans.find((span) => span.name === 'tilehouse.tile')!;
    expect(tile.status.code).toBe(2);
    expect(tile.attributes['error.type']).toBe('run_stopped');
    expect(spans.filter((span) => span.name === 'tilehouse.page').length).toBeGreaterThanOrEqual(4);
  }, 60_000);
});

/** A collector that is not one: answers 503 to everything, or takes the request and never answers. */
async function fakeCollector(behaviour: '503' | 'hang'): Promise<{ endpoint: string; requests: () => number; close(): Promise<void> }> {
  let count = 0;
  const server: Server = createServer((request, response) => {
    count += 1;
    request.resume();
    if (behaviour === '503') response.writeHead(503, { 'content-type': 'text/plain' }).end('unavailable');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    requests: () => count,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A port nothing listens on: a server bound and closed at once. */
async function refusingEndpoint(): Promise<string> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

describe('a collector that refuses, answers 503 or never answers', () => {
  // The export timeout the runs are given (the docs bound the delay by it plus half a second: src/telemetry/otel-telemetry.ts).
  const TIMEOUT_MS = 1500;

  async function runWith(name: string, env: Record<string, string>) {
    const workspace = await writeWorkspace(path.join(fixture.root, name), fixture.sandbox, [detail('detail_ok'), detail('detail_bad', 'no-such-tile')], {
      itemsPerPage: 40,
    });
    const result = await spawnCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir, '--json'], {
      env: { ...sandboxEnv(fixture.sandbox), ...env },
      timeoutMs: 60_000,
    });
    const files = await listFiles(workspace.outDir);
    const csv = await readFile(path.join(workspace.outDir, 'detail_ok.csv'), 'utf8');
    return { ...result, files, csv };
  }

  it.each(['refused', '503', 'hang'] as const)(
    '%s: the same exit code and files as without telemetry, one warning, and no hang',
    async (behaviour) => {
      const baseline = await runWith(`baseline-${behaviour}`, {});
      const fake = behaviour === 'refused' ? undefined : await fakeCollector(behaviour);
      try {
        const endpoint = fake?.endpoint ?? (await refusingEndpoint());
        const result = await runWith(`collector-${behaviour}`, { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_EXPORTER_OTLP_TIMEOUT: String(TIMEOUT_MS) });
        expect(result.code).toBe(1);
        expect(result.code).toBe(baseline.code);
        expect(result.files).toEqual(baseline.files);
        expect(result.csv).toBe(baseline.csv);
        const warnings = splitStderr(result.stderr).logs.filter((line) => /telemetry/.test(String(line.msg)));
        expect(warnings.map((line) => [line.level, line.msg])).toEqual([
          [40, expect.stringMatching(/^telemetry (export to|was not sent).*the run's outcome is unchanged/)],
        ]);
        if (fake !== undefined) expect(fake.requests()).toBeGreaterThan(0);
        // Ended on its own (a collector that never answers does not hold the process until it is
        // killed); how long the export timeout adds is a timing promise, not this test's to make.
        expect(result.timedOut).toBe(false);
      } finally {
        await fake?.close();
      }
    },
    90_000,
  );
});
