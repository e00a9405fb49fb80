import { execFileSync } from 'node:child_process';
import { mkdir, readdir } from 'node:fs/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { describeWithEmulator, uniqueDatasetId } from '../support/bigquery-emulator.js';
import { readTable, stagingTables, type ReadCell } from '../support/bigquery-read.js';
import { bigQueryRunsForAll } from '../support/bigquery-runs.js';
import { writeBigQueryWorkspace, type BigQueryWorkspace } from '../support/bigquery-workspace.js';
import type { CliResult } from '../support/cli-harness.js';
import { detailQuery } from '../support/queries.js';
import { tryMountTinyFs } from '../support/tiny-fs.js';

// A BigQuery run whose load file fills its disk (issue 39: a pod's emptyDir at /tmp has a size
// limit): a 64 KiB tmpfs as the environment's tempDirectory, where the NDJSON load file goes. 1,000
// incidents make a load file of ~120 KiB. The run must fail with disk_full before anything is
// loaded: no staging table, the target as it was, no load file left; and the next run, with room,
// must publish exactly.
const INCIDENTS = 1000;
const TABLE = 'incident_detail';

describeWithEmulator('a BigQuery run whose load file fills its disk', (endpoint) => {
  const fixture = bigQueryRunsForAll(endpoint, { incidents: INCIDENTS });
  let workspace: BigQueryWorkspace;
  let mountFailure: string | undefined = 'not mounted yet';
  const dataset = uniqueDatasetId('disk_full');

  beforeAll(async () => {
    workspace = await writeBigQueryWorkspace(
      fixture.root,
      fixture.sandbox,
      [{ name: TABLE, tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'bigquery' }], columns: { Number: { type: 'INT64' } } }],
      { projectId: endpoint.projectId, dataset },
      { itemsPerPage: 200 },
    );
    await mkdir(workspace.tempDir, { recursive: true });
  });
  // Registered after the fixture's: runs before its root is removed.
  afterAll(() => {
    if (mountFailure === undefined) execFileSync('umount', [workspace.tempDir]);
  });

  const run = (): Promise<CliResult> => fixture.run(workspace);
  const rows = (): Promise<Record<string, ReadCell>[]> => readTable(fixture.client, { projectId: endpoint.projectId, dataset, table: TABLE }, 'number');

  it('fails with exit 1 and disk_full naming the load file, loads and publishes nothing, leaves no file or staging table; the next run with room is exact', async (context) => {
    // The previous run, with room: the table holds every incident.
    const first = await run();
    expect(first.exitCode, first.stderr).toBe(0);
    // The load file of such a run is more than the tiny file system holds (the summary says its size).
    const summary = first.logs.find((line) => line.msg === 'run finished') as {
      summary: { tiles: Array<{ outputs: Array<{ details: { loadFileBytes: number } }> }> };
    };
    expect(summary.summary.tiles[0]!.outputs[0]!.details.loadFileBytes).toBeGreaterThan(64 * 1024);
    const full = await rows();
    expect(full).toHaveLength(INCIDENTS);
    // Made different from what the next run would publish, so that a half-written publish shows.
    await fixture.client.query(`DELETE FROM \`${endpoint.projectId}.${dataset}.${TABLE}\` WHERE number > 10`);
    const previous = await rows();
    expect(previous).toHaveLength(10);

    mountFailure = tryMountTinyFs(workspace.tempDir);
    if (mountFailure !== undefined) context.skip(`cannot mount a tmpfs here: ${mountFailure}`);
    const refused = await run();
    expect(refused.exitCode).toBe(1);
    const finished = refused.logs.find((line) => line.msg === 'run finished') as { summary: { tiles: Array<{ error: { code: string; message: string } }> } };
    const error = finished.summary.tiles[0]!.error;
    expect(error.code).toBe('disk_full');
    expect(error.message).toContain(`load file ${workspace.tempDir}/tilehouse-`);
    expect(error.message).toContain('free space on that volume');
    expect(refused.stderr).toContain('disk_full');
    expect(refused.stderr).not.toMatch(/\n\s+at |internal_error/);
    // Nothing reached BigQuery: no load job, so no staging table, and the target as it was.
    expect(refused.logs.some((line) => line.msg === 'loading into a BigQuery staging table')).toBe(false);
    expect(await stagingTables(fixture.client, dataset)).toEqual([]);
    expect(await rows()).toEqual(previous);
    expect(await readdir(workspace.tempDir)).toEqual([]);

    // Room again (a tmpfs that held more than its size cannot shrink back: grown for good).
    execFileSync('mount', ['-o', 'remount,size=8m', workspace.tempDir]);
    const next = await run();
    expect(next.exitCode, next.stderr).toBe(0);
    expect(await rows()).toEqual(full);
    expect(await stagingTables(fixture.client, dataset)).toEqual([]);
    expect(await readdir(workspace.tempDir)).toEqual([]);
  }, 60_000);
});
