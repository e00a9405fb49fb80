// The run summary's `exitCode` is the process's exit status, for every signal and every outcome
// (issue 62): real child processes (the CLI through tsx, as a shell starts it), their exit status
// compared with the `exitCode` of the summary they printed (`--json`) or wrote (`--summary-json`).
// Before: SIGTERM mid-read exited 143 with a summary saying 1, and SIGTERM while a publish that
// then committed was under way exited 143 with a summary saying 0.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { sandboxEnv, summaryOf, writeWorkspace } from '../support/cli-harness.js';
import { exitWithin, spawnCli, textOf, type Exit } from '../support/child-process.js';
import { startLineageConsumer } from '../support/lineage-consumer.js';
import { addPostgresSettings, postgresBlocker, postgresOrSkip, psql, usePostgresDatabase } from '../support/postgres.js';
import { dailySeverityQuery, detailCsvJob, detailQuery } from '../support/queries.js';
import { sandboxAndRootForAll, sandboxWorkspaceForAll } from '../support/sandbox-fixture.js';
import { describeUnless } from '../support/skip.js';
import { dayFromToday } from '../support/window-oracle.js';

const dailyJob = {
  name: 'daily_severity',
  tile: SANDBOX_TILE,
  timezone: 'UTC',
  query: dailySeverityQuery,
  sinks: [{ type: 'csv' }],
  columns: { Day: { type: 'DATE' }, Incidents: { type: 'INT64' } },
  backfill: { item: 'day', bucketColumn: 'Day' },
};

interface Ended {
  exit: Exit;
  stdout: string;
  stderr: string;
}

/**
 * Spawns `tilehouse <args>`; once `ready()` holds (looked at every 20 ms, 30 s at most), sends
 * `signal`, and once the process says it received it, runs `afterSignal` (a lock released); then
 * waits for the exit. Without a signal, simply runs it to its end.
 */
async function runChild(
  args: string[],
  env: NodeJS.ProcessEnv,
  stop?: { signal: NodeJS.Signals; ready: (printed: { stdout: string }) => boolean | Promise<boolean>; afterSignal?: () => Promise<void> },
): Promise<Ended> {
  const child = spawnCli(args, { env: { ...process.env, ...env, CI: '' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let seen = '';
  const printed = { stdout: '' };
  child.stderr!.on('data', (chunk: Buffer) => (seen += chunk.toString()));
  child.stdout!.on('data', (chunk: Buffer) => (printed.stdout += chunk.toString()));
  const stdout = textOf(child.stdout);
  const stderr = textOf(child.stderr);
  const exited = exitWithin(child, 90_000);
  if (stop !== undefined) {
    const until = Date.now() + 30_000;
    while (!(await stop.ready(printed))) {
      if (Date.now() > until || child.exitCode !== null) {
        child.kill('SIGKILL');
        throw new Error(`the moment to stop never came: ${seen}`);
      }
      await sleep(20);
    }
    child.kill(stop.signal);
    if (stop.afterSignal !== undefined) {
      while (!seen.includes(`${stop.signal} received`)) {
        if (child.exitCode !== null) break;
        await sleep(10);
      }
      await stop.afterSignal();
    }
  }
  return { exit: await exited, stdout: await stdout, stderr: await stderr };
}

describe('the summary states the exit code of the process', () => {
  // 30 pages at 60 ms each: long enough to be stopped mid-read.
  const fixture = sandboxWorkspaceForAll({ incidents: 600, latencyMs: 60, now: new Date() }, [detailCsvJob, dailyJob], { itemsPerPage: 20, concurrency: 1 });
  afterEach(() => fixture.sandbox.clearFaults());
  const flags = () => ['--config', fixture.workspace.configFile, '--jobs', fixture.workspace.jobsDir];
  const env = () => sandboxEnv(fixture.sandbox);
  const exportsSince = (before: number) => fixture.sandbox.requests.slice(before).filter((request) => request.endpoint === 'export').length;

  it.each([
    { signal: 'SIGTERM' as const, code: 143, output: '--json' },
    { signal: 'SIGINT' as const, code: 130, output: '--json' },
    { signal: 'SIGTERM' as const, code: 143, output: '--summary-json' },
    { signal: 'SIGINT' as const, code: 130, output: '--summary-json' },
  ])('run stopped by $signal mid-read: exits $code, and the summary ($output) says $code', async ({ signal, code, output }) => {
    const file = path.join(fixture.root, `stopped-${signal}.json`);
    const before = fixture.sandbox.requests.length;
    const ended = await runChild(['run', '--job', 'incident_detail', ...(output === '--json' ? ['--json'] : ['--summary-json', file]), ...flags()], env(), {
      signal,
      ready: () => exportsSince(before) >= 3,
    });
    expect(ended.exit.code, ended.stderr).toBe(code);
    const summary = summaryOf(output === '--json' ? ended.stdout : await readFile(file, 'utf8'), 'run');
    expect(summary.exitCode).toBe(ended.exit.code);
    expect(summary.tiles[0]).toMatchObject({ status: 'failed', error: { code: 'run_stopped' } });
  });

  it('backfill stopped by SIGTERM mid-read: exits 143, and the summary says 143', async () => {
    fixture.sandbox.inject({ kind: 'delay', endpoint: 'export', pageNumber: 0, delayMs: 60_000, times: Number.POSITIVE_INFINITY });
    const before = fixture.sandbox.requests.length;
    const ended = await runChild(['backfill', '--job', 'daily_severity', '--from', dayFromToday(-4), '--to', dayFromToday(-2), '--json', ...flags()], env(), {
      signal: 'SIGTERM',
      ready: () => exportsSince(before) >= 1,
    });
    expect(ended.exit.code, ended.stderr).toBe(143);
    const summary = summaryOf(ended.stdout, 'backfill');
    expect(summary.exitCode).toBe(143);
    expect(summary.windows.map((window) => window.summary.error?.code)).toContain('run_stopped');
  });

  it.each([
    { outcome: 'every tile succeeded', code: 0, fault: false },
    { outcome: 'a tile failed', code: 1, fault: true },
  ])('run, $outcome: exits $code, and the summary says $code', async ({ code, fault }) => {
    if (fault) fixture.sandbox.inject({ kind: 'server-error', endpoint: 'export', status: 500, times: Number.POSITIVE_INFINITY });
    const ended = await runChild(['run', '--job', 'incident_detail', '--json', ...flags()], env());
    expect(ended.exit.code, ended.stderr).toBe(code);
    expect(summaryOf(ended.stdout, 'run').exitCode).toBe(code);
  });

  it.each([
    { outcome: 'every window succeeded', code: 0, fault: false },
    { outcome: 'the windows failed', code: 1, fault: true },
  ])('backfill, $outcome: exits $code, and the summary file says $code', async ({ code, fault }) => {
    if (fault) fixture.sandbox.inject({ kind: 'server-error', endpoint: 'export', status: 503, times: Number.POSITIVE_INFINITY });
    const file = path.join(fixture.root, `backfill-${code}.json`);
    const ended = await runChild(
      ['backfill', '--job', 'daily_severity', '--from', dayFromToday(-6), '--to', dayFromToday(-4), '--summary-json', file, ...flags()],
      env(),
    );
    expect(ended.exit.code, ended.stderr).toBe(code);
    expect(summaryOf(await readFile(file, 'utf8'), 'backfill').exitCode).toBe(code);
  });

  it('a SIGTERM after the summary was written changes nothing: the process exits with the code the summary stated', async () => {
    // After its summary, a run waits (at most the transport's timeout) for its lineage events to
    // leave; a consumer that never answers holds it there, and the stop comes then.
    const consumer = await startLineageConsumer({ answer: 'never' });
    try {
      const ended = await runChild(
        ['run', '--job', 'incident_detail', '--json', ...flags()],
        { ...env(), OPENLINEAGE_URL: consumer.url },
        {
          signal: 'SIGTERM',
          ready: ({ stdout }) => stdout.endsWith('}\n'),
        },
      );
      expect(ended.stderr).toContain('SIGTERM received');
      const summary = summaryOf(ended.stdout, 'run');
      expect(summary.tiles[0]!.status).toBe('succeeded');
      expect(summary.exitCode).toBe(0);
      expect(ended.exit.code).toBe(0);
    } finally {
      await consumer.close();
    }
  });

  it('bad usage: exits 2 and prints no summary (nothing ran)', async () => {
    const ended = await runChild(['run', '--job', 'no_such_job', '--json', ...flags()], env());
    expect(ended.exit.code).toBe(2);
    expect(ended.stdout).toBe('');
  });
});

// A stop that comes while a publish is under way lets it end (a COMMIT is never cut: docs/
// failure-behaviour.md), so the tile succeeds and its rows are in; the process still exits 143, and
// so must the summary say (it said 0). The publish is held where it waits for the target's advisory
// lock (the first statement of its transaction), by a session of the test's own holding that lock;
// SIGTERM is sent while it waits, and the lock released once the process has taken the signal.
const server = postgresOrSkip();

describeUnless(postgresBlocker(server))('the summary states the exit code of a process stopped during a publish that committed', () => {
  const fixture = sandboxAndRootForAll({ incidents: 40 });
  const database = usePostgresDatabase(server!);

  it('SIGTERM while the PostgreSQL publish waits for its lock, then the lock is released: the publish commits, the tile succeeds, exit 143, and the summary says 143', async () => {
    const ws = await writeWorkspace(path.join(fixture.root, 'committed'), fixture.sandbox, [
      { name: 'committed', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'postgres' }] },
    ]);
    // The lock wait outlasts the test's (lockTimeoutMs), and the stop deadline leaves the publish time to end.
    const pgEnv = await addPostgresSettings(ws.configFile, server!, database.name, { lockTimeoutMs: 60_000 }, { stopDeadlineMs: 30_000 });
    const holder = await database.client();
    let released = false;
    const release = async () => {
      if (released) return;
      released = true;
      await holder.query("SELECT pg_advisory_unlock(hashtextextended('tilehouse public.committed', 0))");
      await holder.end();
    };
    try {
      await holder.query("SELECT pg_advisory_lock(hashtextextended('tilehouse public.committed', 0))");
      const waiting = async () =>
        Number(
          (
            await psql(
              server!,
              database.name,
              "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'tilehouse committed' AND wait_event_type = 'Lock' AND wait_event = 'advisory'",
            )
          ).trim(),
        ) > 0;
      const ended = await runChild(
        ['run', '--json', '--config', ws.configFile, '--jobs', ws.jobsDir],
        { ...sandboxEnv(fixture.sandbox), ...pgEnv },
        {
          signal: 'SIGTERM',
          ready: waiting,
          afterSignal: release,
        },
      );
      expect(ended.exit.code, ended.stderr).toBe(143);
      const summary = summaryOf(ended.stdout, 'run');
      expect(summary.exitCode).toBe(143);
      // The publish under way when the stop came ended, and committed: the tile says so, the table holds the rows.
      expect(summary.tiles[0]).toMatchObject({ status: 'succeeded', rows: 40 });
      expect(await psql(server!, database.name, 'SELECT count(*) FROM committed')).toBe('40\n');
    } finally {
      await release();
    }
  }, 120_000);
});
