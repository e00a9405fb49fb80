import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SANDBOX_TILE, type Sandbox } from '../../sandbox/index.js';
import { listFiles, runCli, sandboxEnv, writeWorkspace, type Workspace, summaryOf } from '../support/cli-harness.js';
import { readCsv } from '../support/csv-read.js';
import { dailyManifestJob as daily, dailySeverityQuery, incidentDaysQuery } from '../support/queries.js';
import { sandboxesEachTest } from '../support/sandbox-fixture.js';
import { startSourceProxy } from '../support/source-proxy.js';

// Issue 26, items 4-6: windows only on a clock that was read, open windows stay open, and empty
// windows of incremental runs warn as backfill windows do.

const DAY_MS = 86_400_000;
const dayOf = (at: Date, offset = 0) => new Date(at.getTime() + offset * DAY_MS).toISOString().slice(0, 10);

const each = sandboxesEachTest();
const sandboxAt = (now: Date) => each.sandbox({ incidents: 10_000, now });

async function proxyFor(sandbox: Sandbox, options: Parameters<typeof startSourceProxy>[1]) {
  const proxy = await startSourceProxy(sandbox.url, options);
  each.afterThisTest(() => proxy.close());
  return proxy;
}

function cli(workspace: Workspace, sandbox: Sandbox, args: string[]) {
  return runCli([...args, '--config', workspace.configFile, '--jobs', workspace.jobsDir], { env: sandboxEnv(sandbox) });
}

const runSummary = (stdout: string) => summaryOf(stdout, 'run');

const backfillSummary = (stdout: string) => summaryOf(stdout, 'backfill');

const exportsAt = (sandbox: Sandbox) => sandbox.requests.filter((request) => request.endpoint === 'export').length;

/** What the source holds for [from, to) of `query`, straight from its evaluator (no rw filter), as CSV text reads back. */
function sourceRows(sandbox: Sandbox, query: typeof dailySeverityQuery | typeof incidentDaysQuery, from: string, to: string, dayColumn = 0): string[][] {
  const all = sandbox.evaluate({ ...query, items: query.items.map((item) => ({ ...item, filters: [] })) }, SANDBOX_TILE);
  return all.rows.filter((row) => (row[dayColumn] as string) >= from && (row[dayColumn] as string) < to).map((row) => row.map(String));
}

describe('a source whose token answer has no Date', () => {
  it('fails an incremental run, a backfill and plan with source_clock_unknown naming the fix, and writes nothing', async () => {
    const sandbox = await sandboxAt(new Date());
    const proxy = await proxyFor(sandbox, { tokenDate: 'absent' });
    const root = await each.tempDir();
    const today = dayOf(sandbox.now);
    const workspace = await writeWorkspace(root, sandbox, [daily({ startFrom: dayOf(sandbox.now, -2) })], { baseUrl: proxy.url, authUrl: proxy.url });

    const run = await cli(workspace, sandbox, ['run', '--json']);
    expect(run.exitCode).toBe(1);
    const summary = runSummary(run.stdout);
    expect(summary.tiles.map((tile) => tile.error?.code)).toEqual(['source_clock_unknown']);
    const message = summary.incremental![0]!.error!.message;
    expect(message).toContain(`the token answer of ${proxy.url}/oauth/token has no Date header`);
    expect(message).toContain(`set source.clock: local in ${workspace.configFile}`);
    expect(run.stderr).toContain('source_clock_unknown');

    const backfill = await cli(workspace, sandbox, ['backfill', '--job', 'daily', '--from', dayOf(sandbox.now, -2), '--to', today]);
    expect(backfill.exitCode).toBe(1);
    expect(backfill.stderr).toContain('tilehouse: source_clock_unknown:');
    expect(backfill.stderr).toContain('source.clock: local');

    const plan = await cli(workspace, sandbox, ['plan']);
    expect(plan.exitCode).toBe(1);
    expect(plan.stdout).toContain('incremental: FAILED source_clock_unknown: job daily: the token answer of');

    // No window was placed: not one export request, not one file or manifest, no offset logged.
    expect(exportsAt(sandbox)).toBe(1); // plan's page 0 (columns), after the windows were refused
    expect(await listFiles(workspace.outDir)).toEqual([]);
    for (const result of [run, backfill, plan])
      expect(result.logs.filter((line) => 'offsetSeconds' in line || String(line.msg).includes('source clock is'))).toEqual([]);
  });

  it('names a Date that does not parse, and leaves a run without windows alone', async () => {
    const sandbox = await sandboxAt(new Date());
    const proxy = await proxyFor(sandbox, { tokenDate: 'yesterday-ish' });
    const root = await each.tempDir();
    const plain = { name: 'plain', tile: SANDBOX_TILE, query: dailySeverityQuery, sinks: [{ type: 'csv' }] };
    const workspace = await writeWorkspace(root, sandbox, [daily({ startFrom: dayOf(sandbox.now) }), plain], { baseUrl: proxy.url, authUrl: proxy.url });
    const run = await cli(workspace, sandbox, ['run', '--json']);
    expect(run.exitCode).toBe(1);
    const summary = runSummary(run.stdout);
    expect(summary.tiles.map((tile) => [tile.job, tile.status, tile.error?.code])).toEqual([
      ['plain', 'succeeded', undefined],
      ['daily', 'failed', 'source_clock_unknown'],
    ]);
    expect(summary.incremental![0]!.error!.message).toContain('a Date header that does not parse ("yesterday-ish")');
    expect(await listFiles(workspace.outDir)).toEqual(['plain.csv']);
  });

  it("with source.clock: local places the windows on this machine's clock and says so in the log, the lines and the summary", async () => {
    const sandbox = await sandboxAt(new Date());
    const proxy = await proxyFor(sandbox, { tokenDate: 'absent' });
    const root = await each.tempDir();
    const [yesterday, today] = [dayOf(sandbox.now, -1), dayOf(sandbox.now)];
    const workspace = await writeWorkspace(root, sandbox, [daily({ startFrom: yesterday })], { baseUrl: proxy.url, authUrl: proxy.url, clock: 'local' });

    const run = await cli(workspace, sandbox, ['run', '--json']);
    expect(run.exitCode).toBe(0);
    const summary = runSummary(run.stdout);
    expect(summary.incremental![0]).toMatchObject({
      today,
      clock: { basis: 'local' },
      windows: [
        { from: yesterday, to: today },
        { from: today, to: dayOf(sandbox.now, 1) },
      ],
    });
    expect(run.stderr).toContain("note: windows follow this machine's clock (source.clock: local), not the source's");
    expect(run.logs.some((line) => line.clock === 'local' && String(line.msg).includes("windows follow this machine's clock (source.clock: local)"))).toBe(
      true,
    );
    expect(run.logs.filter((line) => 'offsetSeconds' in line)).toEqual([]);
    expect(await listFiles(path.join(workspace.outDir, 'daily'))).toEqual([
      `${yesterday}.csv`,
      `${yesterday}.csv.manifest.json`,
      `${today}.csv`,
      `${today}.csv.manifest.json`,
    ]);
    expect((await readCsv(path.join(workspace.outDir, 'daily', `${yesterday}.csv`))).rows).toEqual(sourceRows(sandbox, dailySeverityQuery, yesterday, today));

    const backfill = await cli(workspace, sandbox, ['backfill', '--job', 'daily', '--from', yesterday, '--to', today, '--json']);
    expect(backfill.exitCode).toBe(0);
    expect(backfillSummary(backfill.stdout).clock).toEqual({ basis: 'local' });
    expect(backfill.stderr).toContain("  note: windows follow this machine's clock (source.clock: local), not the source's");

    const plan = await cli(workspace, sandbox, ['plan']);
    expect(plan.exitCode).toBe(0);
    expect(plan.stdout).toContain(`incremental (this machine's today (source.clock: local) ${today}): next run exports`);
  });
});

describe('a source whose clock is 3 days behind the machine', () => {
  it("exports the days of the source's clock, none of the machine's, with the offset it measured", async () => {
    const machine = new Date();
    const sandbox = await sandboxAt(new Date(machine.getTime() - 3 * DAY_MS));
    const root = await each.tempDir();
    const [before, sourceToday] = [dayOf(sandbox.now, -1), dayOf(sandbox.now)];
    const workspace = await writeWorkspace(root, sandbox, [daily({ startFrom: before })]);
    const run = await cli(workspace, sandbox, ['run', '--json']);
    expect(run.exitCode).toBe(0);
    const summary = runSummary(run.stdout);
    expect(summary.incremental![0]).toMatchObject({
      today: sourceToday,
      windows: [
        { from: before, to: sourceToday },
        { from: sourceToday, to: dayOf(sandbox.now, 1) },
      ],
    });
    const clock = summary.incremental![0]!.clock;
    expect(clock?.basis).toBe('source');
    expect(Math.abs((clock as { offsetSeconds: number }).offsetSeconds + 3 * 86_400)).toBeLessThanOrEqual(5);
    expect(await listFiles(path.join(workspace.outDir, 'daily'))).toEqual([
      `${before}.csv`,
      `${before}.csv.manifest.json`,
      `${sourceToday}.csv`,
      `${sourceToday}.csv.manifest.json`,
    ]);
    const written = [
      ...(await readCsv(path.join(workspace.outDir, 'daily', `${before}.csv`))).rows,
      ...(await readCsv(path.join(workspace.outDir, 'daily', `${sourceToday}.csv`))).rows,
    ];
    const expected = sourceRows(sandbox, dailySeverityQuery, before, dayOf(sandbox.now, 1));
    expect(expected.length).toBeGreaterThan(0);
    expect(written).toEqual(expected);
  });
});

describe('an open window', () => {
  it('is exported again by the next run the same day with lookbackDays: 0, holding the rows that arrived in between; the closed day is not', async () => {
    const sandbox = await sandboxAt(new Date('2026-07-05T18:00:00Z'));
    // Today's five newest incidents have not arrived at the source when the first run reads it.
    const todays = sourceRows(sandbox, incidentDaysQuery, '2026-07-05', '2026-07-06', 1).map((row) => Number(row[0]));
    expect(todays.length).toBeGreaterThan(8);
    const late = new Set(todays.slice(-5));
    const proxy = await proxyFor(sandbox, { rows: (rows) => rows.filter((row) => !late.has(Number(row[0]))) });
    const root = await each.tempDir();
    const job = { ...daily({ startFrom: '2026-07-04' }), query: incidentDaysQuery, columns: { Number: { type: 'INT64' }, Day: { type: 'DATE' } } };
    const workspace = await writeWorkspace(root, sandbox, [job], { baseUrl: proxy.url, authUrl: proxy.url, itemsPerPage: 10_000 });
    const numbers = async (day: string) => (await readCsv(path.join(workspace.outDir, 'daily', `${day}.csv`))).rows.map((row) => Number(row[0]));
    const manifest = async (day: string) =>
      JSON.parse(await readFile(path.join(workspace.outDir, 'daily', `${day}.csv.manifest.json`), 'utf8')) as { runId: string; window: { open: boolean } };

    const first = await cli(workspace, sandbox, ['run', '--json']);
    expect(first.exitCode).toBe(0);
    expect(runSummary(first.stdout).incremental![0]).toMatchObject({
      windows: [{ from: '2026-07-04' }, { from: '2026-07-05' }],
      open: [{ from: '2026-07-05', to: '2026-07-06' }],
    });
    expect(first.stderr).toContain("open: 2026-07-05: the day had not ended on the source's clock");
    expect((await manifest('2026-07-04')).window.open).toBe(false);
    expect((await manifest('2026-07-05')).window.open).toBe(true);
    expect(await numbers('2026-07-05')).toEqual(todays.filter((number) => !late.has(number)));
    const yesterday = { manifest: await manifest('2026-07-04'), bytes: await readFile(path.join(workspace.outDir, 'daily', '2026-07-04.csv')) };

    const plan = await cli(workspace, sandbox, ['plan']);
    expect(plan.stdout).toContain(
      '    2026-07-05  (published while open, exported again; open: the day has not ended, recorded as open and exported again by the run after)\n',
    );

    proxy.settings.rows = undefined; // the late rows have arrived
    const requests = exportsAt(sandbox);
    const second = await cli(workspace, sandbox, ['run', '--json']);
    expect(second.exitCode).toBe(0);
    const report = runSummary(second.stdout).incremental![0]!;
    expect(report.windows).toEqual([{ from: '2026-07-05', to: '2026-07-06' }]);
    expect(report.reason).toContain('2026-07-05 published while open: exported again');
    expect(exportsAt(sandbox)).toBe(requests + 1);
    expect(await numbers('2026-07-05')).toEqual(todays);
    expect(await manifest('2026-07-04')).toEqual(yesterday.manifest);
    expect(await readFile(path.join(workspace.outDir, 'daily', '2026-07-04.csv'))).toEqual(yesterday.bytes);
  });
});

describe('an open backfill window', () => {
  it('is published, reported and recorded as open, and run again by backfill --resume while the closed one is skipped', async () => {
    const sandbox = await sandboxAt(new Date('2026-07-05T18:00:00Z'));
    const root = await each.tempDir();
    const workspace = await writeWorkspace(root, sandbox, [daily({ startFrom: '2026-07-01' })]);
    const args = ['backfill', '--job', 'daily', '--from', '2026-07-04', '--to', '2026-07-06', '--json'];
    const first = await cli(workspace, sandbox, args);
    expect(first.exitCode).toBe(0);
    expect(backfillSummary(first.stdout).windows.map((result) => [result.window.from, result.open])).toEqual([
      ['2026-07-04', false],
      ['2026-07-05', true],
    ]);
    expect(first.stderr).toMatch(
      /\n {2}2026-07-05\.\.2026-07-06: \d+ rows → \S+2026-07-05\.csv \(open: the day had not ended on the source's clock: recorded as open, exported again by the next incremental run or backfill --resume\)\n/,
    );
    expect(first.stderr).not.toMatch(/2026-07-04\.\.2026-07-05: .*open/);

    const resumed = await cli(workspace, sandbox, [...args, '--resume']);
    expect(resumed.exitCode).toBe(0);
    const summary = backfillSummary(resumed.stdout);
    expect(summary.skipped).toEqual([{ from: '2026-07-04', to: '2026-07-05' }]);
    expect(summary.windows.map((result) => result.window.from)).toEqual(['2026-07-05']);
  });
});

describe('an empty window of an incremental run', () => {
  // A day without incidents at the source: its window reads the neighbouring days' rows (rw is
  // widened by a day) and drops them all.
  const withoutDay = (day: string) => (rows: unknown[][]) => rows.filter((row) => row[0] !== day);

  it('prints the warning: line backfill prints for the same window, and fails it under run --strict', async () => {
    const sandbox = await sandboxAt(new Date('2026-07-05T12:00:00Z'));
    const proxy = await proxyFor(sandbox, { rows: withoutDay('2026-07-03') });
    const root = await each.tempDir();
    const workspace = await writeWorkspace(root, sandbox, [daily({ startFrom: '2026-07-02' })], {
      baseUrl: proxy.url,
      authUrl: proxy.url,
      itemsPerPage: 10_000,
    });

    const run = await cli(workspace, sandbox, ['run', '--json']);
    expect(run.exitCode).toBe(0);
    const warning =
      /^ {7}warning: (job daily: window 2026-07-03\.\.2026-07-04: all \d+ rows read had a Day outside the window; an empty window was published .*)$/m.exec(
        run.stderr,
      );
    expect(warning, run.stderr).not.toBeNull();
    expect(runSummary(run.stdout).incremental![0]!.warnings).toEqual([warning![1]]);
    expect(run.stderr.match(/warning:/g)).toHaveLength(1);

    const backfill = await cli(workspace, sandbox, ['backfill', '--job', 'daily', '--from', '2026-07-03', '--to', '2026-07-04']);
    expect(backfill.exitCode).toBe(0);
    expect(backfill.stderr).toContain(`\n    warning: ${warning![1]}\n`);

    const strictRoot = await each.tempDir();
    const strictWorkspace = await writeWorkspace(strictRoot, sandbox, [daily({ startFrom: '2026-07-02' })], {
      baseUrl: proxy.url,
      authUrl: proxy.url,
      itemsPerPage: 10_000,
    });
    const strict = await cli(strictWorkspace, sandbox, ['run', '--strict', '--json']);
    expect(strict.exitCode).toBe(1);
    const summary = runSummary(strict.stdout);
    expect(summary.tiles.map((tile) => [tile.runId.slice(-8), tile.error?.code])).toEqual([
      ['20260702', undefined],
      ['20260703', 'backfill_window_empty'],
      ['20260704', undefined],
      ['20260705', undefined],
    ]);
    expect(summary.incremental![0]!.failed).toEqual([{ from: '2026-07-03', to: '2026-07-04' }]);
    expect(strict.stderr).toContain('1 window failed; the next run starts again at 2026-07-03');
    expect((await listFiles(path.join(strictWorkspace.outDir, 'daily'))).filter((name) => name.startsWith('2026-07-03'))).toEqual([]);
  });
});
