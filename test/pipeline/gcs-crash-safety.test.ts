// tilehouse run into gs:// killed with SIGKILL at seeded moments, as crash-safety.test.ts does for
// a local file: the real CLI as a child process, STORAGE_EMULATOR_HOST pointing at a proxy in
// front of fake-gcs-server (gcs-precondition-proxy.ts: it holds each rewrite a little, so some
// kills land between prepare and publish, when the temp object exists), read back with the client.
import { readFile, writeFile } from 'node:fs/promises';
import type { Storage } from '@google-cloud/storage';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { OWNER_METADATA_KEY } from '../../src/sinks/stores/gcs/temp-objects.js';
import { parseOwnerTag } from '../../src/temp-owner.js';
import { runCli, sandboxEnv, writeWorkspace, type Workspace } from '../support/cli-harness.js';
import { describeWithFakeGcs, fakeGcsClient } from '../support/fake-gcs-server.js';
import { startGcsPreconditionProxy, type GcsPreconditionProxy } from '../support/gcs-precondition-proxy.js';
import { killGcsRunAtMoment, seededRandom } from '../support/gcs-kill.js';
import { detailQuery } from '../support/queries.js';
import { sandboxAndRootForAll } from '../support/sandbox-fixture.js';

const KILLS = 20;
const INCIDENTS = 600;
const PAGES = 20;
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
    runCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir], {
      env: sandboxEnv(fixture.sandbox),
      seams: { sinkOptions: { storageClient: storage } },
    });
  const objectNames = async () => (await storage.bucket(bucket).getFiles())[0].map((file) => file.name).sort();
  const target = () => storage.bucket(bucket).file('nightly/incident_detail.csv');

  it(`leaves the previous or the complete object at ${KILLS} seeded moments; the next run sweeps the killed runs' temp objects and is byte-exact`, async () => {
    // The reference: one clean run, parsed back whole.
    expect((await runInProcess()).exitCode).toBe(0);
    const [reference] = await target().download();
    expect(parse(reference)).toHaveLength(INCIDENTS + 1);

    const random = seededRandom(20261125);
    const seen = { previous: 0, complete: 0, absentBeforeFirst: 0, leftTemp: new Set<string>() };
    proxy.holdRewrites(HOLD_REWRITE_MS);
    for (let kill = 0; kill < KILLS; kill += 1) {
      // Kill 0 finds no object at all (a first publish); the others find the previous run's.
      if (kill === 0) await target().delete();
      else await target().save(PREVIOUS, { resumable: false });
      const { phase, moment, pid } = await killGcsRunAtMoment({
        workspace,
        sandbox: fixture.sandbox,
        proxy,
        kill,
        kills: KILLS,
        pages: PAGES,
        holdRewriteMs: HOLD_REWRITE_MS,
        random,
      });

      const names = await objectNames();
      const [exists] = await target().exists();
      if (!exists) {
        expect(kill, `kill ${kill} (${phase}, moment ${moment}) removed the previous object`).toBe(0);
        seen.absentBeforeFirst += 1;
      } else {
        const [after] = await target().download();
        if (after.equals(PREVIOUS)) seen.previous += 1;
        else {
          expect(after.equals(reference), `kill ${kill} (${phase}, moment ${moment}) left an object that is neither the previous nor the complete run`).toBe(
            true,
          );
          expect(parse(after)).toHaveLength(INCIDENTS + 1);
          seen.complete += 1;
        }
      }
      // A temp object left by the kill names the dead process as its owner.
      for (const name of names.filter(isTemp)) {
        const [metadata] = await storage.bucket(bucket).file(name).getMetadata();
        expect(parseOwnerTag(String(metadata.metadata?.[OWNER_METADATA_KEY]))?.pid, `owner of ${name}`).toBe(pid);
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
