import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { listFiles, runCli, sandboxEnv, refusalCode } from '../support/cli-harness.js';
import { readCsv } from '../support/csv-read.js';
import { writeBigQueryWorkspace } from '../support/bigquery-workspace.js';
import { dailySeverityQuery } from '../support/queries.js';
import { dayFromToday, sourceRowsBetween } from '../support/window-oracle.js';
import { sandboxWorkspaceForAll } from '../support/sandbox-fixture.js';

const query = dailySeverityQuery;
const job = {
  name: 'daily_severity',
  tile: SANDBOX_TILE,
  timezone: 'Europe/Berlin',
  query,
  sinks: [{ type: 'csv' }],
  columns: { Day: { type: 'DATE' }, Incidents: { type: 'INT64' } },
  backfill: { item: 'day', bucketColumn: 'Day' },
};

// rw windows are relative to the server's "now", which must be the real clock here.
const fixture = sandboxWorkspaceForAll({ incidents: 4000, now: new Date() }, [job, { ...job, name: 'approximate', backfill: { item: 'Day' } }], {
  itemsPerPage: 10,
});

function backfill(args: string[]) {
  return runCli(['backfill', '--config', fixture.workspace.configFile, '--jobs', fixture.workspace.jobsDir, ...args], { env: sandboxEnv(fixture.sandbox) });
}

async function windowRows(name: string, date: string): Promise<string[][]> {
  return (await readCsv(path.join(fixture.workspace.outDir, name, `${date}.csv`))).rows as string[][];
}

describe('tilehouse backfill', () => {
  it('writes each day window to its own file; together they equal the direct export, none missing or duplicated', async () => {
    const from = dayFromToday(-20);
    const to = dayFromToday(-10);
    const result = await backfill(['--tile', 'daily_severity', '--from', from, '--to', to, '--concurrency', '3']);
    expect(result.stderr).toContain(`backfill daily_severity ${from}..${to} by day: 10 of 10 windows succeeded`);
    expect(result.exitCode).toBe(0);

    const files = (await listFiles(path.join(fixture.workspace.outDir, 'daily_severity'))).filter((f) => f.endsWith('.csv'));
    expect(files).toHaveLength(10);
    const union: string[][] = [];
    for (const file of files) {
      const date = file.replace('.csv', '');
      const rows = await windowRows('daily_severity', date);
      expect(
        rows.every((row) => row[0] === date),
        `${file} holds rows of another day`,
      ).toBe(true);
      union.push(...rows);
    }
    expect(union).toEqual(sourceRowsBetween(fixture.sandbox, query, from, to));
    expect(union.length).toBeGreaterThan(10);
  });

  it('keeps week windows exact although their edges fall mid-day in Berlin against UTC buckets', async () => {
    const from = dayFromToday(-40);
    const to = dayFromToday(-19);
    const result = await backfill(['--tile', 'daily_severity', '--from', from, '--to', to, '--step', 'week']);
    expect(result.exitCode).toBe(0);
    const starts = [from, dayFromToday(-33), dayFromToday(-26)];
    const union: string[][] = [];
    for (const [i, start] of starts.entries()) {
      const end = starts[i + 1] ?? to;
      const rows = await windowRows('daily_severity', start);
      expect(rows.every((row) => row[0]! >= start && row[0]! < end)).toBe(true);
      union.push(...rows);
    }
    expect(union).toEqual(sourceRowsBetween(fixture.sandbox, query, from, to));
  });

  it('replaces a window when it is run again', async () => {
    const date = dayFromToday(-5);
    expect((await backfill(['--tile', 'daily_severity', '--from', date, '--to', dayFromToday(-4)])).exitCode).toBe(0);
    const file = path.join(fixture.workspace.outDir, 'daily_severity', `${date}.csv`);
    const first = await readFile(file, 'utf8');
    await writeFile(file, 'tampered\r\n');
    expect((await backfill(['--tile', 'daily_severity', '--from', date, '--to', dayFromToday(-4)])).exitCode).toBe(0);
    expect(await readFile(file, 'utf8')).toBe(first);
  });

  it('lists failed windows with the command that re-runs only them, and that command works', async () => {
    const from = dayFromToday(-3);
    const to = dayFromToday(-1);
    fixture.sandbox.inject({ endpoint: 'export', kind: 'server-error', status: 503, times: Infinity });
    const failed = await backfill(['--tile', 'daily_severity', '--from', from, '--to', to]);
    fixture.sandbox.clearFaults();
    expect(failed.exitCode).toBe(1);
    const rerun = `tilehouse backfill --job daily_severity --from ${from} --to ${to} --step day --config ${fixture.workspace.configFile} --jobs ${fixture.workspace.jobsDir}`;
    expect(failed.stderr).toContain(`failed windows: 2; re-run only them with:\n  ${rerun}`);

    const again = await runCli(rerun.split(' ').slice(1), { env: sandboxEnv(fixture.sandbox) });
    expect(again.exitCode).toBe(0);
    expect([...(await windowRows('daily_severity', from)), ...(await windowRows('daily_severity', dayFromToday(-2)))]).toEqual(
      sourceRowsBetween(fixture.sandbox, query, from, to),
    );
  });

  it('shows windows done, rows and an ETA on a terminal', async () => {
    const result = await runCli(
      [
        'backfill',
        '--config',
        fixture.workspace.configFile,
        '--jobs',
        fixture.workspace.jobsDir,
        '--tile',
        'daily_severity',
        '--from',
        dayFromToday(-30),
        '--to',
        dayFromToday(-27),
      ],
      {
        env: sandboxEnv(fixture.sandbox),
        io: { interactive: true },
      },
    );
    expect(result.exitCode).toBe(0);
    // Redrawn in place (at most ~10 times a second), erased before the summary.
    const pieces = result.stderr.split('\r\x1b[K');
    const summary = pieces.pop()!;
    const updates = pieces.filter((update) => update !== '');
    expect(updates.length).toBeGreaterThanOrEqual(1);
    for (const update of updates) expect(update).toMatch(/^daily_severity {2}[123]\/3 windows, \d+ rows, ETA \d+s$/);
    expect(summary).toMatch(/^backfill daily_severity \S+ by day: 3 of 3 windows succeeded, \d+ rows\n/);
  });

  it('says so when the job names no bucket column and windows are only exact to within a day', async () => {
    const result = await backfill(['--tile', 'approximate', '--from', dayFromToday(-8), '--to', dayFromToday(-7)]);
    expect(result.exitCode).toBe(0);
    expect(result.stderr).toContain('exact only to within one day');
  });

  it.each([
    { args: ['--tile', 'daily_severity', '--from', '2026-02-30', '--to', '2026-03-05'], says: /--from must be a date YYYY-MM-DD, got "2026-02-30"/ },
    { args: ['--tile', 'daily_severity', '--from', '2026-03-05', '--to', '2026-03-01'], says: /--to \(2026-03-01\) must be after --from/ },
    { args: ['--tile', 'daily_severity', '--from', '2026-03-01'], says: /--to is required/ },
    { args: ['--tile', 'daily_severity', '--from', '2026-03-01', '--to', '2026-03-05', '--step', 'hour'], says: /--step must be one of day, week, month/ },
  ])('refuses bad usage with exit 2: $says', async ({ args, says }) => {
    const result = await backfill(args);
    expect(result.exitCode).toBe(2);
    expect(refusalCode(result)).toBe('usage_invalid');
    expect(result.stderr).toMatch(says);
  });

  it('refuses --concurrency above 1 for a job that merges into BigQuery (exit 2, nothing requested)', async () => {
    const merging = { ...job, name: 'merged', sinks: [{ type: 'bigquery', writeMode: 'merge', primaryKey: ['Day', 'Severity'] }] };
    const ws = await writeBigQueryWorkspace(path.join(fixture.root, 'merge'), fixture.sandbox, [merging], { projectId: 'p', dataset: 'd' });
    const requests = fixture.sandbox.requests.length;
    const result = await runCli(
      [
        'backfill',
        '--config',
        ws.configFile,
        '--jobs',
        ws.jobsDir,
        '--job',
        'merged',
        '--from',
        dayFromToday(-3),
        '--to',
        dayFromToday(-1),
        '--concurrency',
        '2',
      ],
      { env: sandboxEnv(fixture.sandbox) },
    );
    expect(result.exitCode).toBe(2);
    expect(refusalCode(result)).toBe('usage_invalid');
    expect(result.stderr).toContain(
      "backfill: --concurrency 2: job merged's sinks[0] merges by key, which takes windows one at a time (leave --concurrency out)",
    );
    expect(fixture.sandbox.requests.length).toBe(requests);
  });
});
