// Issue 26, "Refuse before the first page": every sink's cheap checks run before the first export
// request, so a bad target costs no source traffic. Each bad target below fails its job (exit 1)
// naming the target, with zero export requests at the sandbox; each legal-but-unusual target
// (a directory not yet there, an existing bucket on an endpoint without IAM) still runs.
import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { SANDBOX_TILE, startSandbox, type Sandbox } from '../../sandbox/index.js';
import { listFiles, runCli, sandboxEnv, writeWorkspace, type Workspace } from '../support/cli-harness.js';
import { describeWithFakeGcs, fakeGcsClient } from '../support/fake-gcs-server.js';
import { answerJson, startGcsProxy } from '../support/gcs-proxy.js';
import { describeWithEmulator, uniqueDatasetId } from '../support/bigquery-emulator.js';
import { startEmulatorWithCopyJobs, type EmulatorWithCopyJobs } from '../support/bigquery-fake-server.js';
import { writeBigQueryWorkspace } from '../support/bigquery-workspace.js';
import { dailyCsvBackfillJob, detailQuery } from '../support/queries.js';
import { makeTempDir } from '../support/temp-dir.js';
import { spawnCli } from '../support/spawn-cli.js';
import { openToOthers, UNPRIVILEGED } from '../support/unprivileged.js';

let sandbox: Sandbox;
let root: string;
let caseDir: string;
let cases = 0;

beforeAll(async () => {
  // rw windows of the backfill case are relative to the server's "now": the real clock.
  sandbox = await startSandbox({ incidents: 120, now: new Date() });
  root = await makeTempDir();
});
afterAll(async () => {
  await sandbox?.close();
  await rm(root, { recursive: true, force: true });
});
beforeEach(() => {
  cases += 1;
  caseDir = path.join(root, `case-${cases}`);
});

const detail = { name: 'detail', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }] };

/** What the sandbox was asked since `before`, by endpoint. */
function requestsSince(before: number) {
  const seen = sandbox.requests.slice(before);
  return { exports: seen.filter((request) => request.endpoint === 'export').length, tokens: seen.filter((request) => request.endpoint === 'token').length };
}

async function withCsvDirectory(workspace: Workspace, directory: string): Promise<void> {
  await writeFile(workspace.configFile, (await readFile(workspace.configFile, 'utf8')).replace(/directory: .*/, `directory: ${directory}`));
}

async function run(workspace: Workspace, seams = {}, command = ['run']) {
  const before = sandbox.requests.length;
  const result = await runCli([...command, '--config', workspace.configFile, '--jobs', workspace.jobsDir], { env: sandboxEnv(sandbox), seams });
  return { result, ...requestsSince(before) };
}

describe('a local CSV directory', () => {
  it('below a regular file (unwritable even for root): exit 1 naming it, zero requests at the source', async () => {
    const workspace = await writeWorkspace(caseDir, sandbox, [detail]);
    const file = path.join(caseDir, 'not-a-directory');
    await writeFile(file, 'a file where a directory should be\n');
    await withCsvDirectory(workspace, path.join(file, 'out'));
    const { result, exports, tokens } = await run(workspace);
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain(`target_unwritable: csv ${path.join(file, 'out')}: CSV files cannot be written there:`);
    expect(result.stderr).toContain(file);
    // The log line and the summary carry where it happened next to the code.
    expect(result.logs).toContainEqual(expect.objectContaining({ code: 'target_unwritable', targetKind: 'local', format: 'csv' }));
    expect({ exports, tokens }).toEqual({ exports: 0, tokens: 0 });
  });

  // Mode bits do not stop root (the suite's usual user): the CLI runs as nobody then.
  it('that is a read-only directory (for a user who may not write it): exit 1, zero export requests', async () => {
    const workspace = await writeWorkspace(caseDir, sandbox, [detail]);
    await mkdir(workspace.outDir, { recursive: true });
    await chmod(workspace.outDir, 0o555);
    await openToOthers(caseDir, root);
    const before = sandbox.requests.length;
    const result = await spawnCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir], {
      env: sandboxEnv(sandbox),
      timeoutMs: 30_000,
      spawn: UNPRIVILEGED,
    });
    await chmod(workspace.outDir, 0o755);
    expect(result.stderr).toContain('permission_denied');
    expect(result.code).toBe(1);
    expect(requestsSince(before).exports).toBe(0);
  });

  it('not there yet but creatable (the legal case): the run creates it and exports', async () => {
    const workspace = await writeWorkspace(caseDir, sandbox, [detail]);
    await withCsvDirectory(workspace, path.join(caseDir, 'not', 'yet', 'there'));
    const { result, exports } = await run(workspace);
    expect(result.exitCode).toBe(0);
    expect(exports).toBeGreaterThan(0);
    expect(await listFiles(path.join(caseDir, 'not', 'yet', 'there'))).toEqual(['detail.csv']);
  });

  it('fails every window of a backfill without an export request', async () => {
    const workspace = await writeWorkspace(caseDir, sandbox, [dailyCsvBackfillJob]);
    const file = path.join(caseDir, 'file');
    await writeFile(file, '');
    await withCsvDirectory(workspace, path.join(file, 'out'));
    const today = new Date().toISOString().slice(0, 10);
    const from = new Date(Date.now() - 3 * 86_400_000).toISOString().slice(0, 10);
    const { result, exports } = await run(workspace, {}, ['backfill', '--job', 'daily', '--from', from, '--to', today]);
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain('target_unwritable');
    expect(exports).toBe(0);
  });
});

describeWithFakeGcs('a gs:// CSV target', (gcs) => {
  let proxy: Awaited<ReturnType<typeof startGcsProxy>> | undefined;
  afterEach(async () => {
    await proxy?.close();
    proxy = undefined;
  });

  async function gcsWorkspace(bucket: string): Promise<Workspace> {
    const workspace = await writeWorkspace(caseDir, sandbox, [detail]);
    await withCsvDirectory(workspace, `gs://${bucket}/nightly`);
    return workspace;
  }

  it('in a bucket that does not exist: exit 1 naming the bucket, zero requests at the source', async () => {
    const workspace = await gcsWorkspace('no-such-bucket-preflight');
    const { result, exports, tokens } = await run(workspace, { sinkOptions: { storageClient: await fakeGcsClient(gcs.origin) } });
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(
      /bucket_not_found: csv gs:\/\/no-such-bucket-preflight\/nightly\/: listing the bucket failed: bucket no-such-bucket-preflight does not exist/,
    );
    expect(result.logs).toContainEqual(expect.objectContaining({ code: 'bucket_not_found', targetKind: 'gcs', format: 'csv' }));
    expect({ exports, tokens }).toEqual({ exports: 0, tokens: 0 });
  });

  it('in a bucket these credentials may not write (403): exit 1 naming bucket and permission, zero requests at the source', async () => {
    const bucket = await gcs.newBucket('preflight');
    // Cloud Storage's answer to a caller without storage.objects.list, to the listing and to IAM alike.
    proxy = await startGcsProxy(gcs.origin, (incoming, response) => {
      const url = incoming.url ?? '';
      if (!url.includes(`/b/${bucket}/o`) && !url.includes('/iam/testPermissions')) return false;
      return answerJson(
        response,
        403,
        'forbidden',
        `preflight@example.iam.gserviceaccount.com does not have storage.objects.list access to the Google Cloud Storage bucket.`,
      );
    });
    const workspace = await gcsWorkspace(bucket);
    const { result, exports, tokens } = await run(workspace, { sinkOptions: { storageClient: await fakeGcsClient(proxy.origin) } });
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain(
      `permission_denied: csv gs://${bucket}/nightly/: listing the bucket failed: permission storage.objects.list is missing on bucket ${bucket}`,
    );
    expect({ exports, tokens }).toEqual({ exports: 0, tokens: 0 });
    expect((await gcs.storage.bucket(bucket).getFiles())[0]).toEqual([]);
  });

  it('whose IAM grants too little: exit 1 naming the missing permissions, zero requests at the source', async () => {
    const bucket = await gcs.newBucket('preflight');
    proxy = await startGcsProxy(gcs.origin, (incoming, response) => {
      if (!incoming.url!.includes('/iam/testPermissions')) return false;
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ kind: 'storage#testIamPermissionsResponse', permissions: ['storage.objects.get', 'storage.objects.list'] }));
      return true;
    });
    const workspace = await gcsWorkspace(bucket);
    const { result, exports } = await run(workspace, { sinkOptions: { storageClient: await fakeGcsClient(proxy.origin) } });
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain(`missing storage.objects.create, storage.objects.delete on bucket ${bucket}`);
    expect(exports).toBe(0);
  });

  it('in an existing bucket (the legal case, an endpoint without IAM): the run exports and publishes', async () => {
    const bucket = await gcs.newBucket('preflight');
    const workspace = await gcsWorkspace(bucket);
    const { result, exports } = await run(workspace, { sinkOptions: { storageClient: await fakeGcsClient(gcs.origin) } });
    expect(result.exitCode).toBe(0);
    expect(exports).toBeGreaterThan(0);
    const [files] = await gcs.storage.bucket(bucket).getFiles();
    expect(files.map((file) => file.name)).toEqual(['nightly/detail.csv']);
  });
});

describeWithEmulator('a BigQuery target', (endpoint) => {
  let proxy: EmulatorWithCopyJobs;
  beforeAll(async () => {
    proxy = await startEmulatorWithCopyJobs(endpoint);
  });
  afterAll(async () => {
    await proxy?.close();
  });

  const tile = { name: 'detail_bq', tile: SANDBOX_TILE, query: detailQuery, columns: { Number: { type: 'INT64' } }, sinks: [{ type: 'bigquery' }] };

  it('whose dataset is absent but may be created (the legal case): created before the first page, the run publishes', async () => {
    const dataset = uniqueDatasetId('preflight');
    const workspace = await writeBigQueryWorkspace(caseDir, sandbox, [tile], { projectId: endpoint.projectId, dataset });
    const { result, exports } = await run(workspace, { sinkOptions: { bigqueryClient: proxy.client() } });
    expect(result.exitCode, result.stderr).toBe(0);
    expect(exports).toBeGreaterThan(0);
    const [rows] = await proxy.client().query(`SELECT COUNT(*) AS n FROM \`${endpoint.projectId}.${dataset}.detail_bq\``);
    expect(rows).toEqual([{ n: 120 }]);
  });

  it('is only read by tilehouse check, which writes nothing: an absent dataset is a note, and stays absent', async () => {
    const dataset = uniqueDatasetId('preflight_check');
    const workspace = await writeBigQueryWorkspace(caseDir, sandbox, [tile], { projectId: endpoint.projectId, dataset });
    const { result } = await run(workspace, { sinkOptions: { bigqueryClient: proxy.client() } }, ['check']);
    expect(result.exitCode, result.stderr).toBe(0);
    // The publish guard's line: the table is read (tables.get), nothing is created.
    expect(result.stdout).toBe(
      `ok job detail_bq: 120 rows in the tile, 4 columns; bigquery dataset ${endpoint.projectId}.${dataset}: absent; a run creates it in US\n` +
        `  ${endpoint.projectId}.${dataset}.detail_bq guard: passes: 120 rows; no target yet\n`,
    );
    const [exists] = await proxy.client().dataset(dataset).exists();
    expect(exists).toBe(false);
  });

  it('whose dataset cannot be created (a project these credentials cannot use): exit 1 naming it, zero requests at the source', async () => {
    const workspace = await writeBigQueryWorkspace(caseDir, sandbox, [tile], { projectId: 'no-such-project-preflight', dataset: 'reports' });
    const { result, exports, tokens } = await run(workspace, { sinkOptions: { bigqueryClient: proxy.client() } });
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(/bigquery_request_failed: .*(reading|creating) dataset no-such-project-preflight\.reports/);
    expect({ exports, tokens }).toEqual({ exports: 0, tokens: 0 });
  });
});
