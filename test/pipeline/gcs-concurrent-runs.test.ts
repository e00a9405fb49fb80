// Two runs of one job at once into the same gs:// object, as concurrent-runs.test.ts does for a
// local file: real CLI processes, STORAGE_EMULATOR_HOST in their environment, read back with the
// storage client. Each run exports a different filter, so an object mixing them would show.
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SANDBOX_TILE, startSandbox, type Sandbox } from '../../sandbox/index.js';
import { RUN_ID_METADATA_KEY } from '../../src/sinks/gcs/temp-objects.js';
import { sandboxEnv, writeWorkspace } from '../support/cli-harness.js';
import { describeWithFakeGcs, usePreconditionProxy } from '../support/fake-gcs-server.js';
import { detailQueryOfRun } from '../support/queries.js';
import { spawnCli, type ChildResult } from '../support/spawn-cli.js';
import { makeTempDir } from '../support/temp-dir.js';

const INCIDENTS = 240;
const ROUNDS = 3;
const OBJECT = 'shared/incident_detail.csv';

/** Run i exports only incidents numbered above 10·i. */
function jobFor(run: number) {
  return { name: 'incident_detail', tile: SANDBOX_TILE, query: detailQueryOfRun(run), sinks: [{ type: 'csv' }] };
}

let sandbox: Sandbox;
let root: string;

beforeAll(async () => {
  // 12 pages of 20 rows at 100 ms each, one at a time: a run lasts well over a second, longer
  // than the spread of two process starts, so each opens before the other publishes.
  sandbox = await startSandbox({ incidents: INCIDENTS, latencyMs: 100 });
  root = await makeTempDir();
});
afterAll(async () => {
  await sandbox?.close();
  await rm(root, { recursive: true, force: true });
});

/** Which run the object holds: exactly its rows (incidents 10·run+1 .. INCIDENTS, once, in order), or a failure. */
function wholeRunOf(bytes: Buffer): number {
  const [header, ...rows] = parse(bytes) as string[][];
  expect(header).toEqual(['Number', 'Created', 'Description', 'Severity']);
  const numbers = rows.map((row) => Number(row[0]));
  const run = Math.floor(((numbers[0] ?? 1) - 1) / 10);
  expect(numbers, 'the object mixes runs or lost rows').toEqual(Array.from({ length: INCIDENTS - 10 * run }, (_, i) => 10 * run + 1 + i));
  return run;
}

describeWithFakeGcs('two runs of one job at once into one gs:// object', (gcs) => {
  const through = usePreconditionProxy(gcs);

  async function runPair(bucket: string, round: number, storageHost: string): Promise<[ChildResult, ChildResult]> {
    const results: Array<Promise<ChildResult>> = [];
    const configs: Array<{ configFile: string; jobsDir: string }> = [];
    for (const run of [0, 1]) {
      const workspace = await writeWorkspace(path.join(root, `${bucket}-${round}-${run}`), sandbox, [jobFor(run)], { itemsPerPage: 20, concurrency: 1 });
      await writeFile(workspace.configFile, (await readFile(workspace.configFile, 'utf8')).replace(/directory: .*/, `directory: gs://${bucket}/shared`));
      configs.push(workspace);
    }
    for (const { configFile, jobsDir } of configs) {
      results.push(
        spawnCli(['run', '--config', configFile, '--jobs', jobsDir], {
          env: { ...sandboxEnv(sandbox), STORAGE_EMULATOR_HOST: storageHost },
          timeoutMs: 45_000,
        }),
      );
    }
    return Promise.all(results) as Promise<[ChildResult, ChildResult]>;
  }

  // fake-gcs-server ignores ifGenerationMatch on rewrites (see the proxy), so here both publish
  // and the later rewrite wins: still a check that the object is never a mix of the two.
  it('against fake-gcs-server alone: both exit 0 and the object is always one whole run', async () => {
    const bucket = await gcs.newBucket('pair');
    for (let round = 0; round < ROUNDS; round++) {
      const [a, b] = await runPair(bucket, round, gcs.origin);
      for (const result of [a, b]) expect(result.code, result.stderr).toBe(0);
      const objects = gcs.storage.bucket(bucket);
      wholeRunOf((await objects.file(OBJECT).download())[0]);
      expect((await objects.getFiles())[0].map((file) => file.name)).toEqual([OBJECT]);
    }
  }, 150_000);

  // Through the proxy the rewrite's ifGenerationMatch is enforced as Cloud Storage enforces it.
  it('where preconditions are enforced: each exits 0 or one exits 1 with target_changed naming the other run; the object is one whole run', async () => {
    const bucket = await gcs.newBucket('pair-412');
    let refused = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const [a, b] = await runPair(bucket, round, through.proxy.origin);
      const objects = through.storage.bucket(bucket);
      const [metadata] = await objects.file(OBJECT).getMetadata();
      const publishedBy = String(metadata.metadata?.[RUN_ID_METADATA_KEY]);
      const held = wholeRunOf((await objects.file(OBJECT).download())[0]);
      for (const [run, result] of [a, b].entries()) {
        expect(result.timedOut).toBe(false);
        if (result.code === 0) continue;
        refused += 1;
        expect(result.code, result.stderr).toBe(1);
        expect(result.stderr).toMatch(/FAIL incident_detail \(.*\): target_changed: /);
        // It names the run that holds the object now, and that run is the other one.
        expect(result.stderr).toContain(`written by run ${publishedBy} of job incident_detail`);
        expect(held).toBe(1 - run);
        expect([a, b][1 - run]!.code).toBe(0);
        expect(result.stderr).toContain('nothing was overwritten and this run published nothing');
      }
      expect(a.code === 0 || b.code === 0, 'both runs failed').toBe(true);
      // The refused run deletes its temp object; nothing else is left.
      expect((await objects.getFiles())[0].map((file) => file.name)).toEqual([OBJECT]);
    }
    // Both opened before either published, so the precondition refused the later one.
    expect(refused).toBeGreaterThan(0);
    expect(through.proxy.preconditionFailures).toBe(refused);
  }, 150_000);
});
