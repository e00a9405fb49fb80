import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, sandboxEnv, writeWorkspace, type Workspace, summaryOf } from '../support/cli-harness.js';
import { dailyManifestJob as daily } from '../support/queries.js';
import { sandboxesEachTest } from '../support/sandbox-fixture.js';
import { startSourceProxy } from '../support/source-proxy.js';

// The publish guard of windowed jobs: a backfill window and an incremental catch-up window that
// come back empty over days whose files held rows are refused, the files unchanged; and an empty
// window that is still open (today's) is said plainly, without the warning that blames a clock.

const each = sandboxesEachTest();

async function setUp(incremental: Record<string, unknown>) {
  const sandbox = await each.sandbox({ incidents: 10_000, now: new Date('2026-07-05T12:00:00Z') });
  const proxy = await startSourceProxy(sandbox.url, {});
  each.afterThisTest(() => proxy.close());
  const root = await each.tempDir();
  const workspace = await writeWorkspace(root, sandbox, [daily(incremental)], { baseUrl: proxy.url, authUrl: proxy.url, itemsPerPage: 10_000 });
  const cli = (args: string[]) => runCli([...args, '--config', workspace.configFile, '--jobs', workspace.jobsDir], { env: sandboxEnv(sandbox) });
  /** The source answers without the rows of these days from now on. */
  const withoutDays = (...days: string[]) => {
    proxy.settings.rows = (rows) => rows.filter((row) => !days.includes(String(row[0])));
  };
  const file = (day: string) => path.join(workspace.outDir, 'daily', `${day}.csv`);
  return { cli, withoutDays, file, workspace: workspace as Workspace };
}

describe('the publish guard of windowed jobs', () => {
  it('refuses a backfill window that comes back empty over a day whose file held rows; the other windows publish; --allow-shrink publishes it', async () => {
    const { cli, withoutDays, file } = await setUp({ startFrom: '2026-07-01' });
    const backfill = ['backfill', '--job', 'daily', '--from', '2026-07-02', '--to', '2026-07-04', '--json'];
    expect((await cli(backfill)).exitCode).toBe(0);
    const before = await readFile(file('2026-07-03'));

    withoutDays('2026-07-03');
    const refused = await cli(backfill);
    expect(refused.exitCode).toBe(1);
    const summary = summaryOf(refused.stdout, 'backfill');
    expect(summary.windows.map((result) => [result.window.from, result.summary.error?.code])).toEqual([
      ['2026-07-02', undefined],
      ['2026-07-03', 'publish_guard_tripped'],
    ]);
    expect(summary.windows[1]!.summary.guard).toMatchObject({ tripped: true, verdicts: [{ rule: 'empty', exported: 0 }] });
    expect(refused.stderr).toContain('--allow-shrink');
    expect((await readFile(file('2026-07-03'))).equals(before)).toBe(true);

    const overridden = await cli([...backfill, '--allow-shrink']);
    expect(overridden.exitCode).toBe(0);
    expect((await readFile(file('2026-07-03'), 'utf8')).trim().split('\n')).toHaveLength(1);
  });

  it('refuses an incremental catch-up window (lookbackDays) that comes back empty over a day that held rows', async () => {
    const { cli, withoutDays, file } = await setUp({ startFrom: '2026-07-02', lookbackDays: 1 });
    expect((await cli(['run', '--json'])).exitCode).toBe(0);
    const before = await readFile(file('2026-07-04'));

    withoutDays('2026-07-04');
    const refused = await cli(['run', '--json']);
    expect(refused.exitCode).toBe(1);
    const summary = summaryOf(refused.stdout, 'run');
    const tile = summary.tiles.find((candidate) => candidate.runId.endsWith('20260704'))!;
    expect(tile).toMatchObject({ status: 'failed', error: { code: 'publish_guard_tripped' }, guard: { tripped: true, verdicts: [{ rule: 'empty' }] } });
    expect((await readFile(file('2026-07-04'))).equals(before)).toBe(true);
  });

  it("says an empty open window (today's) plainly, without the clock warning; an ended one still warns", async () => {
    const { cli, withoutDays } = await setUp({ startFrom: '2026-07-03' });
    withoutDays('2026-07-05', '2026-07-04');
    const run = await cli(['run', '--json']);
    expect(run.exitCode).toBe(0);
    // 07-04 has ended: the warning stays. 07-05 is today's: no warning, a plain line.
    expect(run.stderr.match(/warning:/g)).toHaveLength(1);
    expect(run.stderr).toMatch(/warning: job daily: window 2026-07-04\.\.2026-07-05: all \d+ rows read had a Day outside the window/);
    expect(run.stderr).not.toMatch(/window 2026-07-05\.\.2026-07-06: all \d+ rows read/);
    expect(
      run.logs.some((line) => String(line.msg).includes("window 2026-07-05..2026-07-06 is still open (today on the source's clock) and has no rows yet")),
    ).toBe(true);
  });
});
