import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { stringify } from 'yaml';
import { beforeEach, expect, it } from 'vitest';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { describeWithEmulator, uniqueDatasetId } from '../support/bigquery-emulator.js';
import { readTable, stagingTables, type ReadCell } from '../support/bigquery-read.js';
import { bigQueryRunsForAll } from '../support/bigquery-runs.js';
import { writeBigQueryWorkspace, type BigQueryWorkspace } from '../support/bigquery-workspace.js';
import { detailQueryAbove } from '../support/queries.js';

// The publish guard of a BigQuery sink over the emulator (copy jobs through the test proxy):
// replace refused on no rows and on a tenth, the table row-identical and no staging table left;
// the override publishes; append's recent-runs rule; a tile with a CSV and a BigQuery sink where
// only the table would shrink publishes neither; the ledger row of a tripped run.
const INCIDENTS = 200;
const TABLE = 'incidents';
/**
 * What one run here may take: a load, the guard's counts, a ledger row and a publish of at most 14
 * copy jobs (one a month of a partitioned replace), each SQL on the emulator through the copy-job
 * proxy. Measured with this file alone (vitest.config.ts runs it so): 2-6 s, 14 s for a 14-month
 * publish, at a load average of 13. A test's limit is its number of runs times this.
 */
const RUN_MS = 30_000;
const limitFor = (runs: number) => runs * RUN_MS;

/** The detail query keeping incidents numbered above `above` (INCIDENTS - above rows), numbers as INT64. */
describeWithEmulator('the publish guard of a BigQuery sink', (endpoint) => {
  const fixture = bigQueryRunsForAll(endpoint, { incidents: INCIDENTS });
  let dataset: string;
  let workspace: BigQueryWorkspace;
  beforeEach(async () => {
    dataset = uniqueDatasetId('tilehouse_guard');
  });

  function jobAbove(above: number, sinks: Array<Record<string, unknown>>, severities?: string[]) {
    const query = detailQueryAbove(above);
    if (severities !== undefined)
      query.items = query.items.map((item) => (item.header === 'Severity' ? { ...item, filters: [{ operator: 'in', values: severities }] } : item));
    return { name: TABLE, tile: SANDBOX_TILE, query, columns: { Number: { type: 'INT64' } }, sinks };
  }

  async function runAbove(above: number, sinks: Array<Record<string, unknown>>, flags: string[] = [], severities?: string[]) {
    const dir = path.join(fixture.root, dataset);
    workspace = await writeBigQueryWorkspace(
      dir,
      fixture.sandbox,
      [jobAbove(above, sinks, severities)],
      { projectId: endpoint.projectId, dataset },
      { itemsPerPage: 50 },
    );
    await writeFile(path.join(workspace.jobsDir, `${TABLE}.yaml`), stringify(jobAbove(above, sinks, severities)));
    const summaryFile = path.join(dir, 'summary.json');
    const result = await fixture.run(workspace, ['--summary-json', summaryFile, ...flags]);
    const summary = JSON.parse(await readFile(summaryFile, 'utf8')) as {
      tiles: Array<Record<string, unknown> & { guard?: { tripped: boolean; overridden: boolean; verdicts: Array<Record<string, unknown>> } }>;
    };
    return { ...result, tile: summary.tiles[0]! };
  }

  const rowsOf = (): Promise<Record<string, ReadCell>[]> => readTable(fixture.client, { projectId: endpoint.projectId, dataset, table: TABLE }, 'number');
  const target = () => `${endpoint.projectId}.${dataset}.${TABLE}`;

  async function ledger(): Promise<Array<{ status: string; published: boolean; error_code: string | null; publish_guard: string | null; row_count: number }>> {
    const [rows] = await fixture.client.query({
      query: `SELECT status, published, error_code, publish_guard, row_count FROM \`${endpoint.projectId}.${dataset}._tilehouse_runs\` ORDER BY recorded_at`,
    });
    return rows as never;
  }

  it(
    'replace: refuses no rows and a tenth over a table that holds rows, the table row-identical and no staging table left; --allow-shrink publishes; a modest shrink passes',
    async () => {
      const sinks = [{ type: 'bigquery', writeMode: 'replace' }];
      expect((await runAbove(0, sinks)).exitCode).toBe(0);
      const before = await rowsOf();
      expect(before).toHaveLength(INCIDENTS);

      const empty = await runAbove(INCIDENTS, sinks);
      expect(empty.exitCode).toBe(1);
      expect(empty.tile).toMatchObject({
        status: 'failed',
        error: { code: 'publish_guard_tripped' },
        guard: { tripped: true, overridden: false, verdicts: [{ target: target(), verdict: 'trip', rule: 'empty', held: INCIDENTS, exported: 0 }] },
      });
      expect((empty.tile.error as { message: string }).message).toContain('(table metadata)');
      expect(await rowsOf()).toEqual(before);
      expect(await stagingTables(fixture.client, dataset)).toEqual([]);
      expect(await readdir(workspace.tempDir).catch(() => [])).toEqual([]);

      const tenth = await runAbove(INCIDENTS - INCIDENTS / 10, sinks);
      expect(tenth.exitCode).toBe(1);
      expect(tenth.tile.guard).toMatchObject({ tripped: true, verdicts: [{ rule: 'shrink', held: INCIDENTS, exported: INCIDENTS / 10 }] });
      expect(await rowsOf()).toEqual(before);
      expect(await stagingTables(fixture.client, dataset)).toEqual([]);

      // The ledger records the trip: not published, the code, and the rule.
      expect((await ledger()).slice(-2)).toMatchObject([
        { status: 'failed', published: false, error_code: 'publish_guard_tripped', publish_guard: 'tripped:empty' },
        { status: 'failed', published: false, error_code: 'publish_guard_tripped', publish_guard: 'tripped:shrink' },
      ]);

      const modest = await runAbove(60, sinks);
      expect(modest.exitCode).toBe(0);
      expect(await rowsOf()).toHaveLength(INCIDENTS - 60);

      const overridden = await runAbove(INCIDENTS, sinks, ['--allow-shrink']);
      expect(overridden.exitCode).toBe(0);
      expect(overridden.tile.guard).toMatchObject({ tripped: true, overridden: true });
      expect(await rowsOf()).toEqual([]);
      expect((await ledger()).at(-1)).toMatchObject({ status: 'succeeded', published: true, publish_guard: 'overridden:empty' });

      // A table emptied by hand holds nothing: a small run over it never trips.
      expect((await runAbove(0, sinks)).exitCode).toBe(0);
      await fixture.client.query({ query: `DELETE FROM \`${target()}\` WHERE TRUE` });
      const overEmptied = await runAbove(INCIDENTS - 20, sinks);
      expect(overEmptied.exitCode).toBe(0);
      expect(overEmptied.tile.guard).toMatchObject({ tripped: false, verdicts: [{ verdict: 'pass', held: 0, exported: 20 }] });
    },
    limitFor(7),
  );

  it(
    'append: a run far below the median of the last runs is held once three are known, and a short history never trips',
    async () => {
      const sinks = [{ type: 'bigquery', writeMode: 'append' }];
      for (let run = 0; run < 2; run++) expect((await runAbove(100, sinks)).exitCode).toBe(0);
      // Two runs of 100: too short a history, a run of 5 passes.
      const short = await runAbove(INCIDENTS - 5, sinks);
      expect(short.exitCode).toBe(0);
      expect(await rowsOf()).toHaveLength(205);
      expect((await runAbove(100, sinks)).exitCode).toBe(0);
      // Runs 100, 5, 100, 100: the median of the last 4 is 100; 5 is below a tenth of it.
      const low = await runAbove(INCIDENTS - 5, sinks);
      expect(low.exitCode).toBe(1);
      expect(low.tile.guard).toMatchObject({ tripped: true, verdicts: [{ rule: 'recent', held: 100, exported: 5 }] });
      expect(await rowsOf()).toHaveLength(305);
      expect(await stagingTables(fixture.client, dataset)).toEqual([]);
    },
    limitFor(5),
  );

  it(
    'replace with partitionBy: judges the rows of exactly the partitions the run replaces, counted with a filter on the partition column',
    async () => {
      const sinks = [{ type: 'bigquery', writeMode: 'replace', partitionBy: { column: 'Created', granularity: 'month' } }];
      const first = await runAbove(0, sinks);
      expect(first.exitCode, JSON.stringify(first.tile.error)).toBe(0);
      const before = await rowsOf();
      // One severity of four (~5% of the rows): every month it falls in would lose most of its rows.
      const few = await runAbove(0, sinks, [], ['SEV1']);
      expect(few.exitCode).toBe(1);
      expect(few.tile.guard).toMatchObject({ tripped: true, verdicts: [{ rule: 'shrink' }] });
      expect(String(few.tile.guard!.verdicts[0]!.reason)).toMatch(/\(rows counted of partitions? /);
      expect(await rowsOf()).toEqual(before);
      expect(await stagingTables(fixture.client, dataset)).toEqual([]);
      // The incidents above 60 (newer ones: the older months are not replaced): a legal run.
      const newer = await runAbove(60, sinks);
      expect(newer.exitCode, JSON.stringify(newer.tile.error)).toBe(0);
      expect(newer.tile.guard).toMatchObject({ tripped: false, verdicts: [{ verdict: 'pass', exported: INCIDENTS - 60 }] });
      // The months older than incident 61 kept their rows.
      expect((await rowsOf()).length).toBeGreaterThan(INCIDENTS - 60);
      // No rows replace no partition: nothing is lost, nothing refused.
      const none = await runAbove(INCIDENTS, sinks);
      expect(none.exitCode).toBe(0);
      expect(none.tile.guard).toMatchObject({ tripped: false });
    },
    limitFor(4),
  );

  it(
    'merge: a run far below the median of the last runs is held, the table row-identical; --allow-shrink publishes it',
    async () => {
      const sinks = [{ type: 'bigquery', writeMode: 'merge', primaryKey: ['Number'] }];
      for (let run = 0; run < 3; run++) expect((await runAbove(100, sinks)).exitCode).toBe(0);
      const before = await rowsOf();
      const low = await runAbove(INCIDENTS - 5, sinks);
      expect(low.exitCode).toBe(1);
      expect(low.tile.guard).toMatchObject({ tripped: true, verdicts: [{ rule: 'recent', held: 100, exported: 5 }] });
      expect(await rowsOf()).toEqual(before);
      expect((await runAbove(INCIDENTS - 5, sinks, ['--allow-shrink'])).exitCode).toBe(0);
    },
    limitFor(5),
  );

  it(
    'a tile with a CSV and a BigQuery sink where only the table would shrink publishes neither',
    async () => {
      const csv = (dir: string) => ({ type: 'csv', path: path.join(dir, 'incidents.csv') });
      const dir = path.join(fixture.root, `${dataset}-files`);
      const sinks = [{ type: 'bigquery', writeMode: 'replace' }, csv(dir)];
      expect((await runAbove(0, sinks)).exitCode).toBe(0);
      const before = await rowsOf();
      // The file emptied by hand: its guard never trips; the table's does.
      await rm(path.join(dir, 'incidents.csv'));
      const tenth = await runAbove(INCIDENTS - 20, sinks);
      expect(tenth.exitCode).toBe(1);
      expect(tenth.tile.guard).toMatchObject({ tripped: true });
      expect(tenth.tile.guard!.verdicts.map((verdict) => verdict.verdict).sort()).toEqual(['pass', 'trip']);
      expect(await rowsOf()).toEqual(before);
      expect(await readdir(dir)).toEqual([]);
    },
    limitFor(2),
  );
});
