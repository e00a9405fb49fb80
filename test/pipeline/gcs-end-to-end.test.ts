// tilehouse run, as a user runs it (a child process, STORAGE_EMULATOR_HOST in its environment),
// from the sandbox source to gs:// objects on fake-gcs-server, read back with the storage client.
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SANDBOX_TILE, startSandbox, type Sandbox } from '../../sandbox/index.js';
import { runCli, sandboxEnv, writeWorkspace } from '../support/cli-harness.js';
import { describeWithFakeGcs } from '../support/fake-gcs-server.js';
import { detailQuery } from '../support/queries.js';
import { spawnCli } from '../support/spawn-cli.js';
import { makeTempDir } from '../support/temp-dir.js';

let sandbox: Sandbox;
let root: string;

beforeAll(async () => {
  sandbox = await startSandbox({ incidents: 150 });
  root = await makeTempDir();
});
afterAll(async () => {
  await sandbox?.close();
  await rm(root, { recursive: true, force: true });
});

describeWithFakeGcs('tilehouse run to gs://', (gcs) => {
  it('writes the same bytes to a gs:// object as the local sink writes to a file, and a gzip object with its manifest', async () => {
    const bucket = await gcs.newBucket('e2e');
    const jobs = [
      { name: 'incident_detail', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }] },
      {
        name: 'incident_gz',
        tile: SANDBOX_TILE,
        query: detailQuery,
        sinks: [{ type: 'csv', path: `gs://${bucket}/full/{name}.csv.gz`, gzip: true, manifest: true }],
      },
    ];
    const local = await writeWorkspace(path.join(root, 'local'), sandbox, jobs.slice(0, 1), { itemsPerPage: 40 });
    expect((await runCli(['run', '--config', local.configFile, '--jobs', local.jobsDir], { env: sandboxEnv(sandbox) })).exitCode).toBe(0);
    const remote = await writeWorkspace(path.join(root, 'remote'), sandbox, jobs, { itemsPerPage: 40 });
    // The environment's CSV directory becomes a bucket prefix: relative paths resolve under it.
    const config = (await readFile(remote.configFile, 'utf8')).replace(/directory: .*/, `directory: gs://${bucket}/nightly`);
    await writeFile(remote.configFile, config);
    const result = await spawnCli(['run', '--config', remote.configFile, '--jobs', remote.jobsDir], {
      env: { ...sandboxEnv(sandbox), STORAGE_EMULATOR_HOST: gcs.origin },
      timeoutMs: 60_000,
    });
    expect(result.stderr).toMatch(/2 succeeded, 0 failed/);
    expect(result.code).toBe(0);

    const objects = gcs.storage.bucket(bucket);
    const [files] = await objects.getFiles();
    expect(files.map((file) => file.name).sort()).toEqual(['full/incident_gz.csv.gz', 'full/incident_gz.csv.gz.manifest.json', 'nightly/incident_detail.csv']);
    const [plain] = await objects.file('nightly/incident_detail.csv').download();
    const localBytes = await readFile(path.join(local.outDir, 'incident_detail.csv'));
    expect(plain.equals(localBytes)).toBe(true);
    const records = parse(plain) as string[][];
    expect(records.length).toBe(151); // header + 150 incidents
    const [gz] = await objects.file('full/incident_gz.csv.gz').download();
    expect(gunzipSync(gz).equals(localBytes)).toBe(true);
    const manifest = JSON.parse(String((await objects.file('full/incident_gz.csv.gz.manifest.json').download())[0])) as { rows: number; bytes: number };
    expect(manifest).toMatchObject({ rows: 150, bytes: gz.length });
    // No local directory named after the URL (what a gs:// path made before this sink existed).
    expect(await readdir(path.join(root, 'remote'))).not.toContain('gs:');
    expect(await readdir(process.cwd())).not.toContain('gs:');
  });

  // Sinks open once page 0 has told the columns (read-into-sinks.ts), so "before any row" means
  // before any row is written: the bucket is checked when the writer opens.
  it('fails an unknown bucket when the sink opens, with its stable code and exit 1, writing nothing', async () => {
    const jobs = [{ name: 'incident_detail', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv', path: 'gs://no-such-bucket-e2e/x.csv' }] }];
    const workspace = await writeWorkspace(path.join(root, 'missing'), sandbox, jobs, { itemsPerPage: 40 });
    const result = await spawnCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir], {
      env: { ...sandboxEnv(sandbox), STORAGE_EMULATOR_HOST: gcs.origin },
      timeoutMs: 60_000,
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('bucket_not_found');
    expect(result.stderr).toContain('bucket no-such-bucket-e2e does not exist');
    expect((await gcs.storage.getBuckets())[0].map((bucket) => bucket.name)).not.toContain('no-such-bucket-e2e');
  });
});
