// Issue 63's holes: a day window a run failed (a backfill's, an incremental run's) that no later
// run filled is listed by `status` with the backfill that fills it, whatever ran since (a later
// night's "last run: OK" no longer hides it). The test runs the printed command as printed: the
// day lands and the listing goes. A window a later run filled (a backfill, the next incremental
// run) is no hole.
import { access } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { FAST_RETRY, runCli, sandboxEnv, writeWorkspace } from '../support/cli-harness.js';
import { dailyManifestJob, dailySeverityQuery } from '../support/queries.js';
import { sandboxAndRootForAll } from '../support/sandbox-fixture.js';

const NIGHT_1 = { at: '2026-07-02T02:00:00.000Z', runId: '20260702T020000Z-h1h1h1' };
const BACKFILL = { at: '2026-07-02T03:00:00.000Z', runId: 'bf-hole' };
const NIGHT_2 = { at: '2026-07-03T02:00:00.000Z', runId: '20260703T020000Z-h2h2h2' };
const MORNING = '2026-07-03T07:30:00.000Z';

function jobBlock(text: string, name: string): string[] {
  const lines = text.trimEnd().split('\n');
  const start = lines.findIndex((line) => line.startsWith(`${name} `));
  const end = lines.findIndex((line, index) => index > start && !line.startsWith(' '));
  return lines.slice(start, end === -1 ? undefined : end);
}

/**
 * Rows, pages and durations differ from run to run; so may the verdict on the night's time beside
 * the first night's cold start (history/run-baseline.ts, tested in morning-baseline.test.ts).
 */
const steady = (lines: readonly string[]) =>
  lines.map((line) =>
    line
      .replace(/\d+\.\d s\b/g, 'N.N s')
      .replace(/\b\d+ rows\b/g, 'N rows')
      .replace(/\b\d+ pages?\b/g, 'N pages')
      .replace(/; FAR OFF: .*$/, ''),
  );

describe('the holes of a job history in status', () => {
  const fixture = sandboxAndRootForAll({ incidents: 600, now: new Date('2026-07-03T12:00:00Z') });

  it("lists a backfill's failed day after a later night ran OK, with a re-run that fills it, and not once it is filled", async () => {
    const job = {
      name: 'daily',
      tile: SANDBOX_TILE,
      query: dailySeverityQuery,
      schedule: { cron: '0 2 * * *', timezone: 'UTC' },
      sinks: [{ type: 'csv' }],
      columns: { Day: { type: 'DATE' }, Incidents: { type: 'INT64' } },
      backfill: { item: 'day', bucketColumn: 'Day' },
    };
    const ws = await writeWorkspace(fixture.root, fixture.sandbox, [job]);
    const env = sandboxEnv(fixture.sandbox);
    const flags = ['--config', ws.configFile, '--jobs', ws.jobsDir];
    const cli = (now: string, args: string[]) => runCli([...args, ...flags], { env, seams: { now: () => new Date(now) } });

    expect((await cli(NIGHT_1.at, ['run', '--run-id', NIGHT_1.runId])).exitCode).toBe(0);
    // The backfill's first window (06-25) gets its page cut in half at every try: it fails, the others land.
    fixture.sandbox.inject({ kind: 'malformed-json', endpoint: 'export', times: FAST_RETRY.maxAttempts });
    const backfill = await cli(BACKFILL.at, ['backfill', '--job', 'daily', '--from', '2026-06-25', '--to', '2026-06-28', '--run-id', BACKFILL.runId]);
    fixture.sandbox.clearFaults();
    expect(backfill.exitCode, backfill.stderr).toBe(1);
    expect(backfill.stderr).toContain('  2026-06-25..2026-06-26: FAILED export_response_invalid: ');
    // The night after ran OK: its "last run: OK" used to be all the morning said.
    expect((await cli(NIGHT_2.at, ['run', '--run-id', NIGHT_2.runId])).exitCode).toBe(0);

    const status = await cli(MORNING, ['status']);
    const rerun = `tilehouse backfill --job daily --from 2026-06-25 --to 2026-06-26 --step day ${flags.join(' ')}`;
    expect(steady(jobBlock(status.stdout, 'daily'))).toEqual([
      'daily (tile sandbox-tile; schedule 0 2 * * * UTC, last due 2026-07-03 02:00:00 UTC)',
      `  last run: OK, run ${NIGHT_2.runId} of 2026-07-03 02:00:00 UTC; N rows, N pages in N.N s`,
      '    time: source N.N s, reading N.N s, prepare csv N.N s, publish csv N.N s',
      '    usually: N rows in N.N s (median of 1 earlier successful run)',
      `  csv ${path.join(ws.outDir, 'daily.csv')}: run ${NIGHT_2.runId} of 2026-07-03 02:00:00 UTC, N rows (the run history; file modified; rows counted)`,
      `  hole: 2026-06-25..2026-06-26, failed in backfill run ${BACKFILL.runId} of 2026-07-02 03:00:00 UTC (export_response_invalid); no run since filled it`,
      `    re-run: ${rerun}`,
    ]);
    // A hole is a missing day: the morning check fails on it.
    expect(status.exitCode).toBe(1);
    const json = JSON.parse((await cli(MORNING, ['status', '--json'])).stdout) as Array<Record<string, unknown>>;
    expect(json[0]!.holes).toEqual([
      {
        from: '2026-06-25',
        to: '2026-06-26',
        step: 'day',
        failedIn: { runId: BACKFILL.runId, trigger: 'backfill', startedAt: BACKFILL.at, code: 'export_response_invalid' },
        rerun,
      },
    ]);

    // The command as printed fills the day, and the morning no longer lists it.
    const repaired = await runCli(rerun.split(' ').slice(1), { env });
    expect(repaired.exitCode, repaired.stderr).toBe(0);
    await access(path.join(ws.outDir, 'daily', '2026-06-25.csv'));
    const after = await cli(MORNING, ['status']);
    expect(after.stdout).not.toContain('hole:');
    expect(after.exitCode, after.stdout).toBe(0);
    expect(JSON.parse((await cli(MORNING, ['status', '--json'])).stdout)[0]).not.toHaveProperty('holes');
  });

  it("lists an incremental run's failed day until the next run fills it", async () => {
    const ws = await writeWorkspace(path.join(fixture.root, 'incremental'), fixture.sandbox, [dailyManifestJob({ startFrom: '2026-07-01' })]);
    const env = sandboxEnv(fixture.sandbox);
    const flags = ['--config', ws.configFile, '--jobs', ws.jobsDir];
    // The first window (07-01) fails at every try; 07-02 and 07-03 land.
    fixture.sandbox.inject({ kind: 'malformed-json', endpoint: 'export', times: FAST_RETRY.maxAttempts });
    const night = await runCli(['run', '--run-id', 'inc-1', ...flags], { env, seams: { now: () => new Date('2026-07-03T02:00:00.000Z') } });
    fixture.sandbox.clearFaults();
    expect(night.exitCode, night.stderr).toBe(1);
    const status = async () => runCli(['status', ...flags], { env, seams: { now: () => new Date(MORNING) } });
    const holes = (text: string) => text.split('\n').filter((line) => line.startsWith('  hole: ') || line.startsWith('    re-run: '));
    expect(holes((await status()).stdout)).toEqual([
      '  hole: 2026-07-01..2026-07-02, failed in run inc-1 of 2026-07-03 02:00:00 UTC (export_response_invalid); no run since filled it',
      `    re-run: tilehouse backfill --job daily --from 2026-07-01 --to 2026-07-02 --step day ${flags.join(' ')}`,
    ]);
    // The next incremental run starts again at the failed day: it fills it.
    const next = await runCli(['run', '--run-id', 'inc-2', ...flags], { env, seams: { now: () => new Date('2026-07-03T06:00:00.000Z') } });
    expect(next.exitCode, next.stderr).toBe(0);
    expect(holes((await status()).stdout)).toEqual([]);
  });
});
