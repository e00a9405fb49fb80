// tilehouse run into gs:// killed with SIGKILL at seeded moments, as crash-safety.test.ts does for
// a local file: the real CLI as a child process, STORAGE_EMULATOR_HOST pointing at a proxy in
// front of fake-gcs-server (gcs-precondition-proxy.ts: it holds each rewrite a little, so some
// kills land between prepare and publish, when the temp object exists), read back with the client.
import { once } from 'node:events';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Storage } from '@google-cloud/storage';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { OWNER_METADATA_KEY } from '../../src/sinks/gcs/temp-objects.js';
import { parseOwnerTag } from '../../src/temp-owner.js';
import { runCli, sandboxEnv, writeWorkspace, type Workspace } from '../support/cli-harness.js';
import { spawnCli } from '../support/child-process.js';
import { describeWithFakeGcs, fakeGcsClient } from '../support/fake-gcs-server.js';
import { startGcsPreconditionProxy, type GcsPreconditionProxy } from '../support/gcs-precondition-proxy.js';
import { detailQuery } from '../support/queries.js';
import { sandboxAndRootForAll } from '../support/sandbox-fixture.js';

const KILLS = 20;
const INCIDENTS = 600;
const PAGES = 20;
/** Kill moments: one per page request, then two each in prepare, during the rewrite, after it. */
const SLOTS = PAGES + 6;
const PREVIOUS = Buffer.from('Number,Created,Description,Severity\r\nprevious run\r\n');
const HOLD_REWRITE_MS = 120;
const job = { name: 'incident_detail', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }] };

// 20 pages, 15 ms each, one at a time: a run lasts long enough to be killed anywhere in it.
const fixture = sandboxAndRootForAll({ incidents: INCIDENTS, latencyMs: 15 });

const isTemp = (name: string) => /\.tilehouse-[^/]*\.tmp$/.test(name);

describeWithFakeGcs('a run into gs:// killed with SIGKILL', (gcs) => {
  let proxy: GcsPreconditionProxy;
  let storage: Storage;
  let workspace: Workspace;
  let bucket: string;

  beforeAll(async () => {
    proxy = await startGcsPreconditionProxy(gcs.origin);
    storage = await fakeGcsClient(proxy.origin);
    bucket = await gcs.newBucket('kill');
    workspace = await writeWorkspace(fixture.root, fixture.sandbox, [job], { itemsPerPage: INCIDENTS / PAGES, concurrency: 1 });
    await writeFile(workspace.configFile, (await readFile(workspace.configFile, 'utf8')).replace(/directory: .*/, `directory: gs://${bucket}/nightly`));
  });
  afterAll(async () => {
    await proxy?.close();
  });

  const runInProcess = () =>
    runCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir], { env: sandboxEnv(fixture.sandbox), seams: { sinkOptions: { storageClient: storage } } });
  const objectNames = async () => (await storage.bucket(bucket).getFiles())[0].map((file) => file.name).sort();
  const target = () => storage.bucket(bucket).file('nightly/incident_detail.csv');

  it(`leaves the previous or the complete object at ${KILLS} seeded moments; the next run sweeps the killed runs' temp objects and is byte-exact`, async () => {
    // The reference: one clean run, parsed back whole.
    expect((await runInProcess()).exitCode).toBe(0);
    const [reference] = await target().download();
    expect(parse(reference)).toHaveLength(INCIDENTS + 1);

    let seed = 20261125;
    const random = () => (seed = (seed * 48271) % 2147483647) / 2147483647;
    const seen = { previous: 0, complete: 0, absentBeforeFirst: 0, leftTemp: new Set<string>() };
    proxy.holdRewrites(HOLD_REWRITE_MS);
    for (let kill = 0; kill < KILLS; kill += 1) {
      // Kill 0 finds no object at all (a first publish); the others find the previous run's.
      if (kill === 0) await target().delete();
      else await target().save(PREVIOUS, { resumable: false });
      const before = fixture.sandbox.requests.length;
      const rewritesBefore = proxy.rewritesReceived;
      const child = spawnCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir], {
        env: { ...process.env, CI: '', ...sandboxEnv(fixture.sandbox), STORAGE_EMULATOR_HOST: proxy.origin },
        stdio: 'ignore',
      });
      let exitedAlready = false;
      const exited = once(child, 'exit').then(() => (exitedAlready = true));
      // The moment is a point in the run, not on the clock (a loaded machine starts tsx slower),
      // stratified so the kills cover the whole run: after the k-th page request, k from 0 (before
      // the token) to PAGES - 1; then, two slots each, in prepare (the upload finishing), while
      // the publish's rewrite is held (the temp object whole, the target untouched), and after it.
      const moment = Math.min(SLOTS - 1, Math.floor(((kill + random()) * SLOTS) / KILLS));
      const pagesRequested = () => fixture.sandbox.requests.slice(before).filter((r) => r.endpoint === 'export').length;
      const rewriteArrived = () => proxy.rewritesReceived > rewritesBefore;
      while (!exitedAlready && pagesRequested() < Math.min(moment, PAGES)) await sleep(2);
      const phase = moment < PAGES ? 'export' : (['prepare', 'publish', 'published'] as const)[Math.floor((moment - PAGES) / 2)]!;
      if (phase === 'prepare') await sleep(Math.floor(random() * 20));
      if (phase !== 'export' && phase !== 'prepare') while (!exitedAlready && !rewriteArrived()) await sleep(2);
      if (phase === 'publish') await sleep(Math.floor(random() * HOLD_REWRITE_MS * 0.7));
      if (phase === 'published') await sleep(HOLD_REWRITE_MS + 150 + Math.floor(random() * 100));
      child.kill('SIGKILL');
      await exited;
      await proxy.settled();

      const names = await objectNames();
      const [exists] = await target().exists();
      if (!exists) {
        expect(kill, `kill ${kill} (${phase}, moment ${moment}) removed the previous object`).toBe(0);
        seen.absentBeforeFirst += 1;
      } else {
        const [after] = await target().download();
        if (after.equals(PREVIOUS)) seen.previous += 1;
        else {
          expect(after.equals(reference), `kill ${kill} (${phase}, moment ${moment}) left an object that is neither the previous nor the complete run`).toBe(true);
          expect(parse(after)).toHaveLength(INCIDENTS + 1);
          seen.complete += 1;
        }
      }
      // A temp object left by the kill names the dead process as its owner.
      for (const name of names.filter(isTemp)) {
        const [metadata] = await storage.bucket(bucket).file(name).getMetadata();
        expect(parseOwnerTag(String(metadata.metadata?.[OWNER_METADATA_KEY]))?.pid, `owner of ${name}`).toBe(child.pid);
        seen.leftTemp.add(name);
      }
      // Only this job's target and temp objects: never a second, partial object.
      expect(names.filter((name) => !isTemp(name))).toEqual(exists ? ['nightly/incident_detail.csv'] : []);
    }
    proxy.holdRewrites(0);
    // The seeded moments hit every phase: before the first publish, mid-export, and between prepare and publish.
    expect(seen.absentBeforeFirst + seen.previous).toBeGreaterThan(0);
    expect(seen.complete).toBeGreaterThan(0);
    expect(seen.leftTemp.size, 'no kill landed between prepare and publish, so the sweep had nothing to do').toBeGreaterThan(0);

    // The next run sweeps every temp object whose owner is gone (a killed run that got as far as
    // its own sweep may have removed earlier ones already), and publishes the exact bytes.
    const leftover = (await objectNames()).filter(isTemp);
    const rerun = await runInProcess();
    expect(rerun.exitCode).toBe(0);
    expect((await target().download())[0].equals(reference)).toBe(true);
    expect(await objectNames()).toEqual(['nightly/incident_detail.csv']);
    if (leftover.length > 0) {
      const swept = rerun.logs.find((line) => String(line.msg).includes('left by a run that is gone'));
      expect(swept).toMatchObject({ files: expect.arrayContaining(leftover.map((name) => `gs://${bucket}/${name}`)) });
    }
  }, 150_000);
});
