import { expect, it } from 'vitest';
import { BENCH_QUERY } from '../../bench/bench-query.js';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { describeWithEmulator, uniqueDatasetId } from '../support/bigquery-emulator.js';
import { bigQueryRunsForAll } from '../support/bigquery-runs.js';
import { writeBigQueryWorkspace } from '../support/bigquery-workspace.js';

// What a BigQuery sink needs of its temp directory (issue 39, "Disk is a resource too"), measured
// against a local CSV of the same rows in the same run: one job of the benchmark's tile (11
// columns) with both sinks. The BigQuery figure is the load file's size once written
// (`loadFileBytes`: it only grows, and is deleted after the load), the CSV's the file it published
// (its temp file, renamed). The figures in k8s/README.md and bench/README.md ("Disk") are this test
// at 1M rows: TILEHOUSE_TEMP_BYTES_ROWS=1000000 npx vitest run test/pipeline/bigquery-temp-bytes.test.ts
// (~2 min, most of it the emulator's load); by default it runs 20,000.
const ROWS = Number(process.env.TILEHOUSE_TEMP_BYTES_ROWS ?? 20_000);

describeWithEmulator('the temp bytes of a BigQuery run, against a CSV of the same rows', (endpoint) => {
  const fixture = bigQueryRunsForAll(endpoint, { incidents: ROWS });

  it('the NDJSON load file is about twice the CSV (one JSON object a row, keyed by column name)', async () => {
    const workspace = await writeBigQueryWorkspace(
      fixture.root,
      fixture.sandbox,
      [{ name: 'bench_incidents', tile: SANDBOX_TILE, query: BENCH_QUERY, sinks: [{ type: 'csv' }, { type: 'bigquery' }] }],
      { projectId: endpoint.projectId, dataset: uniqueDatasetId('temp_bytes') },
      { itemsPerPage: 1000 },
    );
    const result = await fixture.run(workspace);
    expect(result.exitCode, result.stderr).toBe(0);
    const finished = result.logs.find((line) => line.msg === 'run finished') as {
      summary: { tiles: Array<{ outputs: Array<{ sink: string; rows: number; details: Record<string, number> }> }> };
    };
    const outputs = finished.summary.tiles[0]!.outputs;
    const csv = outputs.find((output) => output.sink === 'csv')!;
    const bigquery = outputs.find((output) => output.sink === 'bigquery')!;
    expect(csv.rows).toBe(ROWS);
    expect(bigquery.rows).toBe(ROWS);
    const perMillion = (bytes: number) => Math.round(((bytes / ROWS) * 1e6) / 1e5) / 10;
    const figures = {
      rows: ROWS,
      csvBytes: csv.details.bytes!,
      ndjsonBytes: bigquery.details.loadFileBytes!,
      ratio: bigquery.details.loadFileBytes! / csv.details.bytes!,
    };
    console.log(`temp bytes: ${JSON.stringify(figures)}; per 1M rows: CSV ${perMillion(figures.csvBytes)} MB, NDJSON ${perMillion(figures.ndjsonBytes)} MB`);
    expect(figures.ratio).toBeGreaterThan(1.5);
    expect(figures.ratio).toBeLessThan(2.5);
  }, 600_000);
});
