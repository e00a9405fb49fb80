// `tilehouse check` with a gs:// CSV target: the bucket exists and may be written, found without
// writing. fake-gcs-server has no IAM (testIamPermissions answers 404), so the permission answers
// come from a proxy that replies as Cloud Storage does, and the test asserts the exact request.
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { SANDBOX_TILE, startSandbox, type Sandbox } from '../../sandbox/index.js';
import { runCli, sandboxEnv, writeWorkspace } from '../support/cli-harness.js';
import { describeWithFakeGcs, fakeGcsClient } from '../support/fake-gcs-server.js';
import { answerJson, startGcsProxy } from '../support/gcs-proxy.js';
import { detailQuery } from '../support/queries.js';
import { makeTempDir } from '../support/temp-dir.js';

let sandbox: Sandbox;
let root: string;
beforeAll(async () => {
  sandbox = await startSandbox({ incidents: 30 });
  root = await makeTempDir();
});
afterAll(async () => {
  await sandbox?.close();
  await rm(root, { recursive: true, force: true });
});

describeWithFakeGcs('tilehouse check with a gs:// CSV target', (gcs) => {
  let proxy: Awaited<ReturnType<typeof startGcsProxy>> | undefined;
  afterEach(async () => {
    await proxy?.close();
  });

  async function checkWith(bucket: string, granted: string[] | 'no-iam', name: string) {
    proxy = await startGcsProxy(gcs.origin, (incoming, response) => {
      if (!incoming.url!.includes('/iam/testPermissions')) return false;
      if (granted === 'no-iam') return answerJson(response, 404, 'notFound', 'Not Found');
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ kind: 'storage#testIamPermissionsResponse', permissions: granted }));
      return true;
    });
    const workspace = await writeWorkspace(path.join(root, name), sandbox, [
      { name: 'detail', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }] },
    ]);
    await writeFile(workspace.configFile, (await readFile(workspace.configFile, 'utf8')).replace(/directory: .*/, `directory: gs://${bucket}/nightly`));
    const result = await runCli(['check', '--config', workspace.configFile, '--jobs', workspace.jobsDir], {
      env: sandboxEnv(sandbox),
      seams: { sinkOptions: { storageClient: await fakeGcsClient(proxy.origin) } },
    });
    return { result, seen: proxy.seen };
  }

  it('says the bucket is writable when every permission a run needs is granted, writing nothing', async () => {
    const bucket = await gcs.newBucket('check');
    const all = ['storage.objects.create', 'storage.objects.delete', 'storage.objects.get', 'storage.objects.list'];
    const { result, seen } = await checkWith(bucket, all, 'all');
    expect(result).toMatchObject({
      exitCode: 0,
      stdout: `ok job detail: 30 rows in the tile, 4 columns; gs://${bucket}/nightly/: writable\n  gs://${bucket}/nightly/detail.csv guard: passes: 30 rows; no target yet\n`,
    });
    const asked = new URL(seen.find((line) => line.includes('/iam/testPermissions'))!.split(' ')[1]!, 'http://x').searchParams.getAll('permissions');
    expect(asked.sort()).toEqual(all);
    expect(seen.every((line) => line.startsWith('GET '))).toBe(true);
    expect((await gcs.storage.bucket(bucket).getFiles())[0]).toEqual([]);
  });

  it('fails naming the missing permissions and the bucket (permission_denied, exit 1)', async () => {
    const bucket = await gcs.newBucket('check');
    const { result } = await checkWith(bucket, ['storage.objects.get', 'storage.objects.list'], 'some');
    expect(result.exitCode).toBe(1);
    expect(result.stdout).toBe(
      `FAIL job detail: permission_denied: csv gs://${bucket}/nightly/: missing storage.objects.create, storage.objects.delete on bucket ${bucket} (grant roles/storage.objectUser on the bucket)\n`,
    );
  });

  it('fails an unknown bucket (bucket_not_found), and says so when an endpoint has no IAM to test', async () => {
    expect((await checkWith('no-such-bucket-check', [], 'missing')).result.stdout).toMatch(/^FAIL job detail: bucket_not_found: /);
    await proxy?.close();
    const bucket = await gcs.newBucket('check');
    const { result } = await checkWith(bucket, 'no-iam', 'no-iam');
    expect(result).toMatchObject({
      exitCode: 0,
      stdout: `ok job detail: 30 rows in the tile, 4 columns; gs://${bucket}/nightly/: bucket found; permissions not tested (this endpoint has no IAM)\n  gs://${bucket}/nightly/detail.csv guard: passes: 30 rows; no target yet\n`,
    });
  });
});
