// Issue 63: the run history as the source of truth of `status`. With the default settings (a CSV
// and a Parquet sink without `manifest: true`), `status` names the run that published each file
// from the history, and after a filter edit says old → new once, from that run's recorded
// definition; a file changed by hand since is not taken for the run's. (A day window's target,
// told as its backfill's or incremental run's run and window: status-window-definition.test.ts.)
import { readFile, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { runCli, sandboxEnv, writeWorkspace } from '../support/cli-harness.js';
import { detailQuery, detailQueryAbove } from '../support/queries.js';
import { sandboxAndRootForAll } from '../support/sandbox-fixture.js';

const NIGHT_1 = { at: '2026-11-27T02:00:00.000Z', runId: '20261127T020000Z-a1b2c3' };
const NIGHT_2 = { at: '2026-11-28T02:00:00.000Z', runId: '20261128T020000Z-d4e5f6' };
const SCHEDULE = { cron: '0 2 * * *', timezone: 'UTC' };

/** `status`'s lines of one job: its line and the indented ones below it. */
function jobBlock(text: string, name: string): string[] {
  const lines = text.trimEnd().split('\n');
  const start = lines.findIndex((line) => line.startsWith(`${name} `));
  const end = lines.findIndex((line, index) => index > start && !line.startsWith(' '));
  return lines.slice(start, end === -1 ? undefined : end);
}

/** Durations differ from run to run; a fast night's time beside the first night's cold start may be far off too (not asserted here). */
const steady = (lines: readonly string[]) => lines.map((line) => line.replace(/\d+\.\d s\b/g, 'N.N s').replace(/(FAR OFF: 0 rows)(, [a-z: ]*N\.N s)+$/, '$1'));

describe('status with the default settings: the run history names the run', () => {
  const fixture = sandboxAndRootForAll({ incidents: 130 });

  it('names the run that wrote a CSV and a Parquet file without manifest, says the filter edit once, old → new, and not a file changed by hand', async () => {
    const jobs = (night: 1 | 2) => [
      // The second night's filter was edited: no incident is numbered that high (the guard refuses the empty export).
      {
        name: 'open_csv',
        tile: SANDBOX_TILE,
        schedule: SCHEDULE,
        query: night === 1 ? detailQueryAbove(0) : detailQueryAbove(100_000),
        sinks: [{ type: 'csv' }],
      },
      { name: 'open_parquet', tile: SANDBOX_TILE, schedule: SCHEDULE, query: detailQuery, sinks: [{ type: 'parquet' }] },
    ];
    const ws = await writeWorkspace(fixture.root, fixture.sandbox, jobs(1));
    const config = parse(await readFile(ws.configFile, 'utf8')) as { sinks: Record<string, unknown> };
    await writeFile(ws.configFile, stringify({ ...config, sinks: { ...config.sinks, parquet: { directory: ws.outDir } } }));
    const env = sandboxEnv(fixture.sandbox);
    const flags = ['--config', ws.configFile, '--jobs', ws.jobsDir];
    const cli = (now: string, args: string[]) => runCli([...args, ...flags], { env, seams: { now: () => new Date(now) } });
    const csv = path.join(ws.outDir, 'open_csv.csv');
    const parquet = path.join(ws.outDir, 'open_parquet.parquet');

    const night1 = await cli(NIGHT_1.at, ['run', '--run-id', NIGHT_1.runId]);
    expect(night1.exitCode, night1.stderr).toBe(0);
    const first = await cli('2026-11-27T07:30:00.000Z', ['status']);
    expect(first.exitCode, first.stdout).toBe(0);
    expect(steady(jobBlock(first.stdout, 'open_csv'))).toEqual([
      'open_csv (tile sandbox-tile; schedule 0 2 * * * UTC, last due 2026-11-27 02:00:00 UTC)',
      `  last run: OK, run ${NIGHT_1.runId} of 2026-11-27 02:00:00 UTC; 130 rows, 3 pages in N.N s`,
      '    time: source N.N s, reading N.N s, prepare csv N.N s, publish csv N.N s',
      `  csv ${csv}: run ${NIGHT_1.runId} of 2026-11-27 02:00:00 UTC, 130 rows (the run history; file modified; rows counted)`,
    ]);
    expect(jobBlock(first.stdout, 'open_parquet').at(-1)).toBe(
      `  parquet ${parquet}: run ${NIGHT_1.runId} of 2026-11-27 02:00:00 UTC, 130 rows (the run history; file modified; rows counted)`,
    );

    await writeWorkspace(fixture.root, fixture.sandbox, jobs(2));
    await writeFile(ws.configFile, stringify({ ...config, sinks: { ...config.sinks, parquet: { directory: ws.outDir } } }));
    const night2 = await cli(NIGHT_2.at, ['run', '--run-id', NIGHT_2.runId]);
    expect(night2.exitCode).toBe(1);
    const morning = await cli('2026-11-28T07:30:00.000Z', ['status']);
    const open = steady(jobBlock(morning.stdout, 'open_csv'));
    expect(open[1]).toBe(`  last run: REFUSED publish_guard_tripped, run ${NIGHT_2.runId} of 2026-11-28 02:00:00 UTC; 0 rows, 1 page in N.N s`);
    expect(open[2]).toMatch(/^ {4}job open_csv: publish guard tripped, nothing published: \S+open_csv\.csv: this export has no rows and it holds 130 rows /);
    expect(open.slice(3)).toEqual([
      '    time: source N.N s, reading N.N s, prepare csv N.N s',
      // The refused night read no rows where the first read 130.
      '    usually: 130 rows in N.N s (median of 1 earlier successful run); FAR OFF: 0 rows',
      `  csv ${csv}: run ${NIGHT_1.runId} of 2026-11-27 02:00:00 UTC, 130 rows (the run history; file modified; rows counted); ` +
        `NOT PUBLISHED: the run due 2026-11-28 02:00:00 UTC, run ${NIGHT_2.runId}, REFUSED publish_guard_tripped`,
      // Said once: the block, from the history's record of the run that wrote the file; no target line repeats it.
      `  changed since run ${NIGHT_1.runId} (old → new):`,
      '    filters on Number: [{"operator":"gt","values":["0"]}] → [{"operator":"gt","values":["100000"]}]',
      // The repair fixes first (repairs.ts), from the change the history told: the edit to undo at its line.
      `  repair: undo the edit since run ${NIGHT_1.runId}, then run the job again:`,
      `            ${ws.jobsDir}/open_csv.yaml:13: filters on Number is [{"operator":"gt","values":["100000"]}]; set it back to [{"operator":"gt","values":["0"]}]`,
      `          tilehouse run ${flags.join(' ')} --job open_csv`,
      '          kubectl create job -n tilehouse --from=cronjob/tilehouse-open-csv tilehouse-open-csv-$(date +%s)',
      `          if the change is meant: tilehouse run ${flags.join(' ')} --job open_csv --allow-shrink  # publishes the smaller export over what the targets hold (TILEHOUSE_ALLOW_SHRINK=1 on the cluster)`,
    ]);
    expect(morning.stdout.split('\n').filter((line) => line.includes('changed since'))).toHaveLength(1);
    expect(jobBlock(morning.stdout, 'open_parquet').at(-1)).toBe(
      `  parquet ${parquet}: run ${NIGHT_2.runId} of 2026-11-28 02:00:00 UTC, 130 rows (the run history; file modified; rows counted)`,
    );
    const json = JSON.parse((await cli('2026-11-28T07:30:00.000Z', ['status', '--json'])).stdout) as Array<Record<string, any>>;
    const openJson = json.find((job) => job.job === 'open_csv')!;
    expect(openJson.targets).toEqual([
      {
        sink: 'csv',
        target: csv,
        state: 'written',
        runId: NIGHT_1.runId,
        at: NIGHT_1.at,
        rows: 130,
        readFrom: 'the run history; file modified; rows counted',
        // The line leaves it to the block below (said once); --json keeps both.
        changedSince: [{ part: 'query', details: ['filters on Number'] }],
        late: { due: NIGHT_2.at, notPublishedBy: { runId: NIGHT_2.runId, verdict: 'refused', code: 'publish_guard_tripped' } },
      },
    ]);
    expect(openJson.changes).toEqual({
      sinceRunId: NIGHT_1.runId,
      values: [{ part: 'filters on Number', old: '[{"operator":"gt","values":["0"]}]', new: '[{"operator":"gt","values":["100000"]}]' }],
    });

    // A file changed after the run that the history says wrote it (by hand, or by a run the history
    // does not keep) is not that run's: it names no run.
    const later = new Date(Date.now() + 3_600_000);
    await utimes(parquet, later, later);
    const touched = jobBlock((await cli('2026-11-28T07:30:00.000Z', ['status'])).stdout, 'open_parquet').at(-1);
    expect(touched).toBe(
      `  parquet ${parquet}: run unknown, last changed ${later
        .toISOString()
        .replace('T', ' ')
        .replace(/\.\d+Z$/, ' UTC')}, 130 rows (file modified; rows counted): ` +
        `it changed outside run ${NIGHT_2.runId}, the last the run history says published it: by hand, or by a run the history does not keep`,
    );
  });
});
