import { readFile, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SANDBOX_TILE, startSandbox, type Sandbox } from '../../sandbox/index.js';
import { summarySchema } from '../../src/pipeline/summary-schema.js';
import { listFiles, runCli, sandboxEnv, writeWorkspace, type Workspace } from '../support/cli-harness.js';
import { readCsv } from '../support/csv-read.js';
import { makeTempDir } from '../support/temp-dir.js';
import { dailySeverityQuery } from '../support/queries.js';

// A daily job on the sandbox, whose clock is moved from run to run (a sandbox per "day", started
// with its own now): the "cluster" runs on day 1, is down on days 2-4, and runs again on day 5.
const at = (day: string) => new Date(`${day}T12:00:00Z`);
const job = (incremental: Record<string, unknown>) => ({
  name: 'daily',
  tile: SANDBOX_TILE,
  query: dailySeverityQuery,
  sinks: [{ type: 'csv', manifest: true }],
  columns: { Day: { type: 'DATE' }, Incidents: { type: 'INT64' } },
  incremental: { item: 'day', bucketColumn: 'Day', startFrom: '2026-07-01', lookbackDays: 0, ...incremental },
});

const opened: Sandbox[] = [];
const roots: string[] = [];
afterEach(async () => {
  for (const sandbox of opened.splice(0)) await sandbox.close();
  for (const root of roots.splice(0)) await rm(root, { recursive: true, force: true });
});

async function sandboxAt(day: string): Promise<Sandbox> {
  const sandbox = await startSandbox({ incidents: 10_000, now: at(day) });
  opened.push(sandbox);
  return sandbox;
}

/** Points the workspace at `sandbox` (same jobs, same output directory) and runs the job once. */
async function runOn(root: string, sandbox: Sandbox, jobs: Array<Record<string, unknown>>) {
  const workspace = await writeWorkspace(root, sandbox, jobs);
  const result = await runCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir, '--json'], { env: sandboxEnv(sandbox) });
  const summary = summarySchema.parse(JSON.parse(result.stdout));
  if (summary.command !== 'run') throw new Error('not a run summary');
  return { ...result, summary, workspace };
}

/** What the source holds for [from, to), straight from its own evaluator (no rw filter), as the CSV text reads back. */
function sourceRows(sandbox: Sandbox, from: string, to: string): string[][] {
  const all = sandbox.evaluate({ ...dailySeverityQuery, items: dailySeverityQuery.items.map((item) => ({ ...item, filters: [] })) }, SANDBOX_TILE);
  return all.rows.filter((row) => (row[0] as string) >= from && (row[0] as string) < to).map((row) => row.map(String));
}

async function dayRows(workspace: Workspace, day: string): Promise<string[][]> {
  return (await readCsv(path.join(workspace.outDir, 'daily', `${day}.csv`))).rows as string[][];
}

const exports = (sandbox: Sandbox) => sandbox.requests.filter((request) => request.endpoint === 'export').length;

describe('an incremental run catches up the days the cluster missed', () => {
  it('exports day 1 on day 1, days 2-5 exactly on day 5, and nothing on a repeat of day 5', async () => {
    const root = await makeTempDir();
    roots.push(root);
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
    const dayOneBytes = await readFile(path.join(workspace.outDir, 'daily', '2026-07-01.csv'));

    const day5 = await sandboxAt('2026-07-05');
    const fifth = await runOn(root, day5, jobs);
    expect(fifth.exitCode).toBe(0);
    const days = ['2026-07-02', '2026-07-03', '2026-07-04', '2026-07-05'];
    expect(fifth.summary.incremental![0]!.windows.map((window) => window.from)).toEqual(days);
    expect(fifth.summary.incremental![0]!.reason).toContain('resume after 2026-07-01');
    expect(fifth.summary.tiles.map((tile) => tile.runId)).toEqual(days.map((day) => `${fifth.summary.runId}-${day.replaceAll('-', '')}`));
    // Each day's rows once, as the source holds them, and day 1 left as it was.
    const written: string[][] = [];
    for (const day of days) written.push(...(await dayRows(workspace, day)));
    const expected = sourceRows(day5, '2026-07-02', '2026-07-06');
    expect(new Set(expected.map((row) => row[0]))).toEqual(new Set(days));
    expect(written).toEqual(expected);
    expect(await readFile(path.join(workspace.outDir, 'daily', '2026-07-01.csv'))).toEqual(dayOneBytes);

    const before = await Promise.all(days.map(async (day) => (await stat(path.join(workspace.outDir, 'daily', `${day}.csv`))).mtimeMs));
    const requests = exports(day5);
    const repeat = await runOn(root, day5, jobs);
    expect(repeat.exitCode).toBe(0);
    expect(repeat.summary.tiles).toEqual([]);
    expect(repeat.summary.incremental![0]).toMatchObject({ windows: [], left: [], firstUnpublished: '2026-07-06' });
    expect(repeat.stderr).toContain('every day up to today 2026-07-05 is published');
    expect(exports(day5)).toBe(requests);
    expect(await Promise.all(days.map(async (day) => (await stat(path.join(workspace.outDir, 'daily', `${day}.csv`))).mtimeMs))).toEqual(before);
  });
});
