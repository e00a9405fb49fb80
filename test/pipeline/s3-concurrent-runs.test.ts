// Two runs of one job at once into the same s3:// object, as gcs-concurrent-runs.test.ts does for
// gs://: real CLI processes, `sinks.s3.endpoint` pointing at the proxy in front of moto (which
// enforces CopyObject's destination conditions, as S3 does and moto does not). Each run exports a
// different filter, so an object mixing them would show.
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { HeadObjectCommand } from '@aws-sdk/client-s3';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parse as parseYaml, stringify } from 'yaml';
import { SANDBOX_TILE, startSandbox, type Sandbox } from '../../sandbox/index.js';
import { RUN_ID_METADATA_KEY } from '../../src/sinks/s3/temp-keys.js';
import { sandboxEnv, writeWorkspace } from '../support/cli-harness.js';
import { detailQueryOfRun } from '../support/queries.js';
import { describeWithS3, getBytes, keysOf, TEST_AWS_ENV } from '../support/s3-server.js';
import { spawnCli, type ChildResult } from '../support/spawn-cli.js';
import { makeTempDir } from '../support/temp-dir.js';

const INCIDENTS = 240;
const ROUNDS = 3;
const OBJECT = 'shared/incident_detail.csv';

let sandbox: Sandbox;
let root: string;
beforeAll(async () => {
  // 12 pages of 20 rows at 100 ms each, one at a time: each run opens before the other publishes.
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

describeWithS3('two runs of one job at once into one s3:// object', (s3) => {
  it('each exits 0, or one exits 1 with target_changed naming the other run; the object is always one whole run', async () => {
    const bucket = await s3.newBucket('pair');
    let refused = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const children: Array<Promise<ChildResult>> = [];
      const workspaces = [];
      for (const run of [0, 1]) {
        const workspace = await writeWorkspace(
          path.join(root, `${round}-${run}`),
          sandbox,
          [{ name: 'incident_detail', tile: SANDBOX_TILE, query: detailQueryOfRun(run), sinks: [{ type: 'csv' }] }],
          { itemsPerPage: 20, concurrency: 1 },
        );
        const config = parseYaml(await readFile(workspace.configFile, 'utf8')) as { sinks: Record<string, unknown> };
        config.sinks = { csv: { directory: `s3://${bucket}/shared` }, s3: { endpoint: s3.endpoint } };
        await writeFile(workspace.configFile, stringify(config));
        workspaces.push(workspace);
      }
      for (const { configFile, jobsDir } of workspaces) {
        children.push(spawnCli(['run', '--config', configFile, '--jobs', jobsDir], { env: { ...sandboxEnv(sandbox), ...TEST_AWS_ENV }, timeoutMs: 45_000 }));
      }
      const [a, b] = await Promise.all(children);
      const publishedBy = (await s3.client.send(new HeadObjectCommand({ Bucket: bucket, Key: OBJECT }))).Metadata?.[RUN_ID_METADATA_KEY];
      const held = wholeRunOf(await getBytes(s3.client, bucket, OBJECT));
      for (const [run, result] of [a!, b!].entries()) {
        expect(result.timedOut).toBe(false);
        if (result.code === 0) continue;
        refused += 1;
        expect(result.code, result.stderr).toBe(1);
        expect(result.stderr).toMatch(/FAIL incident_detail \(.*\): target_changed: /);
        expect(result.stderr).toContain(`written by run ${String(publishedBy)} of job incident_detail`);
        expect(result.stderr).toContain('nothing was overwritten and this run published nothing');
        expect(held).toBe(1 - run);
        expect([a, b][1 - run]!.code).toBe(0);
      }
      expect(a!.code === 0 || b!.code === 0, 'both runs failed').toBe(true);
      expect(await keysOf(s3.client, bucket)).toEqual([OBJECT]);
    }
    // Both opened before either published, so the condition refused the later copy at least once.
    expect(refused).toBeGreaterThan(0);
  }, 150_000);
});
