import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { listFiles, runCli, sandboxEnv, writeWorkspace, type Workspace } from '../support/cli-harness.js';
import { readCsv } from '../support/csv-read.js';
import { detailQuery } from '../support/queries.js';
import { tempDirEachTest } from '../support/temp-dir-hooks.js';
import { sandboxForAll } from '../support/sandbox-fixture.js';

const INCIDENTS = 237;
const ITEMS_PER_PAGE = 20;

const detailJob = { name: 'incident_detail', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }], columns: { Number: { type: 'INT64' } } };

/** How the CSV should show a sandbox value, written independently of src/transform. */
function expectedCell(value: unknown, dataType: string): string | null {
  if (value === null || value === undefined) return null;
  if (dataType === 'datetime') return new Date(value as number).toISOString();
  return String(value);
}

const fixture = sandboxForAll({ incidents: INCIDENTS, tokenLifetimeSeconds: 600 });
const temp = tempDirEachTest();
let workspace: Workspace;

beforeEach(async () => {
  fixture.sandbox.clearFaults();
});

async function run(jobs: Array<Record<string, unknown>>, options: { secret?: string; args?: string[] } = {}) {
  workspace = await writeWorkspace(temp.path, fixture.sandbox, jobs, { itemsPerPage: ITEMS_PER_PAGE });
  return runCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir, ...(options.args ?? [])], {
    env: sandboxEnv(fixture.sandbox, options.secret),
  });
}

describe('a tile run against the sandbox', () => {
  it('writes every row of the tile to CSV, typed, in the order the API gave', async () => {
    const result = await run([detailJob]);
    expect(result.stderr).toMatch(/1 succeeded, 0 failed/);
    expect(result.exitCode).toBe(0);

    const expected = fixture.sandbox.evaluate(detailQuery, SANDBOX_TILE);
    const csv = await readCsv(path.join(workspace.outDir, 'incident_detail.csv'));
    expect(csv.header).toEqual(expected.headers);
    expect(csv.rows).toHaveLength(INCIDENTS);
    expect(csv.rows).toEqual(expected.rows.map((row) => row.map((value, i) => expectedCell(value, expected.dataTypes[i]!))));

    const finished = result.logs.find((line) => line.msg === 'run finished') as { summary: { tiles: Array<Record<string, unknown>> } };
    expect(finished.summary.tiles[0]).toMatchObject({
      status: 'succeeded',
      rows: INCIDENTS,
      pages: Math.ceil(INCIDENTS / ITEMS_PER_PAGE),
      columns: [
        { name: 'number', header: 'Number', type: 'INT64' },
        { name: 'created', header: 'Created', type: 'TIMESTAMP' },
        { name: 'description', header: 'Description', type: 'STRING' },
        { name: 'severity', header: 'Severity', type: 'STRING' },
      ],
    });
  });

  it('requests one fresh token and each page once when nothing fails', async () => {
    const before = fixture.sandbox.requests.length;
    await run([detailJob]);
    const requests = fixture.sandbox.requests.slice(before);
    expect(requests.filter((r) => r.endpoint === 'token')).toHaveLength(1);
    const pages = requests.filter((r) => r.endpoint === 'export').map((r) => r.pageNumber);
    expect([...pages].sort((a, b) => (a ?? 0) - (b ?? 0))).toEqual([...Array(Math.ceil(INCIDENTS / ITEMS_PER_PAGE)).keys()]);
  });

  it('fails with exit 1 quoting invalid_client on a wrong secret, and writes nothing', async () => {
    const result = await run([detailJob], { secret: 'wrong-secret' });
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(/auth_invalid_client: .*invalid_client/);
    expect(result.stderr).toContain('incident_detail');
    expect(JSON.stringify(result)).not.toContain('wrong-secret');
    expect(await listFiles(workspace.outDir)).toEqual([]);
  });

  it('fails with the API message "invalid id" for an unknown tile', async () => {
    const result = await run([{ ...detailJob, tile: 'no-such-tile' }]);
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(
      /export_api_error: page 0: export for tile no-such-tile \(sent as query item tileId\) failed with HTTP 400: invalid id; check the job's tile and source.tileParam/,
    );
    expect(await listFiles(workspace.outDir)).toEqual([]);
  });

  it('runs the other tiles when one fails, and exits 1', async () => {
    const result = await run([
      { ...detailJob, name: 'a_bad', tile: 'no-such-tile' },
      { ...detailJob, name: 'b_good' },
    ]);
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(/1 succeeded, 1 failed/);
    expect(await listFiles(workspace.outDir)).toEqual(['b_good.csv']);
  });

  it('runs only the tiles named with --tile', async () => {
    const result = await run(
      [
        { ...detailJob, name: 'a_one' },
        { ...detailJob, name: 'b_two' },
      ],
      { args: ['--tile', 'b_two'] },
    );
    expect(result.exitCode).toBe(0);
    expect(await listFiles(workspace.outDir)).toEqual(['b_two.csv']);
  });

  it('writes byte-identical files when run twice', async () => {
    await run([detailJob]);
    const { readFile } = await import('node:fs/promises');
    const first = await readFile(path.join(workspace.outDir, 'incident_detail.csv'));
    await run([detailJob]);
    expect(await readFile(path.join(workspace.outDir, 'incident_detail.csv'))).toEqual(first);
  });
});
