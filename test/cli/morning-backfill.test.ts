// A backfill in the morning's view: the run history keeps it beside the nights' runs, `status`
// shows it (its range, windows, rows; a failed one's code, message and the commands that re-run
// just its failed windows), and it is never taken for the night's run: a backfill started after
// the schedule fired does not hide LATE, nor ask for the job's repair.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { listFiles, runCli, sandboxEnv, writeWorkspace } from '../support/cli-harness.js';
import { dailySeverityQuery } from '../support/queries.js';
import { sandboxAndRootForAll } from '../support/sandbox-fixture.js';

const NIGHT = { at: '2026-07-02T02:00:00.000Z', runId: '20260702T020000Z-aa11bb' };
const BACKFILL_OK = { at: '2026-07-03T03:00:00.000Z', runId: 'backfill-june-end' };
const BACKFILL_BAD = { at: '2026-07-03T04:00:00.000Z', runId: 'backfill-june-again' };
const MORNING = '2026-07-03T07:30:00.000Z';
const job = {
  name: 'daily',
  tile: SANDBOX_TILE,
  query: dailySeverityQuery,
  schedule: { cron: '0 2 * * *', timezone: 'UTC' },
  sinks: [{ type: 'csv' }],
  columns: { Day: { type: 'DATE' }, Incidents: { type: 'INT64' } },
  backfill: { item: 'day', bucketColumn: 'Day' },
};

function jobBlock(text: string, name: string): string[] {
  const lines = text.trimEnd().split('\n');
  const start = lines.findIndex((line) => line.startsWith(`${name} `));
  const end = lines.findIndex((line, index) => index > start && !line.startsWith(' '));
  return lines.slice(start, end === -1 ? undefined : end);
}

describe('a backfill in the run history and in status', () => {
  const fixture = sandboxAndRootForAll({ incidents: 600, now: new Date('2026-07-03T12:00:00Z') });

  it('is shown beside the last night, never answers LATE, and a failed one prints the re-run of its failed windows', async () => {
    const ws = await writeWorkspace(fixture.root, fixture.sandbox, [job]);
    const env = sandboxEnv(fixture.sandbox);
    const flags = ['--config', ws.configFile, '--jobs', ws.jobsDir];
    const cli = (now: string, args: string[]) => runCli([...args, ...flags], { env, seams: { now: () => new Date(now) } });

    const night = await cli(NIGHT.at, ['run', '--run-id', NIGHT.runId]);
    expect(night.exitCode, night.stderr).toBe(0);
    // No night run on 07-03: the schedule fired at 02:00 and only a backfill started after it.
    const good = await cli(BACKFILL_OK.at, ['backfill', '--job', 'daily', '--from', '2026-06-28', '--to', '2026-07-01', '--run-id', BACKFILL_OK.runId]);
    expect(good.exitCode, good.stderr).toBe(0);
    const rows = (await Promise.all(['2026-06-28', '2026-06-29', '2026-06-30'].map((day) => readFile(path.join(ws.outDir, 'daily', `${day}.csv`), 'utf8'))))
      .map((text) => text.trimEnd().split('\n').length - 1)
      .reduce((sum, count) => sum + count, 0);
    expect(rows).toBeGreaterThan(0);

    const first = jobBlock((await cli(MORNING, ['status'])).stdout, 'daily');
    expect(first[1]).toMatch(new RegExp(`^ {2}last run: OK, run ${NIGHT.runId} of 2026-07-02 02:00:00 UTC; \\d+ rows, \\d+ pages? in \\d+\\.\\d s$`));
    expect(first[2]).toMatch(/^ {4}time: source /);
    expect(first[3]).toMatch(
      new RegExp(
        `^ {2}last backfill: OK, run ${BACKFILL_OK.runId} of 2026-07-03 03:00:00 UTC, 2026-06-28\\.\\.2026-07-01 by day; 3 of 3 windows succeeded, ${rows} rows? in \\d+\\.\\d s$`,
      ),
    );
    // The backfill is no night's run: the one due at 02:00 never started.
    expect(first[4]).toBe('  LATE: no run has started since the schedule fired at 2026-07-03 02:00:00 UTC');
    expect(first.filter((line) => line.startsWith('  repair: '))).toEqual([`  repair: tilehouse run ${flags.join(' ')} --job daily`]);

    // A backfill whose every window fails.
    fixture.sandbox.inject({ kind: 'malformed-json', endpoint: 'export', pageNumber: 0, times: Number.POSITIVE_INFINITY });
    const bad = await cli(BACKFILL_BAD.at, ['backfill', '--job', 'daily', '--from', '2026-06-25', '--to', '2026-06-28', '--run-id', BACKFILL_BAD.runId]);
    expect(bad.exitCode).toBe(1);
    fixture.sandbox.clearFaults();
    const second = jobBlock((await cli(MORNING, ['status'])).stdout, 'daily');
    const rerun = `tilehouse backfill --job daily --from 2026-06-25 --to 2026-06-28 --step day ${flags.join(' ')}`;
    // The command the backfill printed for its failed windows, word for word.
    expect(bad.stderr.split('\n')).toContain(`  ${rerun}`);
    const backfillLines = second.slice(second.findIndex((line) => line.startsWith('  last backfill: ')));
    expect(backfillLines[0]).toMatch(
      new RegExp(
        `^ {2}last backfill: FAILED export_response_invalid, run ${BACKFILL_BAD.runId} of 2026-07-03 04:00:00 UTC, 2026-06-25\\.\\.2026-06-28 by day; 0 of 3 windows succeeded, 0 rows in \\d+\\.\\d s$`,
      ),
    );
    const code = 'export_response_invalid';
    expect(backfillLines[1]).toMatch(/^ {4}\S/);
    expect(bad.stderr).toContain(backfillLines[1]!.trim());
    expect(backfillLines[2]).toBe('  LATE: no run has started since the schedule fired at 2026-07-03 02:00:00 UTC');
    // Its failed windows are the job's holes: listed once, with the command the backfill printed.
    expect(second.filter((line) => line.startsWith('  hole: ') || line.startsWith('    re-run: '))).toEqual([
      `  hole: 2026-06-25..2026-06-28, failed in backfill run ${BACKFILL_BAD.runId} of 2026-07-03 04:00:00 UTC (export_response_invalid); no run since filled it`,
      `    re-run: ${rerun}`,
    ]);

    // --json says the same.
    const json = JSON.parse((await cli(MORNING, ['status', '--json'])).stdout) as Array<Record<string, unknown>>;
    expect(json[0]!.lastRun).toMatchObject({ runId: NIGHT.runId, trigger: 'run', verdict: 'ok' });
    expect(json[0]!.lastBackfill).toMatchObject({
      runId: BACKFILL_BAD.runId,
      verdict: 'failed',
      code,
      from: '2026-06-25',
      to: '2026-06-28',
      step: 'day',
      windows: 3,
      failedWindows: [
        { from: '2026-06-25', to: '2026-06-26' },
        { from: '2026-06-26', to: '2026-06-27' },
        { from: '2026-06-27', to: '2026-06-28' },
      ],
      rerun: [rerun],
    });

    // The record as kept: its trigger and range, and no secret.
    const { text, record } = await readLatestRecord(ws.configFile, 'daily', BACKFILL_BAD.runId);
    expect(record).toMatchObject({ trigger: 'backfill', state: 'failed', backfill: { from: '2026-06-25', to: '2026-06-28', step: 'day', windows: 3 } });
    expect(text).not.toContain(env.TEST_CLIENT_SECRET!);

    // The re-run as printed repairs the three days, and the morning says so.
    const repaired = await runCli(rerun.split(' ').slice(1), { env });
    expect(repaired.exitCode, repaired.stderr).toBe(0);
    expect((await listFiles(path.join(ws.outDir, 'daily'))).filter((file) => file < '2026-06-28')).toEqual([
      '2026-06-25.csv',
      '2026-06-26.csv',
      '2026-06-27.csv',
    ]);
    const third = jobBlock((await runCli(['status', ...flags], { env })).stdout, 'daily');
    expect(third.find((line) => line.startsWith('  last backfill: '))).toMatch(
      /^ {2}last backfill: OK, run \S+ of .*, 2026-06-25\.\.2026-06-28 by day; 3 of 3 windows succeeded/,
    );
    expect(third.some((line) => line.startsWith('    re-run: '))).toBe(false);
  });

  it("keeps a record per shard of an Indexed Job's backfill, two started in the same millisecond too, and status judges the backfill by all of them", async () => {
    const ws = await writeWorkspace(path.join(fixture.root, 'shards'), fixture.sandbox, [job]);
    const env = sandboxEnv(fixture.sandbox);
    const flags = ['--config', ws.configFile, '--jobs', ws.jobsDir];
    // Every pod of an Indexed Job runs under the Job's name, and pods start together: the same
    // run id, and here the same millisecond.
    const shard = (runId: string, index: number, at = BACKFILL_OK.at) =>
      runCli(
        [
          'backfill',
          '--job',
          'daily',
          '--from',
          '2026-06-25',
          '--to',
          '2026-06-29',
          '--run-id',
          runId,
          '--shard-index',
          String(index),
          '--shard-count',
          '2',
          ...flags,
        ],
        { env, seams: { now: () => new Date(at) } },
      );
    // Shard 0 (06-25, 06-26) fails both its windows; shard 1 (06-27, 06-28) succeeds, after it.
    fixture.sandbox.inject({ kind: 'malformed-json', endpoint: 'export', pageNumber: 0, times: Number.POSITIVE_INFINITY });
    const failed = await shard('bf-indexed', 0);
    fixture.sandbox.clearFaults();
    expect(failed.exitCode).toBe(1);
    const passed = await shard('bf-indexed', 1);
    expect(passed.exitCode, passed.stderr).toBe(0);

    const records = (await readdir(path.join(ws.root, '.tilehouse', 'history', 'daily'))).filter((name) => name.includes('bf-indexed'));
    expect(records.sort()).toEqual(['20260703T030000.000Z_bf-indexed~shard-0-of-2.json', '20260703T030000.000Z_bf-indexed~shard-1-of-2.json']);

    const status = async () => jobBlock((await runCli(['status', ...flags], { env, seams: { now: () => new Date(MORNING) } })).stdout, 'daily');
    const rerun = `tilehouse backfill --job daily --from 2026-06-25 --to 2026-06-27 --step day ${flags.join(' ')}`;
    const lines = await status();
    const at = lines.findIndex((line) => line.startsWith('  last backfill: '));
    // The failed shard decides the outcome, though the one that succeeded ended last.
    expect(lines[at]).toMatch(
      /^ {2}last backfill: FAILED export_response_invalid, run bf-indexed of 2026-07-03 03:00:00 UTC, 2026-06-25\.\.2026-06-29 by day, 2 shards; 2 of 4 windows succeeded, \d+ rows in \d+\.\d s$/,
    );
    expect(failed.stderr).toContain(lines[at + 1]!.trim());
    expect(lines.filter((line) => line.startsWith('  hole: ') || line.startsWith('    re-run: '))).toEqual([
      '  hole: 2026-06-25..2026-06-27, failed in backfill run bf-indexed of 2026-07-03 03:00:00 UTC (export_response_invalid); no run since filled it',
      `    re-run: ${rerun}`,
    ]);
    const json = JSON.parse((await runCli(['status', '--json', ...flags], { env, seams: { now: () => new Date(MORNING) } })).stdout) as Array<
      Record<string, unknown>
    >;
    expect(json[0]!.lastBackfill).toMatchObject({
      runId: 'bf-indexed',
      verdict: 'failed',
      windows: 4,
      shards: { count: 2, recorded: [0, 1] },
      failedWindows: [
        { from: '2026-06-25', to: '2026-06-26' },
        { from: '2026-06-26', to: '2026-06-27' },
      ],
      rerun: [rerun],
    });

    // A backfill of which one shard has no record (not started yet, or its pod never ran) says so.
    const later = await shard('bf-half', 1, BACKFILL_BAD.at);
    expect(later.exitCode, later.stderr).toBe(0);
    expect((await status()).find((line) => line.startsWith('  last backfill: '))).toMatch(
      /^ {2}last backfill: OK, run bf-half of 2026-07-03 04:00:00 UTC, 2026-06-25\.\.2026-06-29 by day, shard 1 of 2 \(no record of shard 0\); 2 of 2 windows succeeded, \d+ rows in \d+\.\d s$/,
    );
  });

  it('records a --resume that finds every window done as a success of no rows, not as a run that never ran', async () => {
    const ws = await writeWorkspace(path.join(fixture.root, 'resume'), fixture.sandbox, [{ ...job, sinks: [{ type: 'csv', manifest: true }] }]);
    const env = sandboxEnv(fixture.sandbox);
    const flags = ['--config', ws.configFile, '--jobs', ws.jobsDir];
    const args = ['backfill', ...flags, '--job', 'daily', '--from', '2026-06-28', '--to', '2026-06-30'];
    expect((await runCli(args, { env })).exitCode).toBe(0);
    const resumed = await runCli([...args, '--resume', '--run-id', 'backfill-nothing-left'], { env });
    expect(resumed.exitCode, resumed.stderr).toBe(0);
    const { record } = await readLatestRecord(ws.configFile, 'daily', 'backfill-nothing-left');
    expect(record).toMatchObject({ state: 'succeeded', rows: 0, backfill: { windows: 0 } });
    expect(record).not.toHaveProperty('error');
  });
});

async function readLatestRecord(configFile: string, job: string, runId: string): Promise<{ text: string; record: Record<string, unknown> }> {
  const directory = path.join(path.dirname(configFile), '.tilehouse', 'history', job);
  const name = (await readdir(directory))
    .filter((file) => file.endsWith(`_${runId}.json`))
    .sort()
    .at(-1)!;
  const text = await readFile(path.join(directory, name), 'utf8');
  return { text, record: JSON.parse(text) as Record<string, unknown> };
}
