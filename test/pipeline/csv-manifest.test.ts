import { createHash } from 'node:crypto';
import { readFile, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { listFiles, runCli, sandboxEnv, writeWorkspace, type Workspace } from '../support/cli-harness.js';
import { readCsv } from '../support/csv-read.js';
import { detailQuery } from '../support/queries.js';
import { HookedSink, loadForRun, runLoaded } from '../support/run-jobs-harness.js';
import { DEAD_PID, tagOf } from '../support/temp-owners.js';
import type { FileManifest } from '../../src/sinks/stores/manifest.js';
import { sandboxAndRootForAll } from '../support/sandbox-fixture.js';

const INCIDENTS = 57;

const fixture = sandboxAndRootForAll({ incidents: INCIDENTS });
let workspace: Workspace;
let file: string;

beforeAll(async () => {
  workspace = await writeWorkspace(
    fixture.root,
    fixture.sandbox,
    [{ name: 'detail', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv', manifest: true }], columns: { Number: { type: 'INT64' } } }],
    { itemsPerPage: 20 },
  );
  file = path.join(workspace.outDir, 'detail.csv');
});

const run = (runId: string) =>
  runCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir, '--run-id', runId, '--json'], { env: sandboxEnv(fixture.sandbox) });
const manifest = async () => JSON.parse(await readFile(`${file}.manifest.json`, 'utf8')) as FileManifest;
// The expectation's own hash of the whole file, not manifest.ts's sha256Of: an oracle independent of the code under test.
const sha256 = async (target: string) =>
  createHash('sha256')
    .update(await readFile(target))
    .digest('hex');

/** What a consumer does: the manifest describes the file beside it, byte for byte. */
async function expectConsistent(runId: string): Promise<void> {
  const described = await manifest();
  const csv = await readCsv(file);
  expect(described).toMatchObject({ manifestVersion: 1, file: 'detail.csv', job: 'detail', runId, rows: csv.rows.length, gzip: false });
  expect(described.sha256).toBe(await sha256(file));
  expect(described.bytes).toBe((await readFile(file)).length);
  expect(described.columns.map((column) => column.header)).toEqual(csv.header);
  expect(described.columns.find((column) => column.header === 'Number')?.type).toBe('INT64');
}

describe('the CSV manifest (manifest: true)', () => {
  it('is published beside the file with its rows, sha256, run id and columns, and reported in the summary', async () => {
    const result = await run('first-run');
    expect(result.exitCode).toBe(0);
    await expectConsistent('first-run');
    expect((await manifest()).rows).toBe(INCIDENTS);
    const summary = JSON.parse(result.stdout) as { tiles: Array<{ outputs: Array<{ details: Record<string, unknown> }> }> };
    expect(summary.tiles[0]!.outputs[0]!.details.sha256).toBe(await sha256(file));
    expect(await listFiles(workspace.outDir)).toEqual(['detail.csv', 'detail.csv.manifest.json']);
  });

  it('a re-run replaces both, and the manifest names the new run', async () => {
    expect((await run('second-run')).exitCode).toBe(0);
    await expectConsistent('second-run');
  });

  it('a failed run leaves the previous file and manifest as they were, and no temp file', async () => {
    const before = [await readFile(file), await readFile(`${file}.manifest.json`)];
    fixture.sandbox.inject({ kind: 'server-error', endpoint: 'export', status: 500, pageNumber: 2, times: Infinity });
    try {
      expect((await run('failed-run')).exitCode).toBe(1);
    } finally {
      fixture.sandbox.clearFaults();
    }
    expect([await readFile(file), await readFile(`${file}.manifest.json`)]).toEqual(before);
    await expectConsistent('second-run');
    expect(await listFiles(workspace.outDir)).toEqual(['detail.csv', 'detail.csv.manifest.json']);
  });

  it('a run stopped after prepare (manifest temp written) publishes neither and removes both temps', async () => {
    const controller = new AbortController();
    const summary = await runLoaded(await loadForRun(workspace, fixture.sandbox), {
      signal: controller.signal,
      // Stopped while the sink prepares: the data and manifest temps exist, the publish never comes.
      sinksFor: (_job, [csv]) => [new HookedSink(csv!, 'prepare', () => controller.abort(new Error('SIGTERM received')))],
    });
    expect(summary.tiles[0]).toMatchObject({ status: 'failed', error: { code: 'run_stopped' } });
    await expectConsistent('second-run');
    expect(await listFiles(workspace.outDir)).toEqual(['detail.csv', 'detail.csv.manifest.json']);
  });

  it("a killed run's manifest temp file is swept by the next run like its data temp file", async () => {
    const tag = tagOf({ pid: DEAD_PID, start: '5' });
    const leftovers = [`.detail.csv.manifest.json.tilehouse-killed+${tag}.tmp`, `.detail.csv.tilehouse-killed+${tag}.tmp`];
    const dayAgo = new Date(Date.now() - 2 * 24 * 3_600_000);
    for (const name of leftovers) {
      await writeFile(path.join(workspace.outDir, name), 'left over');
      await utimes(path.join(workspace.outDir, name), dayAgo, dayAgo);
    }
    expect((await run('third-run')).exitCode).toBe(0);
    await expectConsistent('third-run');
    expect(await listFiles(workspace.outDir)).toEqual(['detail.csv', 'detail.csv.manifest.json']);
  });
});
