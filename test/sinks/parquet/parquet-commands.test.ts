import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments, parse, stringify } from 'yaml';
import { SANDBOX_TILE } from '../../../sandbox/index.js';
import { listFiles, runCli, sandboxEnv, writeWorkspace, type Workspace } from '../../support/cli-harness.js';
import { describeWithFakeGcs, fakeGcsClient } from '../../support/fake-gcs-server.js';
import { startGcsProxy } from '../../support/gcs-proxy.js';
import { addParquetDirectory } from './parquet-test-support.js';
import { sandboxAndRootForAll } from '../../support/sandbox-fixture.js';

/** check, plan, validate and k8s with a Parquet sink, each through the CLI. */

const byType = {
  items: [
    { header: 'Type', formula: '[incident.type]', dataType: 'text', grouped: true, order: 'asc', orderSequence: 0, filters: [] },
    { header: 'Incidents', formula: '[incident.number]', dataType: 'number', aggregate: 'count', filters: [] },
  ],
  options: { pageNumber: 0, itemsPerPage: 50 },
};
const job = { name: 'by_type', tile: SANDBOX_TILE, query: byType, columns: { Incidents: { type: 'INT64' } }, sinks: [{ type: 'parquet' }] };

const fixture = sandboxAndRootForAll({ incidents: 300 });

async function workspace(name: string, jobs: Array<Record<string, unknown>> = [job], parquetDirectory?: string): Promise<Workspace> {
  const ws = await writeWorkspace(path.join(fixture.root, name), fixture.sandbox, jobs);
  await addParquetDirectory(ws, parquetDirectory);
  return ws;
}
const cli = (command: string, ws: Workspace, ...extra: string[]) =>
  runCli([command, '--config', ws.configFile, '--jobs', ws.jobsDir, ...extra], { env: sandboxEnv(fixture.sandbox) });

describe('tilehouse check with a Parquet sink', () => {
  it('passes when the Parquet directory can be written, and writes nothing', async () => {
    const ws = await workspace('check-ok');
    const result = await cli('check', ws);
    expect(result.exitCode, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^ok job by_type: (\d+) rows? in the tile, 2 columns\n {2}\S+by_type\.parquet guard: passes: \1 rows?; no target yet\n$/);
    expect(await listFiles(ws.outDir)).toEqual([]);
  });

  it('fails the job naming the Parquet target when its directory is a file', async () => {
    const ws = await workspace('check-file', [job], path.join(fixture.root, 'check-file', 'lake'));
    await writeFile(path.join(fixture.root, 'check-file', 'lake'), 'not a directory');
    const result = await cli('check', ws);
    expect(result.exitCode).toBe(1);
    expect(result.stdout).toMatch(/^FAIL job by_type: target_unwritable: .*Parquet.*lake.* is a file, not a directory/);
  });
});

describe('tilehouse plan with a Parquet sink', () => {
  it("says the file would be created, then compares with the column names in the existing file's footer", async () => {
    const ws = await workspace('plan');
    const fresh = await cli('plan', ws);
    expect(fresh.exitCode, fresh.stderr).toBe(0);
    expect(fresh.stdout).toMatch(/parquet .*by_type\.parquet: create/);
    expect(await listFiles(ws.outDir)).toEqual([]);

    expect((await cli('run', ws)).exitCode).toBe(0);
    expect((await cli('plan', ws)).stdout).toMatch(/by_type\.parquet: unchanged/);

    const wider = {
      ...job,
      query: {
        ...byType,
        items: [...byType.items, { header: 'Newest (UTC)', formula: '[incident.created]', dataType: 'datetime', aggregate: 'max', filters: [] }],
      },
    };
    await writeFile(path.join(ws.jobsDir, 'by_type.yaml'), stringify(wider));
    const changed = await cli('plan', ws, '--json');
    expect(changed.exitCode, changed.stderr).toBe(0);
    const [plan] = JSON.parse(changed.stdout) as Array<{ sinks: Array<{ action: string; details: string[] }> }>;
    // The footer names the warehouse-safe column name, which is what the plan compares.
    expect(plan!.sinks[0]).toMatchObject({ action: 'change', details: ['+ newest_utc'] });
  });

  it('fails naming the file when the existing target is not Parquet', async () => {
    const ws = await workspace('plan-not-parquet');
    await mkdir(ws.outDir, { recursive: true });
    await writeFile(path.join(ws.outDir, 'by_type.parquet'), 'Type,Incidents\r\nOutage,3\r\n');
    const result = await cli('plan', ws);
    expect(result.exitCode).toBe(1);
    expect(result.stdout + result.stderr).toContain(
      `target_unreadable: job by_type: parquet ${path.join(ws.outDir, 'by_type.parquet')}: the existing file cannot be read as Parquet: it ends with ",3\\r\\n", not "PAR1"`,
    );
  });
});

describeWithFakeGcs('tilehouse plan with a gs:// Parquet sink', (gcs) => {
  it('reads the column names of the existing object with two ranged downloads of its tail, and names the object it cannot read', async () => {
    const bucket = await gcs.newBucket('plan-pq');
    const downloads: Array<string | undefined> = [];
    // Every media download the CLI makes, with its Range header: none may fetch the whole object.
    const proxy = await startGcsProxy(gcs.origin, (incoming) => {
      if (incoming.url!.includes('alt=media')) downloads.push(incoming.headers.range);
      return false;
    });
    try {
      const ws = await workspace('plan-gcs', [job], `gs://${bucket}/lake`);
      const seams = { sinkOptions: { storageClient: await fakeGcsClient(proxy.origin) } };
      const run = (command: string) => runCli([command, '--config', ws.configFile, '--jobs', ws.jobsDir], { env: sandboxEnv(fixture.sandbox), seams });
      expect((await run('run')).exitCode).toBe(0);
      downloads.length = 0;
      const same = await run('plan');
      expect(same.exitCode, same.stderr).toBe(0);
      expect(same.stdout).toContain(`parquet gs://${bucket}/lake/by_type.parquet: unchanged`);
      // Two for the columns, two for the publish guard's row count (the footer's num_rows).
      expect(downloads).toHaveLength(4);
      for (const range of downloads) expect(range).toMatch(/^bytes=\d+-\d+$/);
      expect(same.stdout).toMatch(/guard: passes: (\d+) rows?; holds \1 rows? \(the Parquet file counted\)/);

      await gcs.storage.bucket(bucket).file('lake/by_type.parquet').save('Type,Incidents\r\n', { resumable: false });
      const refused = await run('plan');
      expect(refused.exitCode).toBe(1);
      expect(refused.stdout + refused.stderr).toContain(
        `target_unreadable: job by_type: parquet gs://${bucket}/lake/by_type.parquet: the existing file cannot be read as Parquet`,
      );
    } finally {
      await proxy.close();
    }
  });
});

describe('tilehouse validate with a Parquet sink', () => {
  it('passes a valid workspace, and refuses a Parquet path whose folder is a file and two jobs writing one Parquet file', async () => {
    const ws = await workspace('validate', [{ ...job, sinks: [{ type: 'parquet', path: 'lake/{date}.parquet' }] }]);
    const ok = await cli('validate', ws);
    expect(ok.exitCode, ok.stderr).toBe(0);

    await mkdir(ws.outDir, { recursive: true });
    await writeFile(path.join(ws.outDir, 'lake'), '');
    const blocked = await cli('validate', ws);
    expect(blocked.exitCode).toBe(2);
    expect(blocked.stderr).toContain(
      `sinks[0].path = "lake/{date}.parquet": Parquet files cannot be written there: ${path.join(ws.outDir, 'lake')} is a file, not a directory`,
    );

    await rm(path.join(ws.outDir, 'lake'));
    await writeFile(path.join(ws.jobsDir, 'second.yaml'), stringify({ ...job, name: 'second', sinks: [{ type: 'parquet', path: 'lake/{date}.parquet' }] }));
    const shared = await cli('validate', ws);
    expect(shared.exitCode).toBe(2);
    expect(shared.stderr).toContain(`${path.join(ws.outDir, 'lake/{date}.parquet')} is also written by job`);
  });

  it('names the environment line of a Parquet directory that is a file', async () => {
    const lake = path.join(fixture.root, 'validate-env-lake');
    await writeFile(lake, '');
    const ws = await workspace('validate-env', [job], lake);
    const result = await cli('validate', ws);
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toMatch(
      new RegExp(`env\\.yaml:\\d+: sinks\\.parquet\\.directory = "${lake}": Parquet files cannot be written there: ${lake} is a file, not a directory`),
    );
  });
});

describe('tilehouse k8s with a Parquet sink', () => {
  async function k8sWorkspace(directory: string) {
    const dir = path.join(fixture.root, `k8s-${Math.random().toString(36).slice(2)}`);
    const jobsDir = path.join(dir, 'jobs');
    await mkdir(jobsDir, { recursive: true });
    const config = parse(await readFile('config/production.example.yaml', 'utf8')) as { sinks: Record<string, unknown> };
    config.sinks['parquet'] = { directory };
    const configFile = path.join(dir, 'env.yaml');
    await writeFile(configFile, stringify(config));
    await writeFile(path.join(jobsDir, 'lake.yaml'), stringify({ ...job, name: 'lake', tile: 't-1', schedule: { cron: '0 6 * * *', timezone: 'UTC' } }));
    return { configFile, jobsDir, outFile: path.join(dir, 'k8s', 'cronjobs.yaml') };
  }
  const mountsOf = async (outFile: string) =>
    parseAllDocuments(await readFile(outFile, 'utf8')).flatMap((document) =>
      (
        document.toJS() as { spec: { jobTemplate: { spec: { template: { spec: { containers: Array<{ volumeMounts: Array<{ mountPath: string }> }> } } } } } }
      ).spec.jobTemplate.spec.template.spec.containers[0]!.volumeMounts.map((mount) => mount.mountPath),
    );

  it('mounts an emptyDir for a local Parquet directory and warns that it dies with the pod; a gs:// directory needs neither', async () => {
    const local = await k8sWorkspace('/var/lib/tilehouse/lake');
    const written = await runCli(['k8s', '--config', local.configFile, '--jobs', local.jobsDir, '--out', local.outFile], { env: {} });
    expect(written.exitCode, written.stderr).toBe(0);
    expect(written.stderr).toMatch(/warning: lake write Parquet under \/var\/lib\/tilehouse\/lake: in the pod that is an emptyDir/);
    expect(await mountsOf(local.outFile)).toContain('/var/lib/tilehouse/lake');

    const inBucket = await k8sWorkspace('gs://acme-lake/tilehouse');
    const clean = await runCli(['k8s', '--config', inBucket.configFile, '--jobs', inBucket.jobsDir, '--out', inBucket.outFile], { env: {} });
    expect(clean.exitCode, clean.stderr).toBe(0);
    expect(clean.stderr).not.toContain('warning');
    expect(await mountsOf(inBucket.outFile)).not.toContain('/var/lib/tilehouse/lake');
  });
});
