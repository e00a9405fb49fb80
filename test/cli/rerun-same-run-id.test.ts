// A summary says what the target holds (issue 26, item 8). A second run with the same --run-id
// over changed source data finds the first run's publish job under its id (looked up after
// prepare, before any sink publishes: issue 62) and adopts it: a run id publishes once. The
// earlier publish is kept, the summary counts what the target holds (the adopted job's own
// statistics, else the target), says `adopted: nothing committed`, and says with a `warning:`
// line that this run's rows were not published (a coded failure under --strict, see
// test/pipeline/job-summary.test.ts).
//
// The emulator answers a reused job id with 500 and keeps no copy or truncate-data jobs at all:
// the copy-job proxy (startEmulatorWithCopyJobs) carries those out and answers a reused id 409,
// as BigQuery does, with the job resource it kept, which like a real truncating query job
// reports no row count. So the count must come from the target.
import path from 'node:path';
import { expect, it } from 'vitest';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { describeWithEmulator, uniqueDatasetId } from '../support/bigquery-emulator.js';
import { readTable } from '../support/bigquery-read.js';
import { copyJobProxyForAll, runOnBigQuery } from '../support/bigquery-runs.js';
import { writeBigQueryWorkspace } from '../support/bigquery-workspace.js';
import { summaryOf } from '../support/cli-harness.js';
import { detailQuery } from '../support/queries.js';
import { sandboxesEachTest } from '../support/sandbox-fixture.js';
import { tempDirForAll } from '../support/temp-dir-hooks.js';

const TABLE = 'rerun_detail';

describeWithEmulator('a re-run with the same --run-id over changed data', (endpoint) => {
  const bigquery = copyJobProxyForAll(endpoint);
  const temp = tempDirForAll();
  const each = sandboxesEachTest();
  const dataset = uniqueDatasetId('rerun');

  async function run(incidents: number, runId: string, name: string) {
    const sandbox = await each.sandbox({ incidents });
    const ws = await writeBigQueryWorkspace(
      path.join(temp.path, name),
      sandbox,
      [{ name: TABLE, tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'bigquery', writeMode: 'replace' }] }],
      { projectId: endpoint.projectId, dataset },
    );
    const result = await runOnBigQuery(ws, sandbox, bigquery.client, ['--run-id', runId, '--json']);
    expect(result.exitCode, result.stderr).toBe(0);
    const summary = summaryOf(result.stdout, 'run');
    return { ...result, tile: summary.tiles[0]! };
  }

  it('keeps the first publish, counts what the table holds, and says so with a warning line', async () => {
    // The table exists before the run id is first used, so both runs publish with the truncating
    // query (WRITE_TRUNCATE_DATA), the case.
    await run(40, 'seed', 'seed');
    const first = await run(120, 'nightly-1', 'first');
    expect(first.tile.outputs[0]).toMatchObject({ rows: 120, details: { publishedBy: 'truncate-data query' } });
    expect(first.tile.outputs[0]!.keptEarlierPublish).toBeUndefined();
    expect(first.tile.warnings).toEqual([]);

    const second = await run(160, 'nightly-1', 'second');
    const held = await readTable(bigquery.client, { projectId: endpoint.projectId, dataset, table: TABLE }, 'number');
    expect(held).toHaveLength(120);
    expect(second.tile.rows).toBe(160);
    const jobId = String(first.tile.outputs[0]!.details!.jobId);
    expect(second.tile.outputs[0]).toMatchObject({
      rows: held.length,
      adopted: true,
      keptEarlierPublish: true,
      details: { adopted: true, heldFrom: `its publish job ${jobId}`, sentRows: 160, jobId },
    });
    const target = `${endpoint.projectId}.${dataset}.${TABLE}`;
    const warning = `${target}: run id nightly-1 was already published there with 120 rows (its publish job ${jobId}); this run's 160 rows were not published (a run id publishes once; re-run with a new --run-id to publish the current data)`;
    expect(second.tile.warnings).toEqual([warning]);
    // The person reading stderr sees the count the table holds, that nothing was committed, and the warning.
    expect(second.stderr).toContain(`160 rows read, 4 pages → ${target} (adopted: nothing committed, 120 rows of the earlier publish)`);
    expect(second.stderr).toContain(`warning: ${warning}`);
    // The ledger holds one row per run id, target and status (its insert's job id is derived from
    // them, so the re-run's insert is adopted too), and it counts what was published.
    const [ledger] = await bigquery.client.query({
      query: `SELECT row_count AS n FROM \`${endpoint.projectId}.${dataset}._tilehouse_runs\` WHERE run_id = 'nightly-1' ORDER BY recorded_at`,
    });
    expect((ledger as Array<{ n: number }>).map((row) => Number(row.n))).toEqual([120]);
  }, 180_000);
});
