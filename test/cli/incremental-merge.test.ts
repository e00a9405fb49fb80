// An incremental job whose BigQuery sink merges by key (`writeMode: merge`), end to end: `tilehouse
// run` against the sandbox, whose clock is moved from run to run, into the emulator (behind the
// copy proxy). The sandbox's incidents are created relative to its "now", so the same incident
// numbers come back on later days with other values when the clock moves: the day-5 run has keys
// the day-1 run wrote to update, not only new ones to insert.
import path from 'node:path';
import { expect, it } from 'vitest';
import { SANDBOX_TILE, type Sandbox } from '../../sandbox/index.js';
import { describeWithEmulator, uniqueDatasetId } from '../support/bigquery-emulator.js';
import { readTable, stagingTables } from '../support/bigquery-read.js';
import { copyJobProxyForAll, runOnBigQuery } from '../support/bigquery-runs.js';
import { writeBigQueryWorkspace } from '../support/bigquery-workspace.js';
import { sandboxEnv, summaryOf } from '../support/cli-harness.js';
import { incidentDaysQuery } from '../support/queries.js';
import { spawnCli } from '../support/spawn-cli.js';
import { sandboxesEachTest } from '../support/sandbox-fixture.js';
import { tempDirForAll } from '../support/temp-dir-hooks.js';

const TABLE = 'incident_days';
/** One row per incident, with the day it was created as the bucket the windows filter, and when. */
const [number, day, severity] = incidentDaysQuery.items;
const query = {
  ...incidentDaysQuery,
  items: [number, day, { header: 'Created', formula: '[incident.created]', dataType: 'datetime', filters: [] }, severity],
};
const job = (lookbackDays: number) => ({
  name: TABLE,
  tile: SANDBOX_TILE,
  query,
  columns: { Number: { type: 'INT64' }, Day: { type: 'DATE' } },
  sinks: [{ type: 'bigquery', writeMode: 'merge', primaryKey: ['Number'] }],
  incremental: { item: 'day', bucketColumn: 'Day', startFrom: '2026-07-01', lookbackDays },
});

describeWithEmulator('an incremental job with writeMode: merge', (endpoint) => {
  const each = sandboxesEachTest();
  const bigquery = copyJobProxyForAll(endpoint);
  const temp = tempDirForAll();
  const dataset = uniqueDatasetId('incremental_merge');

  const sandboxAt = (day: string) => each.sandbox({ incidents: 4000, now: new Date(`${day}T12:00:00Z`) });

  async function run(sandbox: Sandbox, name: string, lookbackDays = 0) {
    const ws = await writeBigQueryWorkspace(path.join(temp.path, name), sandbox, [job(lookbackDays)], { projectId: endpoint.projectId, dataset });
    const result = await runOnBigQuery(ws, sandbox, bigquery.client, ['--json']);
    expect(result.exitCode, result.stderr).toBe(0);
    const summary = summaryOf(result.stdout, 'run');
    return { ...result, summary, report: summary.incremental![0]! };
  }

  /** number -> "day|created|severity", as the source holds the incidents created in [from, to). */
  function sourceRows(sandbox: Sandbox, from: string, to: string): Map<number, string> {
    const all = sandbox.evaluate({ ...query, items: query.items.map((item) => ({ ...item, filters: [] })) }, SANDBOX_TILE);
    const inWindow = all.rows.filter((row) => (row[1] as string) >= from && (row[1] as string) < to);
    return new Map(
      inWindow.map(([number, day, created, severity]) => [
        number as number,
        `${day as string}|${new Date(created as number).toISOString()}|${severity as string}`,
      ]),
    );
  }

  /** The table as number -> "day|created|severity" (each key once, asserted), and each number's _run_id. */
  async function tableRows(): Promise<{ values: Map<number, string>; runIds: Map<number, string> }> {
    const rows = await readTable(bigquery.client, { projectId: endpoint.projectId, dataset, table: TABLE }, 'number');
    const numbers = rows.map((row) => Number(row.number));
    expect(new Set(numbers).size).toBe(numbers.length);
    return {
      values: new Map(rows.map((row) => [Number(row.number), `${String(row.day)}|${String(row.created)}|${String(row.severity)}`])),
      runIds: new Map(rows.map((row) => [Number(row.number), String(row._run_id)])),
    };
  }

  type LedgerLine = { window_from: string; status: string; published: boolean; target: string; run_id: string; window_open: boolean | null };
  async function ledger(): Promise<LedgerLine[]> {
    const [rows] = await bigquery.client.query({
      query: `SELECT CAST(window_from AS STRING) AS window_from, status, published, target, run_id, window_open FROM \`${endpoint.projectId}.${dataset}._tilehouse_runs\` WHERE job = '${TABLE}' ORDER BY recorded_at, window_from`,
    });
    return rows as LedgerLine[];
  }

  const exports = (sandbox: Sandbox) => sandbox.requests.filter((request) => request.endpoint === 'export').length;

  it('merges day 1 on day 1 (open) and days 1-5 on day 5, each key once with its latest values; the ledger shows each window published, open or not; repeats change nothing', async () => {
    const day1 = await sandboxAt('2026-07-01');
    const first = await run(day1, 'day-1');
    expect(first.report).toMatchObject({ today: '2026-07-01', firstRun: true, windows: [{ from: '2026-07-01', to: '2026-07-02' }], failed: [], left: [] });
    const dayOne = sourceRows(day1, '2026-07-01', '2026-07-02');
    expect(dayOne.size).toBeGreaterThan(3);
    expect((await tableRows()).values).toEqual(dayOne);

    // The cluster is down on days 2-4; the day-5 run merges the four days it missed, and day 1
    // again: it was merged while it was going on (open).
    const day5 = await sandboxAt('2026-07-05');
    const fifth = await run(day5, 'day-5');
    const days = ['2026-07-01', '2026-07-02', '2026-07-03', '2026-07-04', '2026-07-05'];
    expect(fifth.report.windows.map((window) => window.from)).toEqual(days);
    expect(fifth.report.reason).toContain('2026-07-01 published while open: exported again');
    expect(fifth.summary.tiles.map((tile) => [tile.status, tile.runId])).toEqual(
      days.map((day) => ['succeeded', `${fifth.summary.runId}-${day.replaceAll('-', '')}`]),
    );
    const missed = sourceRows(day5, '2026-07-01', '2026-07-06');
    expect(new Set([...missed.values()].map((values) => values.slice(0, 10)))).toEqual(new Set(days));
    // Day 1's incidents are back on day 5 with other values (the sandbox's clock moved them): updated, not added.
    const updated = [...dayOne.keys()].filter((number) => missed.has(number) && missed.get(number) !== dayOne.get(number));
    expect(updated.length).toBeGreaterThan(0);
    const merged = new Map([...dayOne, ...missed]);
    const afterFifth = await tableRows();
    expect(afterFifth.values).toEqual(merged);
    expect(afterFifth.values.size).toBeLessThan(dayOne.size + missed.size);
    expect(await stagingTables(bigquery.client, dataset)).toEqual([]);

    // One ledger row per window, on the table itself (a merge has no partition), each published;
    // the day still going when it was merged is recorded as open.
    const target = `${endpoint.projectId}.${dataset}.${TABLE}`;
    expect(await ledger()).toEqual([
      { window_from: '2026-07-01', status: 'succeeded', published: true, target, run_id: `${first.summary.runId}-20260701`, window_open: true },
      ...days.map((day) => ({
        window_from: day,
        status: 'succeeded',
        published: true,
        target,
        run_id: `${fifth.summary.runId}-${day.replaceAll('-', '')}`,
        window_open: day === '2026-07-05',
      })),
    ]);

    // A repeat of day 5 finds every closed day published in the ledger: only the open day is
    // exported and merged again, and the source has not changed, so neither do the values.
    const requests = exports(day5);
    const repeat = await run(day5, 'day-5-repeat');
    expect(repeat.report).toMatchObject({ windows: [{ from: '2026-07-05', to: '2026-07-06' }], left: [], firstUnpublished: '2026-07-05' });
    expect(exports(day5)).toBe(requests + 1);
    expect((await tableRows()).values).toEqual(afterFifth.values);

    // Merged again on purpose (lookbackDays 4: days 1-5 once more): every row is rewritten by the
    // new run (its _run_id), yet the table holds the same keys with the same values.
    const again = await run(day5, 'day-5-again', 4);
    expect(again.report.windows.map((window) => window.from)).toEqual(days);
    const afterAgain = await tableRows();
    expect(afterAgain.values).toEqual(afterFifth.values);
    for (const [number, values] of missed)
      expect(afterAgain.runIds.get(number), `${number} ${values}`).toBe(`${again.summary.runId}-${values.slice(0, 10).replaceAll('-', '')}`);
    expect((await ledger()).length).toBe(1 + days.length + 1 + days.length);
  }, 240_000);

  it('runs as a user runs it: a child process that finds the emulator by BIGQUERY_EMULATOR_HOST alone', async () => {
    const own = uniqueDatasetId('incremental_merge_child');
    const day3 = await sandboxAt('2026-07-03');
    const ws = await writeBigQueryWorkspace(path.join(temp.path, 'child'), day3, [job(0)], { projectId: endpoint.projectId, dataset: own });
    const result = await spawnCli(['run', '--config', ws.configFile, '--jobs', ws.jobsDir, '--json'], {
      env: { ...sandboxEnv(day3), BIGQUERY_EMULATOR_HOST: endpoint.apiEndpoint },
      timeoutMs: 120_000,
    });
    expect(result.code, result.stderr).toBe(0);
    const summary = summaryOf(result.stdout, 'run');
    expect(summary.incremental![0]!.windows.map((window) => window.from)).toEqual(['2026-07-01', '2026-07-02', '2026-07-03']);
    const rows = await readTable(bigquery.client, { projectId: endpoint.projectId, dataset: own, table: TABLE }, 'number');
    const table = new Map(rows.map((row) => [Number(row.number), `${String(row.day)}|${String(row.created)}|${String(row.severity)}`]));
    expect(table).toEqual(sourceRows(day3, '2026-07-01', '2026-07-04'));
  }, 180_000);
});
