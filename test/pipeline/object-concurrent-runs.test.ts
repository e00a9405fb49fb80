// Two runs of one job at once into the same object, gs:// and s3://, as concurrent-runs.test.ts
// does for a local file: real CLI processes, each store behind the proxy that enforces its
// conditional publish as the real service does (Cloud Storage's ifGenerationMatch on the rewrite,
// S3's If-Match / If-None-Match on the copy; fake-gcs-server and moto ignore them). Each run
// exports a different filter, so an object mixing them would show.
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parse } from 'csv-parse/sync';
import { expect, it } from 'vitest';
import { parse as parseYaml, stringify } from 'yaml';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { sandboxEnv, writeWorkspace } from '../support/cli-harness.js';
import { describeWithFakeGcs } from '../support/fake-gcs-server.js';
import { describeWithObjectStores, type TestObjectStore } from '../support/object-stores.js';
import { detailQueryOfRun } from '../support/queries.js';
import { sandboxAndRootForAll } from '../support/sandbox-fixture.js';
import { spawnCli, type ChildResult } from '../support/spawn-cli.js';

const INCIDENTS = 240;
const ROUNDS = 3;
const OBJECT = 'shared/incident_detail.csv';

// 12 pages of 20 rows at 100 ms each, one at a time: a run lasts well over a second, longer than
// the spread of two process starts, so each opens before the other publishes.
const fixture = sandboxAndRootForAll({ incidents: INCIDENTS, latencyMs: 100 });

/** Which run the object holds: exactly its rows (incidents 10·run+1 .. INCIDENTS, once, in order), or a failure. */
function wholeRunOf(bytes: Buffer): number {
  const [header, ...rows] = parse(bytes) as string[][];
  expect(header).toEqual(['Number', 'Created', 'Description', 'Severity']);
  const numbers = rows.map((row) => Number(row[0]));
  const run = Math.floor(((numbers[0] ?? 1) - 1) / 10);
  expect(numbers, 'the object mixes runs or lost rows').toEqual(Array.from({ length: INCIDENTS - 10 * run }, (_, i) => 10 * run + 1 + i));
  return run;
}

/** Two CLI runs at once, run i exporting only incidents above 10·i, both into `<scheme>://bucket/shared/`. */
async function runPair(
  store: Pick<TestObjectStore, 'kind' | 'scheme' | 'configure'>,
  bucket: string,
  round: number,
  env: Record<string, string>,
): Promise<[ChildResult, ChildResult]> {
  const workspaces = [];
  for (const run of [0, 1]) {
    const workspace = await writeWorkspace(
      path.join(fixture.root, `${store.kind}-${bucket}-${round}-${run}`),
      fixture.sandbox,
      [{ name: 'incident_detail', tile: SANDBOX_TILE, query: detailQueryOfRun(run), sinks: [{ type: 'csv' }] }],
      { itemsPerPage: 20, concurrency: 1 },
    );
    const config = parseYaml(await readFile(workspace.configFile, 'utf8')) as { sinks: Record<string, unknown> };
    config.sinks.csv = { directory: `${store.scheme}://${bucket}/shared` };
    await writeFile(workspace.configFile, stringify(config));
    await store.configure(workspace.configFile);
    workspaces.push(workspace);
  }
  const runs = workspaces.map(({ configFile, jobsDir }) =>
    spawnCli(['run', '--config', configFile, '--jobs', jobsDir], { env: { ...sandboxEnv(fixture.sandbox), ...env }, timeoutMs: 45_000 }),
  );
  return Promise.all(runs) as Promise<[ChildResult, ChildResult]>;
}

describeWithObjectStores('two runs of one job at once into one object', (store) => {
  it('each exits 0, or one exits 1 with target_changed naming the other run; the object is always one whole run', async () => {
    const bucket = await store.newBucket('pair');
    let refused = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const [a, b] = await runPair(store, bucket, round, store.processEnv());
      const publishedBy = await store.runIdOf(bucket, OBJECT);
      const held = wholeRunOf(await store.bytes(bucket, OBJECT));
      for (const [run, result] of [a, b].entries()) {
        expect(result.timedOut).toBe(false);
        if (result.code === 0) continue;
        refused += 1;
        expect(result.code, result.stderr).toBe(1);
        expect(result.stderr).toMatch(new RegExp(`FAIL incident_detail \\(.*\\): target_changed: csv ${store.scheme}://${bucket}/${OBJECT}: `));
        // It names the run that holds the object now, and that run is the other one.
        expect(result.stderr).toContain(`written by run ${String(publishedBy)} of job incident_detail`);
        expect(result.stderr).toContain('nothing was overwritten and this run published nothing');
        expect(held).toBe(1 - run);
        expect([a, b][1 - run]!.code).toBe(0);
      }
      expect(a.code === 0 || b.code === 0, 'both runs failed').toBe(true);
      // The refused run deletes its temp object; nothing else is left.
      expect((await store.objects(bucket)).map(([key]) => key)).toEqual([OBJECT]);
    }
    // Both opened before either published, so the condition refused the later publish at least once.
    expect(refused).toBeGreaterThan(0);
    if (store.refusedPublishes !== undefined) expect(store.refusedPublishes()).toBe(refused);
  }, 150_000);
});

// fake-gcs-server ignores ifGenerationMatch on rewrites (see the proxy), so without the proxy both
// publish and the later rewrite wins: still a check that the object is never a mix of the two.
describeWithFakeGcs('two runs of one job at once into one gs:// object, fake-gcs-server alone', (gcs) => {
  it('both exit 0 and the object is always one whole run', async () => {
    const store = { kind: 'gcs', scheme: 'gs', configure: async () => undefined } as const;
    const bucket = await gcs.newBucket('pair');
    for (let round = 0; round < ROUNDS; round++) {
      const [a, b] = await runPair(store, bucket, round, { STORAGE_EMULATOR_HOST: gcs.origin });
      for (const result of [a, b]) expect(result.code, result.stderr).toBe(0);
      const objects = gcs.storage.bucket(bucket);
      wholeRunOf((await objects.file(OBJECT).download())[0]);
      expect((await objects.getFiles())[0].map((file) => file.name)).toEqual([OBJECT]);
    }
  }, 150_000);
});
