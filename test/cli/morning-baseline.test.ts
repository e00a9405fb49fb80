// Issue 63's baseline: `status` gives the last run's rows and time beside the median of the job's
// earlier successful runs, and says FAR OFF when they are far from it: a night whose source
// answered 1.5 s late per page ("source 3.1 s (usually 0.1 s)"), a night of a quarter of the rows.
// A usual night (a few rows fewer, the same time give or take) is not flagged.
import { describe, expect, it } from 'vitest';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { runCli, sandboxEnv, writeWorkspace } from '../support/cli-harness.js';
import { detailQuery, detailQueryAbove } from '../support/queries.js';
import { sandboxAndRootForAll } from '../support/sandbox-fixture.js';

const SCHEDULE = { cron: '0 2 * * *', timezone: 'UTC' };
const night = (day: number) => ({ at: `2026-11-${String(day).padStart(2, '0')}T02:00:00.000Z`, runId: `202611${String(day).padStart(2, '0')}T020000Z-b0b0b0` });

/** The `last run:` line and the indented lines below it that tell of that run. */
function lastRunLines(stdout: string): string[] {
  const lines = stdout.trimEnd().split('\n');
  const at = lines.findIndex((line) => line.startsWith('  last run: '));
  const end = lines.findIndex((line, index) => index > at && !line.startsWith('    '));
  return lines.slice(at, end === -1 ? undefined : end);
}

const steady = (lines: readonly string[]) => lines.map((line) => line.replace(/\d+\.\d s\b/g, 'N.N s'));

describe("a run beside the job's usual in status", () => {
  const fixture = sandboxAndRootForAll({ incidents: 130 });

  it('says a usual night is usual, and a slow night and a small one FAR OFF, in the lines and in --json', async () => {
    const job = (query: object) => ({ name: 'nightly', tile: SANDBOX_TILE, schedule: SCHEDULE, query, sinks: [{ type: 'csv', manifest: true }] });
    const ws = await writeWorkspace(fixture.root, fixture.sandbox, [job(detailQuery)]);
    const env = sandboxEnv(fixture.sandbox);
    const flags = ['--config', ws.configFile, '--jobs', ws.jobsDir];
    const cli = (now: string, args: string[]) => runCli([...args, ...flags], { env, seams: { now: () => new Date(now) } });
    const run = async (day: number, extra: string[] = []) => {
      const result = await cli(night(day).at, ['run', '--run-id', night(day).runId, ...extra]);
      expect(result.exitCode, result.stderr).toBe(0);
    };
    const morning = async (day: number) => {
      const at = `2026-11-${String(day).padStart(2, '0')}T07:30:00.000Z`;
      const [text, json] = await Promise.all([cli(at, ['status']), cli(at, ['status', '--json'])]);
      return { lines: lastRunLines(text.stdout), lastRun: (JSON.parse(json.stdout) as Array<{ lastRun: Record<string, any> }>)[0]!.lastRun };
    };

    // The first night has nothing to compare with.
    await run(1);
    const first = await morning(1);
    expect(first.lines.some((line) => line.startsWith('    usually: '))).toBe(false);
    expect(first.lastRun).not.toHaveProperty('baseline');

    // Three usual nights; the fourth has 120 rows of the 130 (some incidents closed): no news.
    await run(2);
    await run(3);
    await writeWorkspace(fixture.root, fixture.sandbox, [job(detailQueryAbove(10))]);
    await run(4);
    const usual = await morning(4);
    expect(steady(usual.lines)).toEqual([
      `  last run: OK, run ${night(4).runId} of 2026-11-04 02:00:00 UTC; 120 rows, 3 pages in N.N s`,
      '    time: source N.N s, reading N.N s, prepare csv N.N s, publish csv N.N s',
      '    usually: 130 rows in N.N s (median of 3 earlier successful runs)',
    ]);
    expect(usual.lastRun.baseline).toMatchObject({ runs: 3, rows: 130, farOff: [] });
    expect(Object.keys(usual.lastRun.baseline.timings)).toEqual(['source', 'reading', 'prepare:csv', 'publish:csv']);

    // The fifth night's source answers each page after the first 1.5 s late: 3 s in all, far off a usual night even on a busy
    // machine (the rows' median of 130, 130, 130, 120 is 130).
    await writeWorkspace(fixture.root, fixture.sandbox, [job(detailQuery)]);
    for (const pageNumber of [1, 2]) fixture.sandbox.inject({ kind: 'delay', endpoint: 'export', pageNumber, delayMs: 1_500, times: Number.POSITIVE_INFINITY });
    await run(5);
    fixture.sandbox.clearFaults();
    const slow = await morning(5);
    expect(steady(slow.lines)).toEqual([
      `  last run: OK, run ${night(5).runId} of 2026-11-05 02:00:00 UTC; 130 rows, 3 pages in N.N s`,
      '    time: source N.N s (usually N.N s), reading N.N s, prepare csv N.N s, publish csv N.N s',
      '    usually: 130 rows in N.N s (median of 4 earlier successful runs); FAR OFF: N.N s, source N.N s',
    ]);
    const { baseline } = slow.lastRun;
    expect(baseline.farOff.map((far: { measure: string }) => far.measure)).toEqual(['durationMs', 'timings.source']);
    const source = baseline.farOff[1] as { value: number; median: number };
    expect(source.value).toBe(slow.lastRun.timings.source);
    expect(source.value).toBeGreaterThanOrEqual(1_500);
    expect(source.median).toBe(baseline.timings.source);
    // The line shows the figures of the JSON: this run's source time, and the median beside it.
    const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
    expect(slow.lines[1]).toContain(`source ${seconds(source.value)} (usually ${seconds(source.median)})`);

    // The sixth night exports the incidents above 100 only (30 rows), meant: FAR OFF in rows.
    await writeWorkspace(fixture.root, fixture.sandbox, [job(detailQueryAbove(100))]);
    await run(6, ['--allow-shrink']);
    const small = await morning(6);
    expect(steady(small.lines).at(-1)).toBe('    usually: 130 rows in N.N s (median of 5 earlier successful runs); FAR OFF: 30 rows');
    expect(small.lastRun.baseline.farOff).toEqual([{ measure: 'rows', value: 30, median: 130 }]);
  }, 60_000);
});
