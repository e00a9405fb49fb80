import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile, stat } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { type Sandbox } from '../../sandbox/index.js';
import { listFiles, runCli, sandboxEnv, writeWorkspace, type Workspace, summaryOf } from '../support/cli-harness.js';
import { readCsv } from '../support/csv-read.js';
import { dailyManifestJob } from '../support/queries.js';
import { CLI } from '../support/spawn-cli.js';
import { dailySourceRows as sourceRows } from '../support/day-sandboxes.js';
import { sandboxesEachTest } from '../support/sandbox-fixture.js';

// A daily job on the sandbox, whose clock is moved from run to run (a sandbox per "day", started
// with its own now): the "cluster" runs on day 1, is down on days 2-4, and runs again on day 5.
const at = (day: string) => new Date(`${day}T12:00:00Z`);
const job = (incremental: Record<string, unknown>) => dailyManifestJob({ startFrom: '2026-07-01', ...incremental });

const each = sandboxesEachTest();

const sandboxAt = (day: string) => each.sandbox({ incidents: 10_000, now: at(day) });

/** Points the workspace at `sandbox` (same jobs, same output directory) and runs the job once. */
async function runOn(root: string, sandbox: Sandbox, jobs: Array<Record<string, unknown>>) {
  const workspace = await writeWorkspace(root, sandbox, jobs);
  const result = await runCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir, '--json'], { env: sandboxEnv(sandbox) });
  const summary = summaryOf(result.stdout, 'run');
  return { ...result, summary, workspace };
}

async function manifestWindow(workspace: Workspace, day: string): Promise<{ from: string; to: string; open: boolean }> {
  return (
    JSON.parse(await readFile(path.join(workspace.outDir, 'daily', `${day}.csv.manifest.json`), 'utf8')) as {
      window: { from: string; to: string; open: boolean };
    }
  ).window;
}

async function dayRows(workspace: Workspace, day: string): Promise<string[][]> {
  return (await readCsv(path.join(workspace.outDir, 'daily', `${day}.csv`))).rows as string[][];
}

const exports = (sandbox: Sandbox) => sandbox.requests.filter((request) => request.endpoint === 'export').length;

describe('an incremental run catches up the days the cluster missed', () => {
  it('exports day 1 on day 1, days 1-5 on day 5 (day 1 was open when exported), and only the still open day 5 on a repeat of day 5', async () => {
    const root = await each.tempDir();
    const jobs = [job({})];

    const day1 = await sandboxAt('2026-07-01');
    const first = await runOn(root, day1, jobs);
    expect(first.exitCode).toBe(0);
    expect(first.summary.incremental).toEqual([
      expect.objectContaining({ job: 'daily', today: '2026-07-01', firstRun: true, windows: [{ from: '2026-07-01', to: '2026-07-02' }], failed: [], left: [] }),
    ]);
    const { workspace } = first;
    expect(await listFiles(workspace.outDir)).toEqual(['daily/2026-07-01.csv', 'daily/2026-07-01.csv.manifest.json']);
    expect(await dayRows(workspace, '2026-07-01')).toEqual(sourceRows(day1, '2026-07-01', '2026-07-02'));
    // Exported at noon of day 1 on the source's clock: open, so not held.
    expect(await manifestWindow(workspace, '2026-07-01')).toEqual({ from: '2026-07-01', to: '2026-07-02', open: true });
    expect(first.summary.incremental![0]!.open).toEqual([{ from: '2026-07-01', to: '2026-07-02' }]);

    const day5 = await sandboxAt('2026-07-05');
    const fifth = await runOn(root, day5, jobs);
    expect(fifth.exitCode).toBe(0);
    const days = ['2026-07-01', '2026-07-02', '2026-07-03', '2026-07-04', '2026-07-05'];
    expect(fifth.summary.incremental![0]!.windows.map((window) => window.from)).toEqual(days);
    expect(fifth.summary.incremental![0]!.reason).toContain('2026-07-01 published while open: exported again');
    expect(fifth.summary.tiles.map((tile) => tile.runId)).toEqual(days.map((day) => `${fifth.summary.runId}-${day.replaceAll('-', '')}`));
    // Each day's rows once, as the source holds them; only today's is open.
    const written: string[][] = [];
    for (const day of days) written.push(...(await dayRows(workspace, day)));
    const expected = sourceRows(day5, '2026-07-01', '2026-07-06');
    expect(new Set(expected.map((row) => row[0]))).toEqual(new Set(days));
    expect(written).toEqual(expected);
    expect(await Promise.all(days.map(async (day) => (await manifestWindow(workspace, day)).open))).toEqual([false, false, false, false, true]);

    const closed = days.slice(0, 4);
    const before = await Promise.all(closed.map(async (day) => (await stat(path.join(workspace.outDir, 'daily', `${day}.csv`))).mtimeMs));
    const requests = exports(day5);
    const repeat = await runOn(root, day5, jobs);
    expect(repeat.exitCode).toBe(0);
    expect(repeat.summary.incremental![0]).toMatchObject({ windows: [{ from: '2026-07-05', to: '2026-07-06' }], left: [], firstUnpublished: '2026-07-05' });
    expect(repeat.stderr).toContain('2026-07-05 published while open: exported again');
    expect(exports(day5)).toBe(requests + 1);
    expect(await Promise.all(closed.map(async (day) => (await stat(path.join(workspace.outDir, 'daily', `${day}.csv`))).mtimeMs))).toEqual(before);
  });
});

describe('an incremental run killed in the middle of a catch-up', () => {
  it('is resumed by the next run at the first unpublished day: none published twice, none skipped', async () => {
    const root = await each.tempDir();
    // Ten days to catch up, each export slowed so that the kill lands between two days.
    const sandbox = await each.sandbox({ incidents: 10_000, now: at('2026-07-10'), latencyMs: 300 });
    const workspace = await writeWorkspace(root, sandbox, [job({})]);
    const days = Array.from({ length: 10 }, (_, index) => `2026-07-${String(index + 1).padStart(2, '0')}`);
    const manifests = async () => (await listFiles(path.join(workspace.outDir, 'daily'))).filter((name) => name.endsWith('.manifest.json'));

    const child = spawn(process.execPath, ['--import', 'tsx', CLI, 'run', '--config', workspace.configFile, '--jobs', workspace.jobsDir], {
      env: { ...process.env, CI: '', ...sandboxEnv(sandbox) },
      stdio: 'ignore',
    });
    let exited = false;
    const exit = once(child, 'exit').then(() => (exited = true));
    const deadline = Date.now() + 60_000;
    while (!exited && (await manifests()).length === 0 && Date.now() < deadline) await sleep(5);
    child.kill('SIGKILL');
    await exit;

    const killedRun = new Map<string, string>();
    for (const name of await manifests())
      killedRun.set(name.slice(0, 10), (JSON.parse(await readFile(path.join(workspace.outDir, 'daily', name), 'utf8')) as { runId: string }).runId);
    expect(killedRun.size).toBeGreaterThan(0);
    expect(killedRun.size).toBeLessThan(days.length);
    // Oldest first, one at a time: what the killed run published is a prefix of the days.
    expect([...killedRun.keys()].sort()).toEqual(days.slice(0, killedRun.size));

    const next = await runCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir, '--json'], { env: sandboxEnv(sandbox) });
    expect(next.exitCode).toBe(0);
    const summary = summaryOf(next.stdout, 'run');
    expect(summary.incremental![0]!.windows.map((window) => window.from)).toEqual(days.slice(killedRun.size));
    expect(summary.incremental![0]!.reason).toContain(`resume after ${days[killedRun.size - 1]}`);

    // Every day once: the killed run's days still hold its publish, the others the new run's.
    for (const day of days) {
      const manifest = JSON.parse(await readFile(path.join(workspace.outDir, 'daily', `${day}.csv.manifest.json`), 'utf8')) as { runId: string };
      expect(manifest.runId, day).toBe(killedRun.get(day) ?? `${summary.runId}-${day.replaceAll('-', '')}`);
    }
    const written: string[][] = [];
    for (const day of days) written.push(...(await dayRows(workspace, day)));
    expect(written).toEqual(sourceRows(sandbox, days[0]!, '2026-07-11'));
    // The killed run's temp files were swept by the next one.
    expect((await listFiles(workspace.outDir)).filter((name) => !/^daily\/2026-07-\d\d\.csv(\.manifest\.json)?$/.test(name))).toEqual([]);
  }, 90_000);
});

describe('plan and the limits of a catch-up', () => {
  it('plan shows the windows the next run would export and why; a capped run does the oldest and says what is left', async () => {
    const root = await each.tempDir();
    const day1 = await sandboxAt('2026-07-01');
    expect((await runOn(root, day1, [job({})])).exitCode).toBe(0);

    const day5 = await sandboxAt('2026-07-05');
    const capped = [job({ lookbackDays: 1, maxWindows: 2 })];
    const workspace = await writeWorkspace(root, day5, capped);
    const files = await listFiles(workspace.outDir);
    const plan = await runCli(['plan', '--config', workspace.configFile, '--jobs', workspace.jobsDir], { env: sandboxEnv(day5) });
    expect(plan.exitCode).toBe(0);
    // Day 1's run exported 2026-07-01 before the day ended: open, so exported again (not as lookback).
    expect(plan.stdout).toContain(
      "  incremental (source's today 2026-07-05): next run exports 2 windows 2026-07-01..2026-07-03: resume at incremental.startFrom 2026-07-01 (no target holds it closed); " +
        '2026-07-01 published while open: exported again; capped at maxWindows 2: 3 left for the next run (2026-07-03..2026-07-06)\n' +
        '    2026-07-01  (published while open, exported again)\n    2026-07-02\n',
    );
    // The sink line names the file of the first window the run would write, not today's on this machine.
    expect(plan.stdout).toMatch(/csv .*\/daily\/2026-07-01\.csv: unchanged/);
    expect(await listFiles(workspace.outDir)).toEqual(files);

    const run = await runOn(root, day5, capped);
    expect(run.exitCode).toBe(0);
    expect(run.summary.incremental![0]!.windows.map((window) => window.from)).toEqual(['2026-07-01', '2026-07-02']);
    expect(run.summary.incremental![0]!.left.map((window) => window.from)).toEqual(['2026-07-03', '2026-07-04', '2026-07-05']);
    expect(run.stderr).toContain('warning: 3 day windows (2026-07-03..2026-07-06) left for the next run (maxWindows 2)');
    const next = await runOn(root, day5, capped);
    expect(next.summary.incremental![0]!.windows.map((window) => window.from)).toEqual(['2026-07-02', '2026-07-03']);
  });

  it('fails with incremental_state_unreadable, exporting nothing, when a manifest cannot be read', async () => {
    const root = await each.tempDir();
    const day5 = await sandboxAt('2026-07-05');
    const workspace = await writeWorkspace(root, day5, [job({})]);
    const { mkdir } = await import('node:fs/promises');
    await mkdir(path.join(workspace.outDir, 'daily', '2026-07-03.csv.manifest.json'), { recursive: true });
    const requests = exports(day5);
    const run = await runOn(root, day5, [job({})]);
    expect(run.exitCode).toBe(1);
    expect(run.summary.tiles.map((tile) => tile.error?.code)).toEqual(['incremental_state_unreadable']);
    expect(run.summary.incremental![0]!.error?.message).toMatch(/cannot read \{name\}\/\{date\}\.csv's state: EISDIR/);
    expect(exports(day5)).toBe(requests);
    expect(await listFiles(path.join(workspace.outDir, 'daily'))).toEqual([]);
  });

  it('refuses targets that disagree with incremental_state_ambiguous and the backfill that makes them agree', async () => {
    const root = await each.tempDir();
    const day5 = await sandboxAt('2026-07-05');
    const one = { ...job({}), sinks: [{ type: 'csv', manifest: true, path: 'a/{date}.csv' }] };
    expect((await runOn(root, day5, [one])).exitCode).toBe(0);
    // A second sink added to a job that has run for days: should it get those days or not?
    const two = { ...one, sinks: [...one.sinks, { type: 'csv', manifest: true, path: 'b/{date}.csv' }] };
    const requests = exports(day5);
    const refused = await runOn(root, day5, [two]);
    expect(refused.exitCode).toBe(1);
    expect(exports(day5)).toBe(requests);
    expect(refused.summary.tiles[0]!.error?.code).toBe('incremental_state_ambiguous');
    // a/ holds today's day only as open: the backfill covers the closed days, the run the open one.
    const fix = `tilehouse backfill --job daily --from 2026-07-01 --to 2026-07-05 --step day --config ${refused.workspace.configFile} --jobs ${refused.workspace.jobsDir}`;
    expect(refused.stderr).toContain(fix);
    expect(refused.stderr).toContain('a/{date}.csv holds every day up to 2026-07-04, b/{date}.csv lacks 2026-07-01');

    const backfill = await runCli(fix.split(' ').slice(1), { env: sandboxEnv(day5) });
    expect(backfill.exitCode).toBe(0);
    const agreed = await runOn(root, day5, [two]);
    expect(agreed.exitCode).toBe(0);
    expect(agreed.summary.incremental![0]!.windows).toEqual([{ from: '2026-07-05', to: '2026-07-06' }]);
  });
});

describe('tilehouse schedule with an incremental job', () => {
  it('catches up on its first tick and exports only the open day on the next ones', async () => {
    const root = await each.tempDir();
    const sandbox = await sandboxAt('2026-07-03');
    const everySecond = { ...job({ startFrom: '2026-06-30' }), schedule: { cron: '* * * * * *', timezone: 'UTC' } };
    const workspace = await writeWorkspace(root, sandbox, [everySecond]);
    const child = spawn(process.execPath, ['--import', 'tsx', CLI, 'schedule', '--config', workspace.configFile, '--jobs', workspace.jobsDir], {
      env: { ...process.env, CI: '', ...sandboxEnv(sandbox) },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let logs = '';
    child.stderr.on('data', (chunk: Buffer) => (logs += chunk.toString()));
    const deadline = Date.now() + 30_000;
    // One log line per tick says what the tick exports and why.
    const ticks = (reason: string) => logs.split('\n').filter((line) => line.includes(`"msg":"daily: ${reason}`)).length;
    const again = '1 window 2026-07-03..2026-07-04: resume after 2026-07-02 (the last day every target holds); 2026-07-03 published while open: exported again';
    while (ticks(again) < 2 && Date.now() < deadline) await sleep(50);
    child.kill('SIGTERM');
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(code).toBe(143);
    expect(ticks('4 windows 2026-06-30..2026-07-04: first run: from incremental.startFrom 2026-06-30')).toBe(1);
    expect(ticks(again)).toBeGreaterThanOrEqual(2);
    const written: string[][] = [];
    for (const day of ['2026-06-30', '2026-07-01', '2026-07-02', '2026-07-03']) written.push(...(await dayRows(workspace, day)));
    expect(written).toEqual(sourceRows(sandbox, '2026-06-30', '2026-07-04'));
  }, 60_000);
});
