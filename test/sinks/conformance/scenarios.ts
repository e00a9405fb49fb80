// The conformance suite's scenarios (issue 51): the same nights run against every registered sink
// kind on its real backend, as dlt's tests/load/ runs one suite over every destination. A backend
// file (`*.conformance.test.ts`) gives a `ConformanceBackend` per kind and store; this module runs
// the nights and asks every view (`run --json`, `status`, `plan`, `check`, the lineage events)
// what it says of the target, and each must name the run that wrote it.
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { DEMO_TILES, SANDBOX_TILE } from '../../../sandbox/index.js';
import type { CliSeams } from '../../../src/cli/command.js';
import type { SinkConfig } from '../../../src/config/job-schema.js';
import { type CliResult, runCli, sandboxEnv, summaryOf, type Workspace, writeWorkspace } from '../../support/cli-harness.js';
import { fileTransportEnv, type LineageEvent, lineageEventsIn } from '../../support/lineage-events.js';
import { detailQueryAbove } from '../../support/queries.js';
import { sandboxAndRootForAll, sandboxForAll } from '../../support/sandbox-fixture.js';
import type { Sandbox } from '../../../sandbox/index.js';
import { parse, stringify } from 'yaml';
import { METRICS } from '../../../src/metrics/metric-names.js';
import { describeWithPushgateway, samplesOf } from '../../metrics/pushgateway.js';

/** One registered kind on one real backend (a store, a server reached straight or through a pooler). */
export interface ConformanceBackend {
  /** The registered kind (src/sinks/registry.ts). */
  kind: SinkConfig['type'];
  /** How it is named in the suite: `csv on a local directory`. */
  name: string;
  /** The job's sink, written as a user would. */
  sink(): Record<string, unknown>;
  /** Points the workspace's environment at the backend; the variables the CLI needs for it. */
  configure(workspace: Workspace): Promise<Record<string, string>>;
  seams?(): CliSeams;
  /**
   * The columns the target holds as the backend says (read by the test on its own: a CSV's first
   * line, DuckDB's parquet_schema, information_schema), each with its type where the backend has one.
   */
  storedColumns(target: string): Promise<Array<{ name: string; type?: string }>>;
  /**
   * Takes away the run's right to write the target (a revoked grant, a directory's mode) and
   * runs `check` and `plan` as that user; or why the backend cannot show it.
   */
  losePermission: ((workspace: Workspace, env: Record<string, string>) => Promise<{ check: CliResult; plan: CliResult }>) | { cannot: string };
  /**
   * What the target holds, read by the test on its own, as one text that differs when the data
   * does: a file's bytes (their SHA-256), a table's rows in key order.
   */
  contents(target: string): Promise<string>;
}

export const SCHEDULE = { cron: '0 2 * * *', timezone: 'UTC' };
const NIGHTS = {
  first: { at: '2026-11-27T02:00:00.000Z', runId: '20261127T020000Z-c0f001' },
  second: { at: '2026-11-28T02:00:00.000Z', runId: '20261128T020000Z-c0f002' },
  changed: { at: '2026-11-29T02:00:00.000Z', runId: '20261129T020000Z-c0f003' },
  failed: { at: '2026-11-30T02:00:00.000Z', runId: '20261130T020000Z-c0f004' },
  retried: { at: '2026-12-01T02:00:00.000Z', runId: '20261201T020000Z-c0f005' },
  killed: { at: '2026-12-02T02:00:00.000Z', runId: '20261202T020000Z-c0f006' },
} as const;
/** A retry of a run id (a Job's pod retried): ten minutes after its first try. */
const tenMinutesAfter = (night: { at: string }) => new Date(Date.parse(night.at) + 10 * 60_000).toISOString();
const morningAfter = (night: { at: string }) => new Date(Date.parse(night.at) + 5.5 * 3_600_000).toISOString();

const JOB = 'conformance';

/** The job as each night has it: the third night's tile id and filter were edited (an empty export: the publish guard refuses it). */
function jobOf(backend: ConformanceBackend, edited: boolean): Record<string, unknown> {
  return {
    name: JOB,
    tile: edited ? DEMO_TILES.incidentsByMonthSeverity : SANDBOX_TILE,
    schedule: SCHEDULE,
    query: edited ? detailQueryAbove(100_000) : detailQueryAbove(0),
    sinks: [backend.sink()],
  };
}

/** The scenarios, for one backend: each `it` builds on the one before (the nights happen in order). */
export function conformanceScenarios(backend: ConformanceBackend): void {
  describeWithPushgateway(`${backend.kind}: ${backend.name}`, (gateway) => {
    const fixture = sandboxAndRootForAll({ incidents: 130 });
    // The source after its answer changed between two tries of one run id: 145 incidents, not 130.
    const changedSource = sandboxForAll({ incidents: 145 });
    let workspace: Workspace;
    let env: Record<string, string>;
    const seen: Record<string, CliResult> = {};
    /** What the Pushgateway held for the job after each night's run. */
    const metrics: Record<string, { success?: number; rows?: number; guardTripped?: number; errors: Array<{ code: string; value: number }> }> = {};
    const metricsNow = async () => {
      const text = await gateway.scrape();
      const value = (name: string) => samplesOf(text, name).find((sample) => sample.labels.job === JOB)?.value;
      return {
        success: value(METRICS.lastRunSuccess),
        rows: value(METRICS.rows),
        guardTripped: value(METRICS.guardTripped),
        errors: samplesOf(text, METRICS.lastRunError)
          .filter((sample) => sample.labels.job === JOB)
          .map((sample) => ({ code: sample.labels.code ?? '', value: sample.value })),
      };
    };

    const cli = (now: string, args: string[], lineageDir?: string) =>
      runCli([...args, '--config', workspace.configFile, '--jobs', workspace.jobsDir], {
        env: { ...sandboxEnv(fixture.sandbox), ...env, ...(lineageDir === undefined ? {} : fileTransportEnv(lineageDir)) },
        seams: { now: () => new Date(now), ...backend.seams?.() },
      });

    /** The workspace as a night has it, its source `sandbox`; the variables the CLI needs for it. */
    const workspaceOn = async (sandbox: Sandbox, edited: boolean) => {
      workspace = await writeWorkspace(fixture.root, sandbox, [jobOf(backend, edited)]);
      env = await backend.configure(workspace);
      const environment = parse(await readFile(workspace.configFile, 'utf8')) as Record<string, unknown>;
      await writeFile(workspace.configFile, stringify({ ...environment, metrics: { pushgatewayUrl: gateway.url } }));
    };

    /** One try of a run id at `now` against `sandbox`: the run's result, its summary's one tile. */
    const tryRun = async (sandbox: Sandbox, runId: string, now: string) => {
      await workspaceOn(sandbox, false);
      const result = await runCli(['run', '--run-id', runId, '--json', '--config', workspace.configFile, '--jobs', workspace.jobsDir], {
        env: { ...sandboxEnv(sandbox), ...env },
        seams: { now: () => new Date(now), ...backend.seams?.() },
      });
      return { result, tile: result.exitCode === 0 || result.exitCode === 1 ? summaryOf(result.stdout, 'run').tiles[0] : undefined };
    };

    const night = async (name: keyof typeof NIGHTS, edited: boolean) => {
      await workspaceOn(fixture.sandbox, edited);
      const lineageDir = path.join(fixture.root, 'lineage', name);
      await mkdir(lineageDir, { recursive: true });
      seen[name] = await cli(NIGHTS[name].at, ['run', '--run-id', NIGHTS[name].runId, '--json'], lineageDir);
      metrics[name] = await metricsNow();
      const morning = morningAfter(NIGHTS[name]);
      seen[`${name}:status`] = await cli(morning, ['status', '--json']);
      seen[`${name}:status-text`] = await cli(morning, ['status', '--job', JOB]);
      seen[`${name}:plan`] = await cli(morning, ['plan', '--json']);
      seen[`${name}:plan-text`] = await cli(morning, ['plan']);
      seen[`${name}:check`] = await cli(morning, ['check']);
      return lineageEventsIn(lineageDir);
    };

    const statusTarget = (name: string) => {
      const statuses = JSON.parse(seen[`${name}:status`]!.stdout) as Array<{ targets: Array<Record<string, unknown>> }>;
      expect(statuses).toHaveLength(1);
      // Every registered kind has a line: an empty list is the finding of issue 51 (PostgreSQL had none).
      expect(statuses[0]!.targets).toHaveLength(1);
      return statuses[0]!.targets[0]! as { target: string; state: string; runId?: string; rows?: number; late?: unknown; changedSince?: unknown };
    };
    const planSink = (name: string) => {
      const plans = JSON.parse(seen[`${name}:plan`]!.stdout) as Array<{ status: string; sinks: Array<Record<string, unknown>> }>;
      expect(plans[0]!.status).toBe('planned');
      return plans[0]!.sinks[0]! as {
        target: string;
        action: string;
        access?: { verdict: string; code?: string };
        guard?: { verdict: string; reason: string };
      };
    };

    let target = '';
    let secondEvents: LineageEvent[] = [];

    beforeAll(async () => {
      await night('first', false);
      secondEvents = await night('second', false);
    }, 120_000);

    it('two nights: the run summary, status, plan, check and lineage agree on the target and name the second night as its writer', () => {
      expect(seen.first!.exitCode, seen.first!.stderr).toBe(0);
      expect(seen.second!.exitCode, seen.second!.stderr).toBe(0);
      const summary = summaryOf(seen.second!.stdout, 'run');
      const output = summary.tiles[0]!.outputs[0]!;
      target = output.target;
      expect(output.rows).toBe(130);
      expect(summary.tiles[0]!.runId).toBe(NIGHTS.second.runId);

      const status = statusTarget('second');
      expect(status).toMatchObject({ target, state: 'written', runId: NIGHTS.second.runId, rows: 130 });
      expect(status.late).toBeUndefined();
      expect(seen['second:status']!.exitCode).toBe(0);
      expect(seen['second:status-text']!.exitCode).toBe(0);
      expect(seen['second:status-text']!.stdout).toContain(`  ${backend.kind} ${target}: run ${NIGHTS.second.runId} of 2026-11-28 02:00:00 UTC, 130 rows (`);

      const plan = planSink('second');
      expect(plan).toMatchObject({ target, action: 'unchanged', access: { verdict: 'checked' }, guard: { verdict: 'pass' } });
      expect(seen['second:plan']!.exitCode).toBe(0);
      expect(seen['second:check']!.exitCode, seen['second:check']!.stdout + seen['second:check']!.stderr).toBe(0);

      const complete = secondEvents.find((event) => event.eventType === 'COMPLETE')!;
      expect(complete.run.facets.tilehouse).toMatchObject({ runId: NIGHTS.second.runId, status: 'succeeded', rows: 130 });
      expect(complete.outputs).toHaveLength(1);
      expect(complete.outputs[0]!.outputFacets?.outputStatistics).toMatchObject({ rowCount: 130 });

      // The metrics of the job's latest run say what the summary says.
      expect(metrics.second).toMatchObject({ success: 1, rows: summary.tiles[0]!.rows, guardTripped: 0 });
      expect(metrics.second!.errors).toEqual([{ code: '', value: 0 }]);
    });

    it("lineage's schema facet and column lineage name the columns as the target stores them", async () => {
      const stored = await backend.storedColumns(target);
      const output = secondEvents.find((event) => event.eventType === 'COMPLETE')!.outputs[0]!;
      const fields = (output.facets?.schema as { fields: Array<{ name: string; type: string }> }).fields;
      expect(fields.map((field) => field.name)).toEqual(stored.map((column) => column.name));
      for (const [index, column] of stored.entries()) if (column.type !== undefined) expect(fields[index]!.type).toBe(column.type);
      const lineage = (output.facets?.columnLineage as { fields: Record<string, unknown> }).fields;
      for (const name of Object.keys(lineage)) expect(stored.map((column) => column.name)).toContain(name);
    });

    it("a changed tile id and filter: the guard refuses, and the refusal, status, plan and check say what changed since the second night's run", async () => {
      const events = await night('changed', true);
      const result = seen.changed!;
      expect(result.exitCode).toBe(1);
      // The refusal leads with the edit, old → new, from the run history's record of the second night.
      expect(result.stderr).toContain(
        `the job changed since run ${NIGHTS.second.runId}: tile: "${SANDBOX_TILE}" → "${DEMO_TILES.incidentsByMonthSeverity}"; filters on Number: `,
      );

      const status = statusTarget('changed');
      expect(status).toMatchObject({ target, state: 'written', runId: NIGHTS.second.runId });
      expect(status.late).toBeDefined();
      expect(status.changedSince).toEqual([{ part: 'tile' }, { part: 'query', details: ['filters on Number'] }]);
      expect(seen['changed:status']!.exitCode).toBe(1);
      expect(seen['changed:status-text']!.exitCode).toBe(1);
      // Said once, by the block of the run that wrote the target (old → new), not by a target line too.
      const text = seen['changed:status-text']!.stdout;
      expect(text).toContain(
        `  changed since run ${NIGHTS.second.runId} (old → new):\n    tile: "${SANDBOX_TILE}" → "${DEMO_TILES.incidentsByMonthSeverity}"\n    filters on Number: `,
      );
      expect(text).not.toMatch(/^ {4}the job's \w+ changed since run/m);

      expect(planSink('changed').guard?.verdict).toBe('trip');
      expect(seen['changed:plan']!.exitCode).toBe(1);
      expect(seen['changed:plan-text']!.stdout).toContain(`the publish guard refuses it at ${target}`);
      expect(seen['changed:check']!.exitCode).toBe(1);
      expect(seen['changed:check']!.stdout).toMatch(/^REFUSED job conformance: /);

      const fail = events.find((event) => event.eventType === 'FAIL')!;
      expect(fail.run.facets.tilehouse).toMatchObject({ runId: NIGHTS.changed.runId, status: 'failed', errorCode: 'publish_guard_tripped' });
      // The refused target, opened and not published: named with the source the COMPLETE gave it, nothing else.
      const completed = secondEvents.find((event) => event.eventType === 'COMPLETE')!.outputs[0]!;
      expect(fail.outputs).toEqual([{ namespace: completed.namespace, name: completed.name, facets: { dataSource: completed.facets!.dataSource } }]);
      expect(metrics.changed).toMatchObject({ success: 0, guardTripped: 1 });
      expect(metrics.changed!.errors).toEqual([{ code: 'publish_guard_tripped', value: 1 }]);
    });

    it('a failed night: the target still names the second night, status says LATE and exits 1, as for every kind', async () => {
      fixture.sandbox.inject({ kind: 'server-error', endpoint: 'export', status: 500, times: Number.POSITIVE_INFINITY });
      let code: string | undefined;
      try {
        const events = await night('failed', false);
        expect(seen.failed!.exitCode).toBe(1);
        code = summaryOf(seen.failed!.stdout, 'run').tiles[0]!.error!.code;
        expect(metrics.failed).toMatchObject({ success: 0, guardTripped: 0 });
        expect(metrics.failed!.errors).toEqual([{ code, value: 1 }]);
        const fail = events.find((event) => event.eventType === 'FAIL');
        expect(fail?.run.facets.tilehouse).toMatchObject({ runId: NIGHTS.failed.runId, status: 'failed' });
        // Page 0 failed, so no writer opened: the FAIL still names the target, exactly as the second
        // night's COMPLETE named it (namespace, name and source: Marquez keeps the source of the
        // first event that names a dataset), with no other facet (docs/lineage.md's rule).
        const completed = secondEvents.find((event) => event.eventType === 'COMPLETE')!.outputs[0]!;
        expect(summaryOf(seen.failed!.stdout, 'run').tiles[0]!.attempted ?? []).toEqual([]);
        expect(completed.facets?.dataSource).toMatchObject({ name: completed.namespace });
        expect(fail?.outputs).toEqual([{ namespace: completed.namespace, name: completed.name, facets: { dataSource: completed.facets!.dataSource } }]);
      } finally {
        fixture.sandbox.clearFaults();
      }
      const status = statusTarget('failed');
      expect(status).toMatchObject({ target, state: 'written', runId: NIGHTS.second.runId });
      // The run history names the run due that failed (src/workspace/morning-status.ts).
      expect(status.late).toEqual({ due: NIGHTS.failed.at, notPublishedBy: { runId: NIGHTS.failed.runId, verdict: 'failed', code } });
      expect(seen['failed:status']!.exitCode).toBe(1);
      expect(seen['failed:status-text']!.exitCode).toBe(1);
      expect(seen['failed:status-text']!.stdout).toContain(`NOT PUBLISHED: the run due 2026-11-30 02:00:00 UTC, run ${NIGHTS.failed.runId}, FAILED ${code}`);
      // After a night that did not end well, status looks where every kind writes (Sink.leftovers):
      // each kind could look on its backend, and page 0 failed before any writer opened, so nothing is there.
      expect(seen['failed:status-text']!.stdout).not.toContain('left behind:');
    });

    it("a retry with the same run id after the source's answer changed: the target keeps the first try's answer, and the run says adopted, nothing committed", async () => {
      const first = await tryRun(fixture.sandbox, NIGHTS.retried.runId, NIGHTS.retried.at);
      expect(first.result.exitCode, first.result.stderr).toBe(0);
      // The target of every night (read here too, so the test runs alone under -t).
      const target = first.tile!.outputs[0]!.target;
      expect(first.tile!.outputs[0]).toMatchObject({ rows: 130 });
      expect(first.tile!.outputs[0]!.adopted).toBeUndefined();
      const held = await backend.contents(target);

      const retry = await tryRun(changedSource.sandbox, NIGHTS.retried.runId, tenMinutesAfter(NIGHTS.retried));
      expect(retry.result.exitCode, retry.result.stderr).toBe(0);
      expect(retry.tile).toMatchObject({ status: 'succeeded', rows: 145 });
      expect(retry.tile!.outputs).toEqual([
        expect.objectContaining({
          sink: backend.kind,
          target,
          rows: 130,
          adopted: true,
          keptEarlierPublish: true,
          details: expect.objectContaining({ adopted: true }),
        }),
      ]);
      expect(await backend.contents(target)).toBe(held);
      expect(retry.result.stderr).toContain(`ok   conformance (`);
      expect(retry.result.stderr).toContain(`): 145 rows read, 3 pages → ${target} (adopted: nothing committed, 130 rows of the earlier publish)\n`);
      expect(retry.result.stderr).toContain(`warning: ${target}: run id ${NIGHTS.retried.runId} was already published there`);
    });

    it('a first try killed after its publish (its run history record still "running", naming no target): the retry adopts what it published', async () => {
      const first = await tryRun(fixture.sandbox, NIGHTS.killed.runId, NIGHTS.killed.at);
      expect(first.result.exitCode, first.result.stderr).toBe(0);
      const target = first.tile!.outputs[0]!.target;
      const held = await backend.contents(target);
      // What SIGKILL right after the publish leaves in the history: the record written at the try's
      // start, "running", no target, its process gone (this process's pid with another start time).
      const folder = path.join(fixture.root, '.tilehouse', 'history', JOB);
      const name = (await readdir(folder)).find((candidate) => candidate.includes(NIGHTS.killed.runId))!;
      const record = JSON.parse(await readFile(path.join(folder, name), 'utf8')) as Record<string, unknown>;
      const owner = String(record.owner).replace(/\+[^+]+$/, '+gone0');
      const { finishedAt: _finished, durationMs: _duration, rows: _rows, pages: _pages, timings: _timings, lineage: _lineage, ...started } = record;
      await writeFile(path.join(folder, name), JSON.stringify({ ...started, state: 'running', owner, heartbeatAt: record.startedAt, targets: [] }));

      const retry = await tryRun(changedSource.sandbox, NIGHTS.killed.runId, tenMinutesAfter(NIGHTS.killed));
      expect(retry.result.exitCode, retry.result.stderr).toBe(0);
      expect(retry.tile!.outputs).toEqual([expect.objectContaining({ target, rows: 130, adopted: true, keptEarlierPublish: true })]);
      expect(await backend.contents(target)).toBe(held);
    });

    const lose = backend.losePermission;
    if (typeof lose === 'function') {
      it('a lost permission: check and plan both refuse with permission_denied and exit 1', async () => {
        const { check, plan } = await lose(workspace, { ...sandboxEnv(fixture.sandbox), ...env });
        expect(check.exitCode, check.stdout + check.stderr).toBe(1);
        expect(check.stdout + check.stderr).toContain('permission_denied');
        expect(plan.exitCode, plan.stdout + plan.stderr).toBe(1);
        expect(plan.stdout).toContain(`REFUSED: a run now would fail at ${target}: permission_denied: `);
      });
    } else {
      // The fake cannot show it: said here, so the matrix in the note names it (not a skip: nothing is left out silently).
      it(`a lost permission: not shown on this backend (${lose.cannot})`, () => {
        expect(lose.cannot).not.toBe('');
      });
    }
  });
}
