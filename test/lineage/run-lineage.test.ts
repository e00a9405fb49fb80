import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { stringify } from 'yaml';
import { afterEach, describe, expect, it } from 'vitest';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { listFiles, refusalCode, runCli, sandboxEnv, summaryOf, writeWorkspace, type Workspace } from '../support/cli-harness.js';
import { refusingUrl, startLineageConsumer, type LineageConsumer } from '../support/lineage-consumer.js';
import { openLineageProblems } from '../support/openlineage-schemas.js';
import { fileTransportEnv, lineageEventsIn, runCycleProblems, sourceProblems, type LineageEvent as Event } from '../support/lineage-events.js';
import { dailySeverityQuery, detailQueryAbove } from '../support/queries.js';
import { sandboxAndRootForAll } from '../support/sandbox-fixture.js';
import { dayFromToday } from '../support/window-oracle.js';
import { waitUntil } from '../support/wait-until.js';

// `tilehouse run` and `backfill` with lineage on, in process against the sandbox, as an operator
// meets it: every event read back from the file transport (or a consumer on loopback) and checked
// against the OpenLineage spec's own schemas; a consumer that fails changes nothing a run leaves.
const INCIDENTS = 120;
// rw windows are relative to the server's "now", which must be the real clock for the backfill.
const fixture = sandboxAndRootForAll({ incidents: INCIDENTS, now: new Date() });

/** Midnight of `date` in Berlin as an instant: UTC midnight less Berlin's offset at noon that day (+01:00 or +02:00). */
function berlinMidnight(date: string): string {
  const noon = new Date(`${date}T12:00:00Z`);
  const offset = new Intl.DateTimeFormat('en', { timeZone: 'Europe/Berlin', timeZoneName: 'shortOffset' })
    .formatToParts(noon)
    .find((part) => part.type === 'timeZoneName');
  const hours = Number(offset?.value.replace('GMT', '') || '0');
  return new Date(Date.parse(`${date}T00:00:00Z`) - hours * 3_600_000).toISOString();
}

let consumer: LineageConsumer | undefined;
afterEach(async () => {
  await consumer?.close();
  consumer = undefined;
});

let workspaces = 0;
async function workspaceOf(jobs: Array<Record<string, unknown>>): Promise<Workspace> {
  workspaces += 1;
  return writeWorkspace(path.join(fixture.root, `ws-${workspaces}`), fixture.sandbox, jobs, { itemsPerPage: 40 });
}

function detailJob(workspace: Pick<Workspace, 'outDir'> | string, above = 0) {
  const outDir = typeof workspace === 'string' ? workspace : workspace.outDir;
  return {
    name: 'incidents',
    tile: SANDBOX_TILE,
    query: detailQueryAbove(above),
    sinks: [
      { type: 'csv', path: path.join(outDir, 'incidents.csv') },
      { type: 'parquet', path: path.join(outDir, 'incidents.parquet') },
    ],
  };
}

function run(workspace: Workspace, env: Record<string, string>, flags: string[] = [], io = {}) {
  return runCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir, ...flags], { env: { ...sandboxEnv(fixture.sandbox), ...env }, io });
}

const fileTransport = (workspace: Workspace) => fileTransportEnv(workspace.root);
const eventsOf = (workspace: Workspace) => lineageEventsIn(workspace.root);

describe('tilehouse run with lineage', () => {
  it('sends START then COMPLETE for a tile, its input the tile and its outputs the CSV and Parquet files, and a retry with the same --run-id is a run of its own', async () => {
    const workspace = await workspaceOf([]);
    await writeFile(path.join(workspace.jobsDir, 'incidents.yaml'), stringify(detailJob(workspace)));
    const first = await run(workspace, fileTransport(workspace), ['--run-id', 'nightly-1']);
    expect(first.exitCode, first.stderr).toBe(0);
    const second = await run(workspace, fileTransport(workspace), ['--run-id', 'nightly-1']);
    expect(second.exitCode).toBe(0);
    const events = await eventsOf(workspace);
    expect(events.map((event) => event.eventType)).toEqual(['START', 'COMPLETE', 'START', 'COMPLETE']);
    const [start, complete, retried, retriedEnd] = events as [Event, Event, Event, Event];
    // COMPLETE is final (the spec's run cycle): the retry's events are another run, tilehouse's run id in both.
    expect(complete.run.runId).toBe(start.run.runId);
    expect(retriedEnd.run.runId).toBe(retried.run.runId);
    expect(retried.run.runId).not.toBe(start.run.runId);
    for (const event of events) expect(event.run.facets.tilehouse).toMatchObject({ runId: 'nightly-1' });
    // docs/lineage.md's rule: START lists no outputs (in Marquez each would be a second, empty version of the run).
    expect(start.outputs).toEqual([]);
    expect(retried.outputs).toEqual([]);
    expect(start.job).toMatchObject({ namespace: 'tilehouse', name: 'incidents' });
    expect(start.inputs.map(({ namespace, name }) => ({ namespace, name }))).toEqual([{ namespace: new URL(fixture.sandbox.url).origin, name: SANDBOX_TILE }]);
    expect(complete.inputs.map(({ namespace, name }) => ({ namespace, name }))).toEqual([
      { namespace: new URL(fixture.sandbox.url).origin, name: SANDBOX_TILE },
    ]);
    expect(complete.outputs.map(({ namespace, name, outputFacets }) => ({ namespace, name, rows: outputFacets?.outputStatistics?.rowCount }))).toEqual([
      { namespace: 'file', name: path.join(workspace.outDir, 'incidents.csv'), rows: INCIDENTS },
      { namespace: 'file', name: path.join(workspace.outDir, 'incidents.parquet'), rows: INCIDENTS },
    ]);
    const csvBytes = (await readFile(path.join(workspace.outDir, 'incidents.csv'))).length;
    expect(complete.outputs[0]?.outputFacets?.outputStatistics).toMatchObject({ size: csvBytes, fileCount: 1 });
    expect(complete.run.facets.tilehouse).toMatchObject({ runId: 'nightly-1', status: 'succeeded', rows: INCIDENTS });
  });

  it("names the orchestrator's run from OPENLINEAGE_PARENT_ID as the parent of START and COMPLETE, and the nominal window as their time", async () => {
    const workspace = await workspaceOf([]);
    await writeFile(path.join(workspace.jobsDir, 'incidents.yaml'), stringify(detailJob(workspace)));
    const parentRunId = '01936f2b-4c5d-7e8f-9a0b-1c2d3e4f5a6b';
    const result = await run(workspace, { ...fileTransport(workspace), OPENLINEAGE_PARENT_ID: `airflow-prod/nightly_export.tilehouse/${parentRunId}` }, [
      '--window-start',
      '2026-11-20T00:00:00Z',
      '--window-end',
      '2026-11-21T00:00:00Z',
    ]);
    expect(result.exitCode, result.stderr).toBe(0);
    const events = await eventsOf(workspace);
    expect(events.map((event) => event.eventType)).toEqual(['START', 'COMPLETE']);
    for (const event of events) {
      expect(event.run.facets.parent).toMatchObject({
        run: { runId: parentRunId },
        job: { namespace: 'airflow-prod', name: 'nightly_export.tilehouse' },
        root: { run: { runId: parentRunId }, job: { namespace: 'airflow-prod', name: 'nightly_export.tilehouse' } },
      });
      expect(event.run.facets.nominalTime).toMatchObject({ nominalStartTime: '2026-11-20T00:00:00.000Z', nominalEndTime: '2026-11-21T00:00:00.000Z' });
    }
  });

  it('refuses settings it cannot use with lineage_config_invalid, exit 2, before any request to the source', async () => {
    const workspace = await workspaceOf([]);
    await writeFile(path.join(workspace.jobsDir, 'incidents.yaml'), stringify(detailJob(workspace)));
    const requests = fixture.sandbox.requests.length;
    const result = await run(workspace, { OPENLINEAGE_URL: 'http://127.0.0.1:9', OPENLINEAGE_PARENT_ID: 'airflow/nightly' });
    expect(result.exitCode).toBe(2);
    expect(refusalCode(result)).toBe('lineage_config_invalid');
    expect(fixture.sandbox.requests.length).toBe(requests);
    expect(await listFiles(workspace.outDir).catch(() => [])).toEqual([]);
  });

  it('refuses a password in OPENLINEAGE_URL in validate and run (exit 2, lineage_config_invalid, OPENLINEAGE_API_KEY named), printing it on no line and sending nothing', async () => {
    const workspace = await workspaceOf([]);
    await writeFile(path.join(workspace.jobsDir, 'incidents.yaml'), stringify(detailJob(workspace)));
    // A consumer that fails every send: before the refusal, its warning printed the URL with the password.
    consumer = await startLineageConsumer({ answer: 'status', status: 503 });
    const password = 'pw-in-the-url-7f3a';
    const url = new URL(consumer.url);
    url.username = 'marquez-writer';
    url.password = password;
    const env = { OPENLINEAGE_URL: url.toString(), OPENLINEAGE__TRANSPORT__TIMEOUT: '1' };
    const validated = await runCli(['validate', '--config', workspace.configFile, '--jobs', workspace.jobsDir], {
      env: { ...sandboxEnv(fixture.sandbox), ...env },
    });
    const ran = await run(workspace, env, ['--json']);
    for (const [command, result] of [
      ['validate', validated],
      ['run', ran],
    ] as const) {
      expect(result.exitCode, command).toBe(2);
      const lines = [...result.stdout.split('\n'), ...result.stderr.split('\n'), ...result.logs.map((line) => JSON.stringify(line))];
      for (const line of lines) expect(line, `${command}: ${line}`).not.toContain(password);
      expect(`${result.stdout}${result.stderr}`, command).toContain('OPENLINEAGE_API_KEY');
      expect(`${result.stdout}${result.stderr}`, command).toContain('lineage: OPENLINEAGE_URL: the URL carries a user or password');
    }
    expect(refusalCode(ran)).toBe('lineage_config_invalid');
    expect(consumer.received).toEqual([]);
  });

  it('sends FAIL with the stable code of a tile that failed', async () => {
    const workspace = await workspaceOf([]);
    await writeFile(path.join(workspace.jobsDir, 'incidents.yaml'), stringify(detailJob(workspace)));
    const result = await runCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir], {
      env: { ...sandboxEnv(fixture.sandbox, 'not-the-secret'), ...fileTransport(workspace) },
    });
    expect(result.exitCode).toBe(1);
    const events = await eventsOf(workspace);
    expect(events.map((event) => event.eventType)).toEqual(['START', 'FAIL']);
    expect(String(events[1]?.run.facets.errorMessage?.message)).toMatch(/^auth_invalid_client: /);
    expect(JSON.stringify(events)).not.toContain('not-the-secret');
    expect(events[1]?.run.facets.tilehouse).toMatchObject({ status: 'failed', errorCode: 'auth_invalid_client' });
  });

  it('sends a failed try and its retry with the same --run-id as two runs, FAIL then COMPLETE, nothing after either', async () => {
    const workspace = await workspaceOf([]);
    await writeFile(path.join(workspace.jobsDir, 'incidents.yaml'), stringify(detailJob(workspace)));
    const failed = await runCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir, '--run-id', 'nightly-2'], {
      env: { ...sandboxEnv(fixture.sandbox, 'not-the-secret'), ...fileTransport(workspace) },
    });
    expect(failed.exitCode).toBe(1);
    const retried = await run(workspace, fileTransport(workspace), ['--run-id', 'nightly-2']);
    expect(retried.exitCode, retried.stderr).toBe(0);
    // eventsOf checks the run cycle of every run id: nothing after a terminal event.
    const events = await eventsOf(workspace);
    expect(events.map((event) => event.eventType)).toEqual(['START', 'FAIL', 'START', 'COMPLETE']);
    const [firstStart, fail, secondStart, complete] = events as [Event, Event, Event, Event];
    expect(fail.run.runId).toBe(firstStart.run.runId);
    expect(complete.run.runId).toBe(secondStart.run.runId);
    expect(complete.run.runId).not.toBe(fail.run.runId);
    // The retry carries no trace of the failed try's error; both name tilehouse's run.
    expect(complete.run.facets.errorMessage).toBeUndefined();
    expect(fail.run.facets.tilehouse).toMatchObject({ runId: 'nightly-2', status: 'failed', errorCode: 'auth_invalid_client' });
    expect(complete.run.facets.tilehouse).toMatchObject({ runId: 'nightly-2', status: 'succeeded', rows: INCIDENTS });
  });

  it("sends FAIL with the guard's verdicts when the publish guard refuses a run that lost its rows", async () => {
    const workspace = await workspaceOf([]);
    const jobFile = path.join(workspace.jobsDir, 'incidents.yaml');
    await writeFile(jobFile, stringify(detailJob(workspace)));
    expect((await run(workspace, {})).exitCode).toBe(0);
    await writeFile(jobFile, stringify(detailJob(workspace, INCIDENTS)));
    const tripped = await run(workspace, fileTransport(workspace), ['--json']);
    expect(tripped.exitCode).toBe(1);
    const [, fail] = await eventsOf(workspace);
    expect(fail?.eventType).toBe('FAIL');
    expect(String(fail?.run.facets.errorMessage?.message)).toMatch(/^publish_guard_tripped: /);
    expect(fail?.run.facets.tilehouse?.guard).toMatchObject({
      tripped: true,
      overridden: false,
      verdicts: [
        { target: path.join(workspace.outDir, 'incidents.csv'), verdict: 'trip', rule: 'empty', held: INCIDENTS, exported: 0, setting: 'guard.allowEmpty' },
        { target: path.join(workspace.outDir, 'incidents.parquet'), verdict: 'trip', rule: 'empty', held: INCIDENTS, exported: 0, setting: 'guard.allowEmpty' },
      ],
    });
    // What changed since the run that wrote the targets (the query's filter), as the summary says it.
    const summary = summaryOf(tripped.stdout, 'run');
    expect(summary.tiles[0]?.guard?.verdicts).toHaveLength(2);
    expect((fail?.run.facets.tilehouse?.guard as { verdicts: unknown }).verdicts).toEqual(summary.tiles[0]?.guard?.verdicts);
    // The targets it meant to write are named with their source, without statistics: nothing was published.
    const file = { dataSource: expect.objectContaining({ name: 'file', uri: 'file:///' }) };
    expect(fail?.outputs).toEqual([
      { namespace: 'file', name: path.join(workspace.outDir, 'incidents.csv'), facets: file },
      { namespace: 'file', name: path.join(workspace.outDir, 'incidents.parquet'), facets: file },
    ]);
  });

  it('sends ABORT for a tile stopped by a signal', async () => {
    const workspace = await workspaceOf([]);
    await writeFile(path.join(workspace.jobsDir, 'incidents.yaml'), stringify(detailJob(workspace)));
    consumer = await startLineageConsumer({ answer: 'ok' });
    fixture.sandbox.inject({ kind: 'delay', endpoint: 'export', pageNumber: 1, delayMs: 5_000 });
    const stop = new AbortController();
    const running = run(workspace, { OPENLINEAGE_URL: consumer.url }, [], { signal: stop.signal });
    await waitUntil(() => consumer!.received.length > 0, 'the START event');
    stop.abort(new Error('stopped by SIGTERM'));
    const result = await running;
    expect(result.exitCode).not.toBe(0);
    const events = consumer.received.map((request) => request.event as unknown as Event);
    expect(events.map((event) => event.eventType)).toEqual(['START', 'ABORT']);
    for (const event of events) expect(openLineageProblems(event)).toEqual([]);
    expect(runCycleProblems(events)).toEqual([]);
    expect(String(events[1]?.run.facets.errorMessage?.message)).toMatch(/^run_stopped: /);
    // The ABORT names both targets it opened, each with its source (Marquez keeps the first one it sees).
    expect(events[1]!.outputs.map(({ namespace, name }) => ({ namespace, name }))).toEqual([
      { namespace: 'file', name: path.join(workspace.outDir, 'incidents.csv') },
      { namespace: 'file', name: path.join(workspace.outDir, 'incidents.parquet') },
    ]);
    expect(events.flatMap(sourceProblems)).toEqual([]);
  });

  describe.each([
    ['refuses connections', async () => refusingUrl()],
    ['answers 503', async () => (consumer = await startLineageConsumer({ answer: 'status', status: 503 })).url],
    ['answers 413', async () => (consumer = await startLineageConsumer({ answer: 'status', status: 413 })).url],
    ['never answers', async () => (consumer = await startLineageConsumer({ answer: 'never' })).url],
  ])('a consumer that %s', (_name, consumerUrl) => {
    it('leaves the exit code and the files as a run without lineage does, with one warning', async () => {
      const plain = await workspaceOf([]);
      await writeFile(path.join(plain.jobsDir, 'incidents.yaml'), stringify(detailJob(plain)));
      const without = await run(plain, {}, ['--run-id', 'same-run']);
      const withLineage = await workspaceOf([]);
      await writeFile(path.join(withLineage.jobsDir, 'incidents.yaml'), stringify(detailJob(withLineage)));
      const url = await consumerUrl();
      const result = await run(withLineage, { OPENLINEAGE_URL: url, OPENLINEAGE__TRANSPORT__TIMEOUT: '1' }, ['--run-id', 'same-run']);
      expect(result.exitCode).toBe(without.exitCode);
      expect(await listFiles(withLineage.outDir)).toEqual(await listFiles(plain.outDir));
      for (const file of await listFiles(plain.outDir)) {
        expect((await readFile(path.join(withLineage.outDir, file))).equals(await readFile(path.join(plain.outDir, file))), file).toBe(true);
      }
      const warnings = result.logs.filter((line) => line.level === 40 && String(line.msg).startsWith('lineage:'));
      expect(warnings).toHaveLength(1);
    });
  });
});

describe('tilehouse backfill with lineage', () => {
  it('sends each day window as a run of its own, its nominal time the window in the job timezone', async () => {
    const job = {
      name: 'daily_severity',
      tile: SANDBOX_TILE,
      timezone: 'Europe/Berlin',
      query: dailySeverityQuery,
      sinks: [{ type: 'csv' }],
      columns: { Day: { type: 'DATE' }, Incidents: { type: 'INT64' } },
      backfill: { item: 'day', bucketColumn: 'Day' },
    };
    const workspace = await workspaceOf([job]);
    const from = dayFromToday(-5);
    const to = dayFromToday(-3);
    const result = await runCli(
      ['backfill', '--config', workspace.configFile, '--jobs', workspace.jobsDir, '--job', 'daily_severity', '--from', from, '--to', to, '--run-id', 'bf-7'],
      {
        env: { ...sandboxEnv(fixture.sandbox), ...fileTransport(workspace) },
      },
    );
    expect(result.exitCode, result.stderr).toBe(0);
    const events = await eventsOf(workspace);
    const completes = events.filter((event) => event.eventType === 'COMPLETE');
    expect(events.filter((event) => event.eventType === 'START')).toHaveLength(2);
    expect(completes.map((event) => event.run.facets.tilehouse?.window)).toEqual([
      { from, to: dayFromToday(-4) },
      { from: dayFromToday(-4), to },
    ]);
    expect(new Set(completes.map((event) => event.run.runId)).size).toBe(2);
    expect(completes[0]?.run.facets.nominalTime).toEqual(
      expect.objectContaining({ nominalStartTime: berlinMidnight(from), nominalEndTime: berlinMidnight(dayFromToday(-4)) }),
    );
    expect(completes.map((event) => event.outputs[0]?.name)).toEqual([
      path.join(workspace.outDir, 'daily_severity', `${from}.csv`),
      path.join(workspace.outDir, 'daily_severity', `${dayFromToday(-4)}.csv`),
    ]);
  });
});

describe('tilehouse schedule with lineage', () => {
  it('sends each tick as a run of its own, each valid, until the worker stops', async () => {
    const workspace = await workspaceOf([]);
    const job = { ...detailJob(workspace), schedule: { cron: '* * * * * *', timezone: 'UTC' } };
    await writeFile(path.join(workspace.jobsDir, 'incidents.yaml'), stringify(job));
    const stop = new AbortController();
    const completes = async () =>
      (await readFile(path.join(workspace.root, 'lineage.jsonl'), 'utf8').catch(() => '')).split('"eventType":"COMPLETE"').length - 1;
    const running = runCli(['schedule', '--config', workspace.configFile, '--jobs', workspace.jobsDir, '--grace-seconds', '5'], {
      env: { ...sandboxEnv(fixture.sandbox), ...fileTransport(workspace) },
      io: { signal: stop.signal },
    });
    await waitUntil(async () => (await completes()) >= 2, 'two COMPLETE events', { everyMs: 50 });
    stop.abort(new Error('stopped by SIGTERM'));
    expect((await running).exitCode).toBe(0);
    const events = await eventsOf(workspace);
    const ticks = events.filter((event) => event.eventType === 'COMPLETE');
    expect(ticks.length).toBeGreaterThanOrEqual(2);
    expect(new Set(ticks.map((event) => event.run.runId)).size).toBe(ticks.length);
    for (const tick of ticks)
      expect(events.filter((event) => event.run.runId === tick.run.runId).map((event) => event.eventType)).toEqual(['START', 'COMPLETE']);
  }, 30_000);
});
