// tilehouse run into s3:// killed with SIGKILL at seeded moments, as gcs-crash-safety.test.ts does
// for gs://: the real CLI as a child process, `sinks.s3.endpoint` pointing at the proxy in front of
// moto (s3-proxy.ts: it holds each CopyObject a little, so some kills land between prepare and
// publish, when the temp object exists), read back with the test's own client.
import { once } from 'node:events';
import { readFile, writeFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { HeadObjectCommand } from '@aws-sdk/client-s3';
import { parse } from 'csv-parse/sync';
import { beforeAll, expect, it } from 'vitest';
import { parse as parseYaml, stringify } from 'yaml';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { parseOwnerTag } from '../../src/temp-owner.js';
import { OWNER_METADATA_KEY } from '../../src/sinks/stores/s3/temp-keys.js';
import { runCli, sandboxEnv, writeWorkspace, type Workspace } from '../support/cli-harness.js';
import { spawnCli } from '../support/child-process.js';
import { seededRandom } from '../support/gcs-kill.js';
import { detailQuery } from '../support/queries.js';
import { describeWithS3, getBytes, keysOf, putBytes, TEST_AWS_ENV } from '../support/s3-server.js';
import { sandboxAndRootForAll } from '../support/sandbox-fixture.js';

const KILLS = 12;
const INCIDENTS = 600;
const PAGES = 20;
const PREVIOUS = Buffer.from('Number,Created,Description,Severity\r\nprevious run\r\n');
const HOLD_COPY_MS = 150;
const TARGET = 'nightly/incident_detail.csv';
const job = { name: 'incident_detail', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }] };

const fixture = sandboxAndRootForAll({ incidents: INCIDENTS, latencyMs: 15 });
const isTemp = (name: string) => /\.tilehouse-[^/]*\.tmp( \(upload\))?$/.test(name);

describeWithS3('a run into s3:// killed with SIGKILL', (s3) => {
  let workspace: Workspace;
  let bucket: string;

  beforeAll(async () => {
    bucket = await s3.newBucket('kill');
    workspace = await writeWorkspace(fixture.root, fixture.sandbox, [job], { itemsPerPage: INCIDENTS / PAGES, concurrency: 1 });
    const config = parseYaml(await readFile(workspace.configFile, 'utf8')) as { sinks: Record<string, unknown> };
    config.sinks = { ...config.sinks, csv: { directory: `s3://${bucket}/nightly` }, s3: { endpoint: s3.endpoint } };
    await writeFile(workspace.configFile, stringify(config));
  });

  const runInProcess = () => runCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir], { env: sandboxEnv(fixture.sandbox) });

  /** The run as a child, killed at the kill-th of KILLS moments: after a page, in prepare, while the copy is held, or after it. */
  async function killAt(kill: number, random: () => number) {
    const slots = PAGES + 6;
    const before = fixture.sandbox.requests.length;
    const copiesBefore = s3.proxy.copiesReceived;
    const child = spawnCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir], {
      env: { ...process.env, CI: '', ...sandboxEnv(fixture.sandbox), ...TEST_AWS_ENV },
      stdio: 'ignore',
    });
    let exited = false;
    const exit = once(child, 'exit').then(() => (exited = true));
    const moment = Math.min(slots - 1, Math.floor(((kill + random()) * slots) / KILLS));
    const pages = () => fixture.sandbox.requests.slice(before).filter((request) => request.endpoint === 'export').length;
    while (!exited && pages() < Math.min(moment, PAGES)) await sleep(2);
    const phase = moment < PAGES ? 'export' : (['prepare', 'publish', 'published'] as const)[Math.floor((moment - PAGES) / 2)]!;
    if (phase === 'prepare') await sleep(Math.floor(random() * 20));
    if (phase === 'publish' || phase === 'published') while (!exited && s3.proxy.copiesReceived === copiesBefore) await sleep(2);
    if (phase === 'publish') await sleep(Math.floor(random() * HOLD_COPY_MS * 0.7));
    if (phase === 'published') await sleep(HOLD_COPY_MS + 150 + Math.floor(random() * 100));
    child.kill('SIGKILL');
    await exit;
    await s3.proxy.settled();
    return { phase, moment, pid: child.pid };
  }

  it(`leaves the previous or the complete object at ${KILLS} seeded moments; the next run sweeps the killed runs' temp objects and is byte-exact`, async () => {
    expect((await runInProcess()).exitCode).toBe(0);
    const reference = await getBytes(s3.client, bucket, TARGET);
    expect(parse(reference)).toHaveLength(INCIDENTS + 1);

    const random = seededRandom(20261126);
    const seen = { previous: 0, complete: 0, leftTemp: new Set<string>() };
    s3.proxy.holdCopies(HOLD_COPY_MS);
    for (let kill = 0; kill < KILLS; kill += 1) {
      await putBytes(s3.client, bucket, TARGET, PREVIOUS);
      const { phase, moment, pid } = await killAt(kill, random);
      const after = await getBytes(s3.client, bucket, TARGET);
      if (after.equals(PREVIOUS)) seen.previous += 1;
      else {
        expect(after.equals(reference), `kill ${kill} (${phase}, moment ${moment}) left an object that is neither the previous nor the complete run`).toBe(
          true,
        );
        seen.complete += 1;
      }
      const names = await keysOf(s3.client, bucket);
      for (const name of names.filter((key) => isTemp(key) && !key.endsWith('(upload)'))) {
        const head = await s3.client.send(new HeadObjectCommand({ Bucket: bucket, Key: name }));
        expect(parseOwnerTag(String(head.Metadata?.[OWNER_METADATA_KEY]))?.pid, `owner of ${name}`).toBe(pid);
        seen.leftTemp.add(name);
      }
      expect(names.filter((name) => !isTemp(name))).toEqual([TARGET]);
    }
    s3.proxy.holdCopies(0);
    expect(seen.previous).toBeGreaterThan(0);
    expect(seen.complete).toBeGreaterThan(0);
    expect(seen.leftTemp.size, 'no kill landed between prepare and publish, so the sweep had nothing to do').toBeGreaterThan(0);

    const leftover = (await keysOf(s3.client, bucket)).filter((name) => isTemp(name) && !name.endsWith('(upload)'));
    const rerun = await runInProcess();
    expect(rerun.exitCode).toBe(0);
    expect((await getBytes(s3.client, bucket, TARGET)).equals(reference)).toBe(true);
    expect(await keysOf(s3.client, bucket)).toEqual([TARGET]);
    if (leftover.length > 0) {
      const swept = rerun.logs.find((line) => String(line.msg).includes('left by a run that is gone'));
      expect(swept).toMatchObject({ files: expect.arrayContaining(leftover.map((name) => `s3://${bucket}/${name}`)) });
    }
  }, 150_000);
});
