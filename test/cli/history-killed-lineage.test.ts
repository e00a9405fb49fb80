// A killed run told whole (issue 63): a run SIGKILLed mid-read leaves a "running" record, an open
// OpenLineage run and a temp file beside its CSV target. `status` says KILLED, gives a trace id only
// when a span of the run reached the collector, names the lineage run it left open, and lists what
// it left with how each goes; the next run closes the lineage run with a FAIL of its own (once: the
// run after that sends none) and sweeps the temp file, and `status` then lists nothing left.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, sandboxEnv, summaryOf } from '../support/cli-harness.js';
import { exitWithin, spawnCli } from '../support/child-process.js';
import { fileTransportEnv, lineageEventsIn, type LineageEvent } from '../support/lineage-events.js';
import { otlpReceiverForAll } from '../support/otlp-receiver.js';
import { dailyCsvBackfillJob, detailCsvJob } from '../support/queries.js';
import { sandboxWorkspaceForAll, type SandboxWorkspace } from '../support/sandbox-fixture.js';
import { waitUntil } from '../support/wait-until.js';

const JOB = 'incident_detail';
// Page 5 is held until the kill: a request timeout longer than any wait here keeps the run reading, not retrying to its end.
const SOURCE = { itemsPerPage: 20, concurrency: 1, requestTimeoutMs: 120_000 };

type RecordJson = Record<string, unknown> & {
  runId: string;
  startedAt: string;
  traceId?: string;
  spansExportedAt?: string | null;
  lineage?: { namespace: string; job: string; runIds: string[] };
  lineageClosed?: unknown;
};

function historyOf(fixture: SandboxWorkspace) {
  const dir = path.join(fixture.workspace.root, '.tilehouse', 'history', JOB);
  return {
    dir,
    async records(): Promise<Array<{ name: string; record: RecordJson }>> {
      const names = (await readdir(dir).catch(() => [] as string[])).filter((name) => name.endsWith('.json')).sort();
      return Promise.all(names.map(async (name) => ({ name, record: JSON.parse(await readFile(path.join(dir, name), 'utf8')) as RecordJson })));
    },
  };
}

/**
 * Starts `tilehouse run` in a child, holds the source on page 5, waits until `ready` says so, and
 * kills it with SIGKILL: a pod killed mid-read. Returns the killed run's record and its pid.
 */
async function killMidRead(fixture: SandboxWorkspace, env: Record<string, string>, ready: (record: RecordJson) => boolean | Promise<boolean>) {
  const history = historyOf(fixture);
  fixture.sandbox.inject({ kind: 'delay', endpoint: 'export', pageNumber: 5, delayMs: 120_000, times: Number.POSITIVE_INFINITY });
  const child = spawnCli(['run', '--config', fixture.workspace.configFile, '--jobs', fixture.workspace.jobsDir], {
    env: { ...process.env, ...env, CI: '' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = exitWithin(child, 90_000);
  const running = async () => (await history.records()).map((entry) => entry.record).find((record) => record.state === 'running');
  await waitUntil(
    async () => {
      const record = await running();
      return fixture.sandbox.requests.filter((request) => request.endpoint === 'export').length >= 5 && record !== undefined && (await ready(record));
    },
    `the run's "running" record, ready, and its fifth page request (stderr: ${stderr})`,
    { gaveUp: () => child.exitCode !== null, withinMs: 60_000 },
  );
  const record = (await running())!;
  child.kill('SIGKILL');
  expect((await exited).signal).toBe('SIGKILL');
  fixture.sandbox.clearFaults();
  return { record, pid: child.pid! };
}

const closingFails = (events: readonly LineageEvent[], runId: string) => events.filter((event) => event.eventType === 'FAIL' && event.run.runId === runId);

describe('a run killed before any span of it was exported', () => {
  const fixture = sandboxWorkspaceForAll({ incidents: 600 }, [detailCsvJob], SOURCE);

  it('status says KILLED without a trace id, names its open lineage run, its record and temp file; the next run closes the lineage run with FAIL, once', async () => {
    const { workspace } = fixture;
    const lineageDir = workspace.root;
    const env = { ...sandboxEnv(fixture.sandbox), ...fileTransportEnv(lineageDir) };
    // Nothing listens on port 9: no export is ever accepted, so no span of the run reaches a collector.
    const traced = { ...env, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', OTEL_EXPORTER_OTLP_TIMEOUT: '1000' };
    const tempFiles = async () => (await readdir(workspace.outDir).catch(() => [] as string[])).filter((name) => name.endsWith('.tmp'));
    const { record: killed, pid } = await killMidRead(
      fixture,
      traced,
      async (record) => (record.lineage?.runIds.length ?? 0) === 1 && (await tempFiles()).length === 1,
    );
    expect(killed.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(killed.spansExportedAt).toBeNull();
    const lineageRunId = killed.lineage!.runIds[0]!;
    const [tempFile] = await tempFiles();
    const [recordName] = (await historyOf(fixture).records()).map((entry) => entry.name);

    // Before the next run: the lineage file holds the killed try's START, and nothing closes it.
    const started = await lineageEventsIn(lineageDir);
    expect(started.map((event) => [event.eventType, event.run.runId])).toEqual([['START', lineageRunId]]);

    const flags = ['--config', workspace.configFile, '--jobs', workspace.jobsDir];
    const status = await runCli(['status', ...flags], { env: sandboxEnv(fixture.sandbox) });
    expect(status.exitCode).toBe(1);
    const lines = status.stdout.split('\n');
    expect(lines[1]).toMatch(
      new RegExp(
        `^ {2}last run: KILLED, run ${killed.runId} of \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d UTC \\(lineage tilehouse ${JOB} run ${lineageRunId}\\)$`,
      ),
    );
    expect(lines[2]).toMatch(new RegExp(`^ {4}still "running" in the history, but its process \\(pid ${pid} on .+\\) is gone: killed`));
    expect(lines[3]).toBe('    no trace: it was killed before the collector accepted a span of it');
    expect(status.stdout).not.toContain(killed.traceId!);
    const block = lines.slice(
      lines.indexOf('  left behind:'),
      lines.findIndex((line) => line.startsWith('  repair: ')),
    );
    expect(block).toEqual([
      '  left behind:',
      `    its record ${path.join(historyOf(fixture).dir, recordName!)}, still "running"`,
      "      goes: kept as the history's account of the kill; it goes with the job's oldest records once history.keepPerJob (100) newer ones are kept",
      `    OpenLineage run ${lineageRunId} of tilehouse ${JOB}, open (its START has no end: a catalog shows it running)`,
      '      goes: the next run of the job with lineage on closes it with a FAIL of its own',
      `    temp file ${path.join(workspace.outDir, tempFile!)}`,
      "      goes: its run's process is gone: the next run's sweep removes it",
    ]);
    const [json] = JSON.parse((await runCli(['status', ...flags, '--json'], { env: sandboxEnv(fixture.sandbox) })).stdout) as Array<{
      lastRun: Record<string, unknown>;
      leftBehind: { items: unknown[] };
    }>;
    expect(json!.lastRun).toMatchObject({ verdict: 'killed', noSpansExported: true, lineage: { runIds: [lineageRunId] } });
    expect(json!.lastRun.traceId).toBeUndefined();
    expect(json!.leftBehind.items).toHaveLength(3);

    // The next run, lineage on: the killed try's run is closed with a FAIL of its own, the temp file swept.
    const next = await runCli(['run', ...flags, '--json'], { env });
    expect(next.exitCode, next.stderr).toBe(0);
    const nextRunId = summaryOf(next.stdout, 'run').runId;
    const afterNext = await lineageEventsIn(lineageDir);
    const [fail] = closingFails(afterNext, lineageRunId);
    expect(closingFails(afterNext, lineageRunId)).toHaveLength(1);
    expect(fail!.job).toMatchObject({ namespace: 'tilehouse', name: JOB });
    expect(fail!.run.facets.tilehouse).toMatchObject({ runId: killed.runId, status: 'killed', closedBy: nextRunId });
    expect(fail!.run.facets.errorMessage!.message).toBe(
      `killed: still "running" in the run history, but its process (pid ${pid} on ${String(lines[2]).match(/ on (.+)\) is gone/)![1]}) is gone; closed by tilehouse run ${nextRunId} of the job`,
    );
    expect(fail!.inputs.map((input) => input.name)).toEqual([detailCsvJob.tile]);
    expect(fail!.outputs).toEqual([]);
    expect(afterNext.filter((event) => event.eventType === 'COMPLETE').map((event) => event.run.facets.tilehouse!.runId)).toEqual([nextRunId]);
    expect(await tempFiles()).toEqual([]);
    const closed = (await historyOf(fixture).records()).find((entry) => entry.name === recordName)!.record;
    expect(closed).toMatchObject({ state: 'running', lineageClosed: { eventType: 'FAIL', byRunId: nextRunId, runIds: [lineageRunId] } });

    const after = await runCli(['status', ...flags], { env: sandboxEnv(fixture.sandbox) });
    expect(after.stdout.split('\n')[1]).toMatch(new RegExp(`^ {2}last run: OK, run ${nextRunId} `));
    expect(after.stdout).not.toContain('left behind');
    expect(after.exitCode).toBe(0);

    // A run after that sends no second FAIL: the record says its lineage was closed.
    const third = await runCli(['run', ...flags], { env });
    expect(third.exitCode, third.stderr).toBe(0);
    expect(closingFails(await lineageEventsIn(lineageDir), lineageRunId)).toHaveLength(1);
  }, 150_000);
});

describe('a run killed after a span of it was exported', () => {
  const fixture = sandboxWorkspaceForAll({ incidents: 600 }, [detailCsvJob], SOURCE);
  const collector = otlpReceiverForAll();

  it('status gives its trace id: the record says a span of it reached the collector', async () => {
    const env = { ...sandboxEnv(fixture.sandbox), OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint };
    // The spans of the token and of pages 0-4 leave in the first batch (5 s); the record notes it at once.
    const { record } = await killMidRead(fixture, env, (running) => typeof running.spansExportedAt === 'string');
    // OTLP/JSON writes a trace id in hex, OTLP/protobuf as its 16 bytes.
    const traces = collector.traces();
    expect(traces.includes(record.traceId!) || traces.includes(Buffer.from(record.traceId!, 'hex').toString('latin1'))).toBe(true);
    const status = await runCli(['status', '--config', fixture.workspace.configFile, '--jobs', fixture.workspace.jobsDir], {
      env: sandboxEnv(fixture.sandbox),
    });
    const lines = status.stdout.split('\n');
    expect(lines[1]).toMatch(new RegExp(`^ {2}last run: KILLED, run ${record.runId} of .+ UTC \\(trace ${record.traceId}\\)$`));
    expect(lines[3]).not.toContain('no trace');
  }, 120_000);
});

describe('a backfill killed mid-window', () => {
  const fixture = sandboxWorkspaceForAll({ incidents: 600 }, [dailyCsvBackfillJob], SOURCE);

  it('status lists its record and open lineage run beside `last backfill: KILLED`; the next run of the job closes the run with FAIL', async () => {
    const { workspace } = fixture;
    const env = { ...sandboxEnv(fixture.sandbox), ...fileTransportEnv(workspace.root) };
    const flags = ['--config', workspace.configFile, '--jobs', workspace.jobsDir];
    const day = new Date(Date.now() - 2 * 86_400_000).toISOString().slice(0, 10);
    const next = new Date(Date.parse(day) + 86_400_000).toISOString().slice(0, 10);
    const dir = path.join(workspace.root, '.tilehouse', 'history', dailyCsvBackfillJob.name);
    const running = async () => {
      const names = (await readdir(dir).catch(() => [] as string[])).filter((name) => name.endsWith('.json'));
      const records = await Promise.all(names.map(async (name) => JSON.parse(await readFile(path.join(dir, name), 'utf8')) as RecordJson));
      return records.find((record) => record.state === 'running' && (record.lineage?.runIds.length ?? 0) === 1);
    };
    // Page 0 of the window never comes in time: the backfill has sent its window's START and waits.
    fixture.sandbox.inject({ kind: 'delay', endpoint: 'export', pageNumber: 0, delayMs: 120_000, times: Number.POSITIVE_INFINITY });
    const child = spawnCli(['backfill', ...flags, '--job', dailyCsvBackfillJob.name, '--from', day, '--to', next], {
      env: { ...process.env, ...env, CI: '' },
      stdio: 'ignore',
    });
    const exited = exitWithin(child, 90_000);
    try {
      await waitUntil(async () => (await running()) !== undefined, "the backfill's running record naming its window's lineage run", {
        gaveUp: () => child.exitCode !== null,
        withinMs: 60_000,
      });
    } finally {
      child.kill('SIGKILL');
      await exited;
      fixture.sandbox.clearFaults();
    }
    const killed = (await running())!;
    const lineageRunId = killed.lineage!.runIds[0]!;

    const status = await runCli(['status', ...flags], { env: sandboxEnv(fixture.sandbox) });
    const lines = status.stdout.split('\n');
    expect(lines.find((line) => line.startsWith('  last backfill: '))).toMatch(new RegExp(`^ {2}last backfill: KILLED, run ${killed.runId} of `));
    const block = lines.slice(
      lines.indexOf('  left behind:'),
      lines.findIndex((line) => line.startsWith('  repair: ')),
    );
    expect(block.slice(0, 5)).toEqual([
      '  left behind:',
      expect.stringMatching(new RegExp(`^ {4}its record ${dir}/.+_${killed.runId}\\.json, still "running"$`)),
      expect.stringMatching(/^ {6}goes: kept as the history's account of the kill/),
      `    OpenLineage run ${lineageRunId} of tilehouse ${dailyCsvBackfillJob.name}, open (its START has no end: a catalog shows it running)`,
      '      goes: the next run of the job with lineage on closes it with a FAIL of its own',
    ]);

    const run = await runCli(['run', ...flags, '--json'], { env });
    expect(run.exitCode, run.stderr).toBe(0);
    const [fail, ...more] = closingFails(await lineageEventsIn(workspace.root), lineageRunId);
    expect(more).toEqual([]);
    expect(fail!.run.facets.tilehouse).toMatchObject({ runId: killed.runId, status: 'killed', closedBy: summaryOf(run.stdout, 'run').runId });
  }, 120_000);
});
