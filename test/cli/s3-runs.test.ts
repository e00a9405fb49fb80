// Jobs writing s3:// objects through the real CLI, configured as a user configures them: the
// environment's `sinks.s3.endpoint` names the S3-compatible server (moto, behind the proxy that
// enforces CopyObject's destination conditions), credentials come from the AWS chain (the
// environment), never from the YAML.
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { HeadObjectCommand } from '@aws-sdk/client-s3';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { SANDBOX_TILE, startSandbox, type Sandbox } from '../../sandbox/index.js';
import { runCli, sandboxEnv, writeWorkspace, type Workspace } from '../support/cli-harness.js';
import { detailQuery, dailyQuery } from '../support/queries.js';
import { describeWithS3, getBytes, keysOf, putBytes } from '../support/s3-server.js';
import { makeTempDir } from '../support/temp-dir.js';
import { duckdb, sqlString } from '../sinks/parquet/encoder/duckdb-read-back.js';

const INCIDENTS = 150;
const DAY_MS = 86_400_000;
const day = (offset: number) => new Date(Date.now() + offset * DAY_MS).toISOString().slice(0, 10);

let sandbox: Sandbox;
let root: string;
beforeAll(async () => {
  sandbox = await startSandbox({ incidents: INCIDENTS, now: new Date() });
  root = await makeTempDir();
});
afterAll(async () => {
  await sandbox?.close();
  await rm(root, { recursive: true, force: true });
});

/** A workspace whose environment points s3:// targets at the test server. */
async function s3Workspace(name: string, endpoint: string, jobs: Array<Record<string, unknown>>, s3: Record<string, unknown> = {}): Promise<Workspace> {
  const workspace = await writeWorkspace(path.join(root, name), sandbox, jobs, { itemsPerPage: 50 });
  const config = (await import('yaml')).parse(await readFile(workspace.configFile, 'utf8')) as { sinks: Record<string, unknown> };
  config.sinks.s3 = { endpoint, region: 'eu-west-1', ...s3 };
  config.sinks.parquet = { directory: workspace.outDir };
  await writeFile(workspace.configFile, stringify(config));
  return workspace;
}

describeWithS3('jobs writing s3:// objects', (s3) => {
  const cli = (args: string[]) => runCli(args, { env: sandboxEnv(sandbox) });

  it("publishes CSV and Parquet objects with exactly the bytes of the same run's local files; DuckDB reads the Parquet; plan and check read them back", async () => {
    const bucket = await s3.newBucket('run');
    const workspace = await s3Workspace('run', s3.endpoint, [
      {
        name: 'detail',
        tile: SANDBOX_TILE,
        query: detailQuery,
        sinks: [
          { type: 'csv', path: `s3://${bucket}/csv/{name}.csv` },
          { type: 'csv', path: 'local/{name}.csv' },
        ],
      },
      {
        name: 'detail_pq',
        tile: SANDBOX_TILE,
        query: detailQuery,
        sinks: [
          { type: 'parquet', path: `s3://${bucket}/lake/{name}.parquet` },
          { type: 'parquet', path: 'local/{name}.parquet' },
        ],
      },
    ]);
    const run = await cli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir]);
    expect(run.exitCode, run.stderr).toBe(0);
    const csv = await getBytes(s3.client, bucket, 'csv/detail.csv');
    expect(csv.equals(await readFile(path.join(workspace.outDir, 'local/detail.csv')))).toBe(true);
    expect(parse(csv)).toHaveLength(INCIDENTS + 1);
    const parquet = await getBytes(s3.client, bucket, 'lake/detail_pq.parquet');
    expect(parquet.equals(await readFile(path.join(workspace.outDir, 'local/detail_pq.parquet')))).toBe(true);
    const copy = path.join(root, 'downloaded.parquet');
    await writeFile(copy, parquet);
    const counted = await (await duckdb()).runAndReadAll(`SELECT count(*)::INTEGER FROM read_parquet(${sqlString(copy)})`);
    expect(counted.getRows()).toEqual([[INCIDENTS]]);
    expect(await keysOf(s3.client, bucket)).toEqual(['csv/detail.csv', 'lake/detail_pq.parquet']);
    expect(run.stderr).toContain(`s3://${bucket}/csv/detail.csv`);

    const plan = await cli(['plan', '--config', workspace.configFile, '--jobs', workspace.jobsDir]);
    expect(plan.exitCode, plan.stderr).toBe(0);
    expect(plan.stdout).toMatch(new RegExp(`s3://${bucket}/lake/detail_pq\\.parquet[^\\n]*unchanged`));
    const check = await cli(['check', '--config', workspace.configFile, '--jobs', workspace.jobsDir]);
    expect(check.exitCode, check.stdout + check.stderr).toBe(0);
  }, 60_000);

  it('refuses a missing bucket in check and before the first page of a run (bucket_not_found)', async () => {
    const workspace = await s3Workspace('missing', s3.endpoint, [
      { name: 'detail', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'parquet', path: 's3://no-such-bucket-tilehouse/{name}.parquet' }] },
    ]);
    const check = await cli(['check', '--config', workspace.configFile, '--jobs', workspace.jobsDir]);
    expect(check.exitCode).not.toBe(0);
    expect(check.stdout + check.stderr).toContain('bucket_not_found: parquet s3://no-such-bucket-tilehouse/: listing the bucket failed');
    sandbox.clearRequests();
    const run = await cli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir]);
    expect(run.exitCode).toBe(1);
    expect(run.stderr).toContain('no-such-bucket-tilehouse does not exist');
    expect(run.stderr).toContain('bucket_not_found: parquet s3://no-such-bucket-tilehouse/');
    expect(sandbox.requests.filter((request) => request.endpoint === 'export')).toEqual([]);
  }, 60_000);

  it('publishes nothing when the S3 publish fails after the local sink prepared: both keep the previous run; a healthy re-run converges', async () => {
    const bucket = await s3.newBucket('two');
    const workspace = await s3Workspace('two', s3.endpoint, [
      {
        name: 'detail',
        tile: SANDBOX_TILE,
        query: detailQuery,
        sinks: [
          { type: 'parquet', path: `s3://${bucket}/{name}.parquet` },
          { type: 'csv', path: '{name}.csv' },
        ],
      },
    ]);
    const local = path.join(workspace.outDir, 'detail.csv');
    await mkdir(workspace.outDir, { recursive: true });
    await writeFile(local, 'previous\r\n');
    await putBytes(s3.client, bucket, 'detail.parquet', 'previous parquet');
    s3.proxy.fail({ on: 'copy', fault: { kind: 'status', status: 403, code: 'AccessDenied' }, urlContains: bucket, times: 10 });
    const run = await cli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir]);
    s3.proxy.disarm();
    expect(run.exitCode, run.stderr).toBe(1);
    expect(run.stderr).toContain(`permission_denied: parquet s3://${bucket}/detail.parquet: copying`);
    expect(await readFile(local, 'utf8')).toBe('previous\r\n');
    expect((await getBytes(s3.client, bucket, 'detail.parquet')).toString()).toBe('previous parquet');
    expect(await keysOf(s3.client, bucket)).toEqual(['detail.parquet']);
    const rerun = await cli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir]);
    expect(rerun.exitCode, rerun.stderr).toBe(0);
    expect(parse(await readFile(local))).toHaveLength(INCIDENTS + 1);
    expect((await s3.client.send(new HeadObjectCommand({ Bucket: bucket, Key: 'detail.parquet' }))).ContentLength).toBeGreaterThan(100);
  }, 60_000);

  it('backfills one object and manifest per day, and --resume runs only the days whose object and manifest do not match', async () => {
    const bucket = await s3.newBucket('daily');
    const job = {
      name: 'daily',
      tile: SANDBOX_TILE,
      query: dailyQuery,
      sinks: [{ type: 'parquet', path: `s3://${bucket}/daily/{date}.parquet`, manifest: true }],
      columns: { Day: { type: 'DATE' }, Incidents: { type: 'INT64' } },
      backfill: { item: 'day', bucketColumn: 'Day' },
    };
    const workspace = await s3Workspace('daily', s3.endpoint, [job]);
    const backfill = (args: string[]) =>
      cli([
        'backfill',
        '--config',
        workspace.configFile,
        '--jobs',
        workspace.jobsDir,
        '--tile',
        'daily',
        '--from',
        day(-6),
        '--to',
        day(-1),
        '--json',
        ...args,
      ]);
    const first = await backfill(['--run-id', 'first']);
    expect(first.exitCode, first.stderr).toBe(0);
    const days = Array.from({ length: 5 }, (_, offset) => day(-6 + offset));
    expect(await keysOf(s3.client, bucket)).toEqual(days.flatMap((from) => [`daily/${from}.parquet`, `daily/${from}.parquet.manifest.json`]));
    // One day's object replaced by another writer (no run id), another's manifest gone (a kill between the two copies).
    await putBytes(s3.client, bucket, `daily/${days[1]}.parquet`, 'replaced');
    await s3.client.send(new (await import('@aws-sdk/client-s3')).DeleteObjectCommand({ Bucket: bucket, Key: `daily/${days[3]}.parquet.manifest.json` }));
    const resumed = await backfill(['--run-id', 'second', '--resume']);
    expect(resumed.exitCode, resumed.stderr).toBe(0);
    const document = JSON.parse(resumed.stdout) as { windows: Array<{ window: { from: string } }>; skipped: Array<{ from: string }> };
    expect(document.windows.map((result) => result.window.from)).toEqual([days[1], days[3]]);
    expect(document.skipped.map((window) => window.from)).toEqual([days[0], days[2], days[4]]);
    const manifest = JSON.parse((await getBytes(s3.client, bucket, `daily/${days[1]}.parquet.manifest.json`)).toString()) as { runId: string };
    expect(manifest.runId).toBe(`second-${days[1]!.replaceAll('-', '')}`);
    const idle = await backfill(['--resume']);
    expect((JSON.parse(idle.stdout) as { windows: unknown[] }).windows).toEqual([]);
  }, 90_000);

  it('validate accepts the S3 settings and refuses a bad endpoint, a bad bucket name and a credential in the YAML (exit 2)', async () => {
    const job = { name: 'detail', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv', path: 's3://some-bucket/{name}.csv' }] };
    const good = await s3Workspace('validate-good', s3.endpoint, [job]);
    expect((await cli(['validate', '--config', good.configFile, '--jobs', good.jobsDir])).exitCode).toBe(0);
    const badEndpoint = await s3Workspace('validate-endpoint', 'minio:9000', [job]);
    const endpoint = await cli(['validate', '--config', badEndpoint.configFile, '--jobs', badEndpoint.jobsDir]);
    expect(endpoint.exitCode).toBe(2);
    expect(endpoint.stderr).toContain('sinks.s3.endpoint');
    const plain = await s3Workspace('validate-http', 'http://minio.internal:9000', [job]);
    const refusedHttp = await cli(['validate', '--config', plain.configFile, '--jobs', plain.jobsDir]);
    expect(refusedHttp.exitCode).toBe(2);
    expect(refusedHttp.stderr).toContain('sinks.s3.allowInsecureHttp');
    const optedIn = await s3Workspace('validate-http-ok', 'http://minio.internal:9000', [job], { allowInsecureHttp: true });
    expect((await cli(['validate', '--config', optedIn.configFile, '--jobs', optedIn.jobsDir])).exitCode).toBe(0);
    const secret = await s3Workspace('validate-secret', s3.endpoint, [job], { secretAccessKey: 'x' });
    const refused = await cli(['validate', '--config', secret.configFile, '--jobs', secret.jobsDir]);
    expect(refused.exitCode).toBe(2);
    expect(refused.stderr).toContain('secretAccessKey');
    const badBucket = await s3Workspace('validate-bucket', s3.endpoint, [{ ...job, sinks: [{ type: 'csv', path: 's3://Bad_Bucket/{name}.csv' }] }]);
    const bucket = await cli(['validate', '--config', badBucket.configFile, '--jobs', badBucket.jobsDir]);
    expect(bucket.exitCode).toBe(2);
    expect(bucket.stderr).toContain('Bad_Bucket');
  }, 60_000);
});
