// The Grafana dashboard shipped with the manifests (k8s/grafana-dashboard.json), proven on real
// data: a real Prometheus (Debian's `prometheus` package, or $PROMETHEUS_BIN) scrapes the real
// Pushgateway after sandbox runs (one success, one failure, one backfill), and every query of every
// panel, its template variables substituted, must return data through Prometheus's HTTP API.
// Grafana itself cannot be built here (docs/observability.md); the JSON is checked structurally.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { appendFile, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { runCli, sandboxEnv, writeWorkspace } from '../support/cli-harness.js';
import { freePort } from '../support/bigquery-emulator-process.js';
import { stopProcess } from '../support/child-process.js';
import { dailySeverityQuery, detailQuery } from '../support/queries.js';
import { sandboxAndRootForAll } from '../support/sandbox-fixture.js';
import { dayFromToday } from '../support/window-oracle.js';
import { pushgatewayBinaryOrSkip, startPushgateway, type RunningPushgateway } from '../metrics/pushgateway.js';
import { underCi } from '../support/ci.js';
import { describeUnless, missing } from '../support/skip.js';
import { waitUntil } from '../support/wait-until.js';

type Json = Record<string, any>;

const DASHBOARD = 'k8s/grafana-dashboard.json';

/** Every panel, rows' nested panels included. */
function panelsOf(dashboard: Json): Json[] {
  return (dashboard.panels as Json[]).flatMap((panel) => [panel, ...((panel.panels as Json[] | undefined) ?? [])]);
}

/** Every `$name` / `${name}` / `[[name]]` a string uses (Grafana's globals `$__*` aside). */
function variablesIn(text: string): string[] {
  return [...text.matchAll(/\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)\]\]/g)]
    .map((match) => match[1] ?? match[2] ?? match[3]!)
    .filter((name) => !name.startsWith('__'));
}

/** The dashboard's queries with the variables as a user who picks "All" in namespace tilehouse sees them. */
export function substitute(expr: string, values: Record<string, string>): string {
  return expr.replace(/\$\{(\w+)(?::\w+)?\}|\$(\w+)/g, (whole, braced: string | undefined, bare: string | undefined) => values[braced ?? bare!] ?? whole);
}

describe('the Grafana dashboard JSON (structure)', () => {
  it('has unique panel ids, a Prometheus datasource that is the variable everywhere, and defines every variable it uses', async () => {
    const dashboard = JSON.parse(await readFile(DASHBOARD, 'utf8')) as Json;
    const panels = panelsOf(dashboard);
    const ids = panels.map((panel) => panel.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.every((id) => Number.isInteger(id))).toBe(true);
    const defined = (dashboard.templating.list as Json[]).map((variable) => variable.name as string);
    expect(defined).toEqual(['datasource', 'job', 'namespace']);
    expect((dashboard.templating.list as Json[])[0]).toMatchObject({ type: 'datasource', query: 'prometheus' });
    const used = new Set<string>();
    for (const panel of panels.filter((candidate) => candidate.type !== 'row')) {
      // Every datasource is the variable: the dashboard imports into any Grafana.
      expect(panel.datasource, panel.title).toEqual({ type: 'prometheus', uid: '${datasource}' });
      expect(panel.targets.length, panel.title).toBeGreaterThan(0);
      for (const target of panel.targets as Json[]) {
        expect(target.datasource, panel.title).toEqual({ type: 'prometheus', uid: '${datasource}' });
        for (const name of variablesIn(target.expr)) used.add(name);
        expect(target.expr, panel.title).not.toMatch(/\$__/);
      }
      for (const name of variablesIn(JSON.stringify(panel))) used.add(name);
    }
    for (const variable of dashboard.templating.list as Json[]) for (const name of variablesIn(JSON.stringify(variable))) used.add(name);
    expect([...used].filter((name) => !defined.includes(name))).toEqual([]);
    // And every variable defined is used somewhere.
    expect(defined.filter((name) => !used.has(name))).toEqual([]);
    // Panels do not overlap on Grafana's 24-column grid.
    const cells = new Set<string>();
    for (const { gridPos } of panels) {
      expect(gridPos.x + gridPos.w).toBeLessThanOrEqual(24);
      for (let x = gridPos.x; x < gridPos.x + gridPos.w; x += 1) {
        for (let y = gridPos.y; y < gridPos.y + gridPos.h; y += 1) {
          expect(cells.has(`${x},${y}`), `overlap at ${x},${y}`).toBe(false);
          cells.add(`${x},${y}`);
        }
      }
    }
  });

  it('refuses what it must: a structural check that sees an undefined variable and a fixed datasource', () => {
    expect(variablesIn('up{job=~"$job", namespace="${namespace}", x="[[other]]"} [$__rate_interval]')).toEqual(['job', 'namespace', 'other']);
    expect(substitute('a{job=~"$job", ns="${namespace}"}', { job: '.+', namespace: 'tilehouse' })).toBe('a{job=~".+", ns="tilehouse"}');
  });
});

/**
 * A real Prometheus: $PROMETHEUS_BIN, else Debian's package (`apt-get install prometheus`, which
 * .ci/run does as root). Absent outside CI: skipped, and says so; absent under CI: fails.
 */
function prometheusBinaryOrSkip(): string | null {
  const candidates = [process.env.PROMETHEUS_BIN, path.resolve('.tools/bin/prometheus'), '/usr/bin/prometheus'].filter(
    (candidate): candidate is string => candidate !== undefined,
  );
  const found = candidates.find((candidate) => existsSync(candidate));
  if (found !== undefined) return found;
  if (underCi()) throw new Error('CI is set but no Prometheus is installed: apt-get install prometheus (.ci/run does), or set PROMETHEUS_BIN');
  return null;
}

const prometheus = prometheusBinaryOrSkip();
const pushgateway = pushgatewayBinaryOrSkip();

/**
 * kube-state-metrics' series the alert rules (k8s/prometheus-rules.yaml) and the dashboard use, for
 * the demo's real CronJob names (examples/k8s-demo/cronjobs.yaml). No cluster runs here, so this
 * tiny static exposition stands in for kube-state-metrics' /metrics: the series names and labels
 * are kube-state-metrics' own, the values those of a daily CronJob whose newest Job failed.
 */
async function kubeStateMetricsExposition(nowSeconds: number): Promise<string> {
  const cronJobs = parseAllDocuments(await readFile('examples/k8s-demo/cronjobs.yaml', 'utf8'))
    .map((document) => document.toJS() as Json)
    .filter((document) => document?.kind === 'CronJob')
    .map((document) => document.metadata.name as string);
  const lines = [
    '# TYPE kube_cronjob_status_last_successful_time gauge',
    '# TYPE kube_cronjob_status_last_schedule_time gauge',
    '# TYPE kube_cronjob_next_schedule_time gauge',
    '# TYPE kube_job_failed gauge',
    '# TYPE kube_job_owner gauge',
  ];
  for (const [index, cronJob] of cronJobs.entries()) {
    const cron = `namespace="tilehouse",cronjob="${cronJob}"`;
    lines.push(`kube_cronjob_status_last_successful_time{${cron}} ${nowSeconds - 86_400 * (index + 1)}`);
    lines.push(`kube_cronjob_status_last_schedule_time{${cron}} ${nowSeconds - 3_600}`);
    lines.push(`kube_cronjob_next_schedule_time{${cron}} ${nowSeconds + 82_800}`);
    const job = `${cronJob}-29384${index}`;
    lines.push(`kube_job_failed{namespace="tilehouse",job_name="${job}",condition="true"} ${index === 0 ? 1 : 0}`);
    lines.push(`kube_job_failed{namespace="tilehouse",job_name="${job}",condition="false"} ${index === 0 ? 0 : 1}`);
    lines.push(`kube_job_owner{namespace="tilehouse",job_name="${job}",owner_kind="CronJob",owner_name="${cronJob}",owner_is_controller="true"} 1`);
  }
  return `${lines.join('\n')}\n`;
}

interface RunningPrometheus {
  url: string;
  query(expr: string): Promise<Json[]>;
  stop(): Promise<void>;
}

async function startPrometheus(binary: string, directory: string, targets: { pushgateway: string; kubeStateMetrics: string }): Promise<RunningPrometheus> {
  const port = await freePort();
  const config = path.join(directory, 'prometheus.yml');
  await writeFile(
    config,
    [
      'global: { scrape_interval: 1s, evaluation_interval: 1s }',
      'scrape_configs:',
      // honor_labels: the Pushgateway's job label is the tilehouse job's name (docs, the alert rules).
      '  - job_name: pushgateway',
      '    honor_labels: true',
      `    static_configs: [{ targets: ["${targets.pushgateway}"] }]`,
      '  - job_name: kube-state-metrics',
      '    honor_labels: true',
      `    static_configs: [{ targets: ["${targets.kubeStateMetrics}"] }]`,
      '',
    ].join('\n'),
  );
  const child: ChildProcess = spawn(
    binary,
    [`--config.file=${config}`, `--storage.tsdb.path=${path.join(directory, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let tail = '';
  child.stderr!.on('data', (chunk: Buffer) => (tail = (tail + chunk.toString()).slice(-4000)));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`prometheus exited early (code ${child.exitCode}):\n${tail}`);
    if (
      await fetch(`${url}/-/ready`).then(
        (response) => response.ok,
        () => false,
      )
    )
      break;
    if (Date.now() > deadline) {
      await stopProcess(child);
      throw new Error(`prometheus did not become ready on ${url}:\n${tail}`);
    }
    await sleep(100);
  }
  return {
    url,
    async query(expr) {
      const response = await fetch(`${url}/api/v1/query?${new URLSearchParams({ query: expr })}`);
      const body = (await response.json()) as { status: string; error?: string; data?: { result: Json[] } };
      if (body.status !== 'success') throw new Error(`${expr}: ${body.error}`);
      return body.data!.result;
    },
    stop: () => stopProcess(child),
  };
}

const fixture = sandboxAndRootForAll({ incidents: 2000, now: new Date() });

describeUnless(missing('Prometheus', prometheus) ?? missing('the Pushgateway', pushgateway))(
  'the Grafana dashboard on a real Prometheus scraping the real Pushgateway (prometheus, pushgateway)',
  () => {
    let gateway: RunningPushgateway;
    let server: Server;
    let prom: RunningPrometheus;

    beforeAll(async () => {
      gateway = await startPushgateway(pushgateway!);
      const exposition = await kubeStateMetricsExposition(Math.floor(Date.now() / 1000));
      server = createServer((_request, response) => response.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(exposition));
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      prom = await startPrometheus(prometheus!, fixture.root, {
        pushgateway: gateway.url.replace('http://', ''),
        kubeStateMetrics: `127.0.0.1:${(server.address() as AddressInfo).port}`,
      });

      // The three runs: a scheduled job that succeeds, one that fails, and a backfill.
      const schedule = { cron: '0 3 * * *', timezone: 'UTC' };
      const jobs = [
        { name: 'nightly_ok', tile: SANDBOX_TILE, schedule, query: detailQuery, sinks: [{ type: 'csv' }] },
        { name: 'nightly_failing', tile: 'no-such-tile', schedule, query: detailQuery, sinks: [{ type: 'csv' }] },
        {
          name: 'daily_severity',
          tile: SANDBOX_TILE,
          query: dailySeverityQuery,
          sinks: [{ type: 'csv' }],
          columns: { Day: { type: 'DATE' }, Incidents: { type: 'INT64' } },
          backfill: { item: 'day', bucketColumn: 'Day' },
        },
      ];
      const workspace = await writeWorkspace(path.join(fixture.root, 'runs'), fixture.sandbox, jobs, { itemsPerPage: 100 });
      await appendFile(workspace.configFile, `metrics:\n  pushgatewayUrl: ${gateway.url}\n`);
      const flags = ['--config', workspace.configFile, '--jobs', workspace.jobsDir];
      const env = sandboxEnv(fixture.sandbox);
      expect((await runCli(['run', ...flags, '--job', 'nightly_ok'], { env })).exitCode).toBe(0);
      expect((await runCli(['run', ...flags, '--job', 'nightly_failing'], { env })).exitCode).toBe(1);
      expect((await runCli(['backfill', ...flags, '--job', 'daily_severity', '--from', dayFromToday(-5), '--to', dayFromToday(-2)], { env })).exitCode).toBe(0);
      // Scraped: every pushed group is in Prometheus (three jobs' last runs).
      const deadline = Date.now() + 20_000;
      while ((await prom.query('tilehouse_last_run_timestamp_seconds')).length < 3) {
        if (Date.now() > deadline) throw new Error('Prometheus did not scrape the three runs from the Pushgateway');
        await sleep(250);
      }
      await waitUntil(async () => (await prom.query('kube_job_owner')).length > 0, 'Prometheus did not scrape kube_job_owner', { everyMs: 250 });
    }, 120_000);
    afterAll(async () => {
      await prom?.stop();
      await gateway?.stop();
      await new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve())));
      await rm(path.join(fixture.root, 'data'), { recursive: true, force: true });
    });

    it("offers the runs' jobs as the job variable's values", async () => {
      const dashboard = JSON.parse(await readFile(DASHBOARD, 'utf8')) as Json;
      const variable = (dashboard.templating.list as Json[]).find((candidate) => candidate.name === 'job')!;
      const [, metric, label] = /^label_values\((\w+), (\w+)\)$/.exec(variable.query.query)!;
      const response = await fetch(`${prom.url}/api/v1/label/${label}/values?${new URLSearchParams({ 'match[]': metric! })}`);
      expect(((await response.json()) as { data: string[] }).data.sort()).toEqual(['daily_severity', 'nightly_failing', 'nightly_ok']);
    });

    it('returns data for every query of every panel, with "All" jobs and with each job alone', async () => {
      const dashboard = JSON.parse(await readFile(DASHBOARD, 'utf8')) as Json;
      const empty: string[] = [];
      for (const panel of panelsOf(dashboard).filter((candidate) => candidate.type !== 'row')) {
        for (const target of panel.targets as Json[]) {
          const all = await prom.query(substitute(target.expr, { job: '.+', namespace: 'tilehouse' }));
          if (all.length === 0) empty.push(`${panel.title} [${target.refId}]: ${target.expr}`);
        }
      }
      // A panel whose query returns nothing fails the test: it would be a blank panel on call.
      expect(empty).toEqual([]);
      // The per-job panels, filtered to one job: the scheduled success alone fills its freshness.
      const lastSuccess = panelsOf(dashboard).find((panel) => panel.title === 'Last success')!;
      const ok = await prom.query(substitute(lastSuccess.targets[0].expr, { job: 'nightly_ok' }));
      expect(ok.map((sample) => sample.metric.job)).toEqual(['nightly_ok']);
      const failures = panelsOf(dashboard).find((panel) => panel.title === 'Failures by code')!;
      expect((await prom.query(substitute(failures.targets[0].expr, { job: '.+' }))).map((sample) => [sample.metric.code, sample.value[1]])).toEqual([
        ['export_api_error', '1'],
      ]);
      const staleness = panelsOf(dashboard).find((panel) => panel.title === 'Schedule intervals since the last success')!;
      const [fresh] = await prom.query(substitute(staleness.targets[0].expr, { job: 'nightly_ok' }));
      // Just pushed: a small fraction of the daily interval.
      expect(Number(fresh!.value[1])).toBeLessThan(0.01);
    });
  },
);
