import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { runCli, sandboxEnv, summaryOf, writeWorkspace, type Workspace } from '../support/cli-harness.js';
import { daySandboxesForAll } from '../support/day-sandboxes.js';
import { dailyCsvBackfillJob, dailyManifestJob, dailySeverityQuery } from '../support/queries.js';

/**
 * A window's run replaces the rw filter of the job's date item with its own (relative to the
 * moment it ran). That filter is the window's, not the job's: `status` must not read it as an edit
 * of the job ("the job's query changed since run …-20260702: filters on Day") while the job file
 * is as it was; an edit of the file is still told.
 */
const days = daySandboxesForAll();
const NOW = '2026-07-03T13:00:00.000Z';

const status = async (workspace: Workspace, sandboxEnvironment: Record<string, string>) => {
  const result = await runCli(['status', '--config', workspace.configFile, '--jobs', workspace.jobsDir], {
    env: sandboxEnvironment,
    seams: { now: () => new Date(NOW) },
  });
  const json = await runCli(['status', '--config', workspace.configFile, '--jobs', workspace.jobsDir, '--json'], {
    env: sandboxEnvironment,
    seams: { now: () => new Date(NOW) },
  });
  const [morning] = JSON.parse(json.stdout) as Array<{
    targets: Array<{ target: string; runId?: string; windowRunId?: string; window?: unknown; changedSince?: unknown }>;
  }>;
  return { lines: result.stdout.split('\n'), targets: morning!.targets };
};

/** The job with a filter on Severity added: an edit of the file that changes which rows land. */
const severityEdited = (job: { query: typeof dailySeverityQuery } & Record<string, unknown>) => ({
  ...job,
  query: {
    ...job.query,
    items: job.query.items.map((item) => (item.header === 'Severity' ? { ...item, filters: [{ operator: 'in', values: ['P1'] }] } : item)),
  },
});

async function rewrite(workspace: Workspace, job: Record<string, unknown>): Promise<void> {
  await writeFile(path.join(workspace.jobsDir, `${String(job.name)}.yaml`), stringify(job));
}

describe("status of a windowed job's targets compares the job's definition, not a window's filter", () => {
  it('an incremental run, then status with the job file unchanged: no change; with a filter edited: that change only', async () => {
    const sandbox = await days.at('2026-07-03');
    const job = dailyManifestJob({ startFrom: '2026-07-01' });
    const workspace = await writeWorkspace(path.join(days.root, 'incremental'), sandbox, [job]);
    const run = await runCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir, '--run-id', 'nightly-0703', '--json'], {
      env: sandboxEnv(sandbox),
    });
    expect(run.exitCode, run.stderr).toBe(0);
    // Every window's run, in the summary (what a BigQuery ledger row records) as in its manifest,
    // carries the one definition of the job: three windows, three rw filters, one fingerprint.
    const tiles = summaryOf(run.stdout, 'run').tiles;
    expect(tiles.map((tile) => tile.runId)).toEqual(['nightly-0703-20260701', 'nightly-0703-20260702', 'nightly-0703-20260703']);
    const manifest = JSON.parse(await readFile(path.join(workspace.outDir, 'daily', '2026-07-01.csv.manifest.json'), 'utf8')) as {
      definition: { fingerprint: string };
    };
    expect(new Set(tiles.map((tile) => tile.definition?.fingerprint))).toEqual(new Set([manifest.definition.fingerprint]));

    const unchanged = await status(workspace, sandboxEnv(sandbox));
    // The window's run id, which no record carries, is told as the incremental run's, and its window (the run history's record).
    expect(unchanged.targets.map((target) => [path.basename(target.target), target.runId, target.windowRunId, target.window])).toEqual([
      ['2026-07-03.csv', 'nightly-0703', 'nightly-0703-20260703', { from: '2026-07-03', to: '2026-07-04' }],
    ]);
    expect(unchanged.lines.find((line) => line.startsWith('  csv '))).toMatch(
      /^ {2}csv \S+\/daily\/2026-07-03\.csv: run nightly-0703 \(window 2026-07-03\.\.2026-07-04\) of 2026-\d\d-\d\d \d\d:\d\d:\d\d UTC, \d+ rows? \(its manifest\)$/,
    );
    expect(unchanged.targets[0]!.changedSince).toBeUndefined();
    expect(unchanged.lines.filter((line) => /changed since/.test(line))).toEqual([]);

    await rewrite(workspace, severityEdited(job));
    const edited = await status(workspace, sandboxEnv(sandbox));
    expect(edited.targets[0]!.changedSince).toEqual([{ part: 'query', details: ['filters on Severity'] }]);
    expect(edited.lines.join('\n')).toContain('filters on Severity');
    expect(edited.lines.join('\n')).not.toContain('filters on Day');
  });

  it('a backfill, then status with the job file unchanged: no change; with a filter edited: that change only', async () => {
    const sandbox = await days.at('2026-07-03');
    const job = { ...dailyCsvBackfillJob, sinks: [{ type: 'csv', path: 'daily/{date}.csv', manifest: true }] };
    const workspace = await writeWorkspace(path.join(days.root, 'backfill'), sandbox, [job]);
    const backfill = await runCli(
      [
        'backfill',
        '--config',
        workspace.configFile,
        '--jobs',
        workspace.jobsDir,
        '--job',
        'daily',
        '--from',
        '2026-07-02',
        '--to',
        '2026-07-04',
        '--run-id',
        'fill-07',
      ],
      { env: sandboxEnv(sandbox) },
    );
    expect(backfill.exitCode, backfill.stderr).toBe(0);

    const unchanged = await status(workspace, sandboxEnv(sandbox));
    // The window's run id is told as the backfill's run id and its window.
    expect(unchanged.targets.map((target) => [path.basename(target.target), target.runId, target.windowRunId, target.window])).toEqual([
      ['2026-07-03.csv', 'fill-07', 'fill-07-20260703', { from: '2026-07-03', to: '2026-07-04' }],
    ]);
    expect(unchanged.lines.find((line) => line.startsWith('  csv '))).toMatch(
      /^ {2}csv \S+\/daily\/2026-07-03\.csv: run fill-07 \(window 2026-07-03\.\.2026-07-04\) of 2026-\d\d-\d\d \d\d:\d\d:\d\d UTC, \d+ rows? \(its manifest\)$/,
    );
    expect(unchanged.targets[0]!.changedSince).toBeUndefined();
    expect(unchanged.lines.filter((line) => /changed since/.test(line))).toEqual([]);

    await rewrite(workspace, severityEdited(job));
    const edited = await status(workspace, sandboxEnv(sandbox));
    expect(edited.targets[0]!.changedSince).toEqual([{ part: 'query', details: ['filters on Severity'] }]);
    expect(edited.lines.join('\n')).toContain('filters on Severity');
    expect(edited.lines.join('\n')).not.toContain('filters on Day');
  });
});
