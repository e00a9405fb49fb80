import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { loadEnvironment, loadJobs } from '../../src/config/load-config.js';
import { runBackfill } from '../../src/pipeline/windows/run-windows.js';
import { buildSinks } from '../../src/sinks/build-sinks.js';
import { DEFAULT_NOW, SANDBOX_TILE } from '../../sandbox/index.js';
import { FAST_RETRY, listFiles, runCli, sandboxEnv } from '../support/cli-harness.js';
import { readCsv } from '../support/csv-read.js';
import { dailySeverityQuery } from '../support/queries.js';
import { sandboxWorkspaceForAll } from '../support/sandbox-fixture.js';

// The sandbox's clock stands still at DEFAULT_NOW (2026-07-01), months away from the machine's:
// exactly the case where windows computed from our own clock select the wrong days.
const DAY_MS = 86_400_000;
const sourceDay = (offset: number) => new Date(DEFAULT_NOW.getTime() + offset * DAY_MS).toISOString().slice(0, 10);

const query = dailySeverityQuery;
const job = {
  name: 'daily',
  tile: SANDBOX_TILE,
  query,
  sinks: [{ type: 'csv' }],
  columns: { Day: { type: 'DATE' }, Incidents: { type: 'INT64' } },
  backfill: { item: 'day', bucketColumn: 'Day' },
};

const fixture = sandboxWorkspaceForAll({ incidents: 3000 }, [job]);

function backfill(args: string[]) {
  return runCli(['backfill', '--config', fixture.workspace.configFile, '--jobs', fixture.workspace.jobsDir, '--tile', 'daily', ...args], {
    env: sandboxEnv(fixture.sandbox),
  });
}

/** What the source holds per day, straight from its own evaluator (no rw filter). */
function sourceRows(from: string, to: string): string[][] {
  const all = fixture.sandbox.evaluate({ ...query, items: query.items.map((item) => ({ ...item, filters: [] })) }, SANDBOX_TILE);
  return all.rows.filter((row) => (row[0] as string) >= from && (row[0] as string) < to).map((row) => row.map(String));
}

describe('backfill windows follow the source clock', () => {
  it("selects the days asked for when the source's clock is months away from ours", async () => {
    const from = sourceDay(-12);
    const to = sourceDay(-9);
    const result = await backfill(['--from', from, '--to', to]);
    expect(result.stderr).toContain(`3 of 3 windows succeeded`);
    expect(result.exitCode).toBe(0);
    const offset = result.logs.find((line) => typeof line.offsetSeconds === 'number') as { offsetSeconds: number } | undefined;
    expect(Math.abs(offset!.offsetSeconds - Math.round((DEFAULT_NOW.getTime() - Date.now()) / 1000))).toBeLessThanOrEqual(5);
    const written: string[][] = [];
    for (const date of [from, sourceDay(-11), sourceDay(-10)])
      written.push(...((await readCsv(path.join(fixture.workspace.outDir, 'daily', `${date}.csv`))).rows as string[][]));
    expect(written).toEqual(sourceRows(from, to));
    expect(new Set(written.map((row) => row[0]))).toEqual(new Set([from, sourceDay(-11), sourceDay(-10)]));
  });

  it("warns about a window after the source's today, and fails it under --strict without a request", async () => {
    const from = sourceDay(2);
    const to = sourceDay(3);
    const lenient = await backfill(['--from', from, '--to', to]);
    expect(lenient.exitCode).toBe(0);
    expect(lenient.stderr).toMatch(new RegExp(`warning: job daily: window ${from}\\.\\.${to} starts after today \\(2026-07-01 on the source's clock\\)`));

    const requestsBefore = fixture.sandbox.requests.filter((r) => r.endpoint === 'export').length;
    const strict = await backfill(['--from', from, '--to', to, '--strict']);
    expect(strict.exitCode).toBe(1);
    expect(strict.stderr).toContain('FAILED backfill_window_future');
    expect(fixture.sandbox.requests.filter((r) => r.endpoint === 'export').length).toBe(requestsBefore);
  });
});

describe('a window whose rows all fall outside it', () => {
  // Forcing our own clock onto a source whose clock differs reproduces the old behaviour: every
  // row read belongs to other days and is dropped by the bucket column.
  async function backfillWithLocalClock(strict: boolean) {
    const environment = await loadEnvironment(fixture.workspace.configFile);
    const [loaded] = await loadJobs(fixture.workspace.jobsDir);
    const windowJob = { ...loaded!, sinks: [{ type: 'csv' as const, path: '{name}/{date}.csv', gzip: false }] };
    return runBackfill(windowJob, {
      environment,
      credentials: { clientId: fixture.sandbox.clientId, clientSecret: fixture.sandbox.clientSecret },
      logger: pino({ level: 'silent' }),
      sinks: await buildSinks(windowJob, environment),
      windows: [{ from: sourceDay(-20), to: sourceDay(-19) }],
      concurrency: 1,
      retry: FAST_RETRY,
      now: () => new Date(DEFAULT_NOW.getTime() + 200 * DAY_MS),
      strict,
    });
  }

  it('is published with a warning, or refused under --strict leaving the previous file untouched', async () => {
    const file = path.join(fixture.workspace.outDir, 'daily', `${sourceDay(-20)}.csv`);
    await writeFile(file, 'previous\r\n');
    const strict = await backfillWithLocalClock(true);
    expect(strict.windows[0]!.summary.error?.code).toBe('backfill_window_empty');
    expect(await readFile(file, 'utf8')).toBe('previous\r\n');
    expect((await listFiles(path.join(fixture.workspace.outDir, 'daily'))).filter((name) => name.includes('.tmp'))).toEqual([]);

    const lenient = await backfillWithLocalClock(false);
    expect(lenient.windows[0]!.summary.status).toBe('succeeded');
    expect(lenient.windows[0]!.warnings.join('\n')).toMatch(/all \d+ rows read had a Day outside the window; an empty window was published/);
  });
});
