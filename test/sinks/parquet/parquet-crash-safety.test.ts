// tilehouse run with a Parquet sink killed with SIGKILL at seeded moments, local and on gs://, as
// test/pipeline/crash-safety.test.ts and gcs-crash-safety.test.ts do for CSV: the real CLI as a
// child process; after each kill the target is the previous file or the complete one, byte for
// byte, and DuckDB reads it whole. Never a file a reader rejects.
import { once } from 'node:events';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Storage } from '@google-cloud/storage';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SANDBOX_TILE } from '../../../sandbox/index.js';
import { listFiles, runCli, sandboxEnv, writeWorkspace, type Workspace } from '../../support/cli-harness.js';
import { spawnCli } from '../../support/child-process.js';
import { describeWithFakeGcs, fakeGcsClient } from '../../support/fake-gcs-server.js';
import { startGcsPreconditionProxy, type GcsPreconditionProxy } from '../../support/gcs-precondition-proxy.js';
import { killGcsRunAtMoment, seededRandom } from '../../support/gcs-kill.js';
import { detailQuery } from '../../support/queries.js';
import { ParquetEncoder } from '../../../src/sinks/parquet/encoder/parquet-encoder.js';
import { addParquetDirectory, parquetRowCount, startGeneratedSource } from './parquet-test-support.js';
import { sandboxAndRootForAll } from '../../support/sandbox-fixture.js';

const KILLS = 12;
const INCIDENTS = 600;
const PAGES = 20;
const HOLD_REWRITE_MS = 120;
const job = { name: 'incident_detail', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'parquet' }] };

/** A previous run's file: a valid Parquet file of other rows, so "previous" and "complete" differ. */
function previousFile(): Buffer {
  const encoder = new ParquetEncoder([{ name: 'number', type: 'FLOAT64' }]);
  return Buffer.concat([...encoder.addRows([[1], [2]]), ...encoder.finish()]);
}
const PREVIOUS = previousFile();

// 20 pages, 15 ms each, one at a time: a run lasts long enough to be killed anywhere in it.
const fixture = sandboxAndRootForAll({ incidents: INCIDENTS, latencyMs: 15 });

/** A workspace whose Parquet directory is `directory`. */
async function parquetWorkspace(name: string, directory: (ws: Workspace) => string): Promise<Workspace> {
  const ws = await writeWorkspace(path.join(fixture.root, name), fixture.sandbox, [job], { itemsPerPage: INCIDENTS / PAGES, concurrency: 1 });
  await addParquetDirectory(ws, directory(ws));
  return ws;
}

/** Bytes of a stored Parquet file, checked as DuckDB reads them: `rows` rows. */
async function expectReadable(bytes: Buffer, rows: number, what: string): Promise<void> {
  const copy = path.join(fixture.root, `read-${Date.now()}-${Math.random().toString(36).slice(2)}.parquet`);
  await writeFile(copy, bytes);
  expect(await parquetRowCount(copy), what).toBe(rows);
  await rm(copy);
}

describe('a run with a local Parquet sink killed with SIGKILL', () => {
  it(`leaves the previous or the complete file at ${KILLS} seeded moments, and the next run is byte-exact`, async () => {
    const workspace = await parquetWorkspace('local', (ws) => ws.outDir);
    const target = path.join(workspace.outDir, 'incident_detail.parquet');
    const runInProcess = () => runCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir], { env: sandboxEnv(fixture.sandbox) });
    expect((await runInProcess()).exitCode).toBe(0);
    const reference = await readFile(target);
    await expectReadable(reference, INCIDENTS, 'the reference run');

    const random = seededRandom(20261126);
    const seen = { previous: 0, complete: 0, leftTempFiles: 0 };
    for (let kill = 0; kill < KILLS; kill += 1) {
      await mkdir(workspace.outDir, { recursive: true });
      await writeFile(target, PREVIOUS);
      const before = fixture.sandbox.requests.length;
      const child = spawnCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir], {
        env: { ...process.env, ...sandboxEnv(fixture.sandbox) },
        stdio: 'ignore',
      });
      let exitedAlready = false;
      const exited = once(child, 'exit').then(() => (exitedAlready = true));
      // A point in the export, stratified over it: after the k-th page request (0: before the token; PAGES + 2: after the publish).
      const moment = Math.floor(((kill + random()) * (PAGES + 3)) / KILLS);
      const pagesRequested = () => fixture.sandbox.requests.slice(before).filter((r) => r.endpoint === 'export').length;
      while (!exitedAlready && pagesRequested() < moment) await sleep(2);
      child.kill('SIGKILL');
      await exited;

      const after = await readFile(target);
      if (after.equals(PREVIOUS)) seen.previous += 1;
      else {
        expect(after.equals(reference), `kill ${kill} (moment ${moment}) left a file that is neither the previous nor the complete run`).toBe(true);
        seen.complete += 1;
      }
      await expectReadable(after, after.equals(PREVIOUS) ? 2 : INCIDENTS, `kill ${kill}`);
      if ((await listFiles(workspace.outDir)).length > 1) seen.leftTempFiles += 1;

      const rerun = await runInProcess();
      expect(rerun.exitCode).toBe(0);
      expect((await readFile(target)).equals(reference)).toBe(true);
      expect(await listFiles(workspace.outDir), 'temp files remain').toEqual(['incident_detail.parquet']);
    }
    expect(seen.previous).toBeGreaterThan(0);
    // The seeded moments hit the export mid-write, so the sweep had a temp file to remove.
    expect(seen.leftTempFiles).toBeGreaterThan(0);
  }, 150_000);
});

const isTemp = (name: string) => /\.tilehouse-[^/]*\.tmp$/.test(name);

describeWithFakeGcs('a run with a gs:// Parquet sink killed with SIGKILL', (gcs) => {
  let proxy: GcsPreconditionProxy;
  let storage: Storage;

  beforeAll(async () => {
    proxy = await startGcsPreconditionProxy(gcs.origin);
    storage = await fakeGcsClient(proxy.origin);
  });
  afterAll(async () => {
    await proxy?.close();
  });

  it(`leaves the previous or the complete object at ${KILLS} seeded moments; the next run sweeps and is byte-exact`, async () => {
    const bucket = await gcs.newBucket('kill-pq');
    const workspace = await parquetWorkspace('gcs', () => `gs://${bucket}/lake`);
    const runInProcess = () =>
      runCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir], {
        env: sandboxEnv(fixture.sandbox),
        seams: { sinkOptions: { storageClient: storage } },
      });
    const target = () => storage.bucket(bucket).file('lake/incident_detail.parquet');
    const objectNames = async () => (await storage.bucket(bucket).getFiles())[0].map((file) => file.name).sort();
    expect((await runInProcess()).exitCode).toBe(0);
    const [reference] = await target().download();
    await expectReadable(reference, INCIDENTS, 'the reference run');

    const random = seededRandom(20261127);
    const seen = { previous: 0, complete: 0, leftTemp: 0 };
    proxy.holdRewrites(HOLD_REWRITE_MS);
    for (let kill = 0; kill < KILLS; kill += 1) {
      await target().save(PREVIOUS, { resumable: false });
      // The moments gcs-crash-safety.test.ts kills at: a page of the export, or two slots each in prepare, in the held rewrite, after it.
      const { phase, moment } = await killGcsRunAtMoment({
        workspace,
        sandbox: fixture.sandbox,
        proxy,
        kill,
        kills: KILLS,
        pages: PAGES,
        holdRewriteMs: HOLD_REWRITE_MS,
        random,
      });

      const [after] = await target().download();
      if (after.equals(PREVIOUS)) seen.previous += 1;
      else {
        expect(after.equals(reference), `kill ${kill} (${phase}, moment ${moment}) left an object that is neither the previous nor the complete run`).toBe(
          true,
        );
        seen.complete += 1;
      }
      await expectReadable(after, after.equals(PREVIOUS) ? 2 : INCIDENTS, `kill ${kill} (${phase})`);
      const names = await objectNames();
      if (names.some(isTemp)) seen.leftTemp += 1;
      expect(names.filter((name) => !isTemp(name))).toEqual(['lake/incident_detail.parquet']);
    }
    proxy.holdRewrites(0);
    expect(seen.previous).toBeGreaterThan(0);
    expect(seen.complete).toBeGreaterThan(0);

    const rerun = await runInProcess();
    expect(rerun.exitCode).toBe(0);
    expect((await target().download())[0].equals(reference)).toBe(true);
    expect(await objectNames()).toEqual(['lake/incident_detail.parquet']);
  }, 150_000);
});

describe('a run killed with SIGKILL while its Parquet row groups are being written', () => {
  it('has streamed whole row groups into its temp file, never into the target, which DuckDB reads as the previous file', async () => {
    // 20 pages of 4 rows of a 1 MiB string: a 32 MiB row group fills every 8 pages, so kills
    // after page 9 find row groups already in the temp file (the rows are not held until the end).
    const PAGE_COUNT = 20;
    const big = (page: number, row: number) => `${page}.${row}:`.padEnd(1 << 20, String.fromCharCode(97 + ((page * 4 + row) % 26)));
    const source = await startGeneratedSource({
      headers: ['Page', 'Text'],
      dataTypes: ['number', 'text'],
      pageCount: PAGE_COUNT,
      rowsPerPage: 4,
      rowsOf: (page) => [0, 1, 2, 3].map((row) => [page, big(page, row)]),
      delayMs: 40,
    });
    const dir = path.join(fixture.root, 'row-groups');
    const outDir = path.join(dir, 'out');
    const jobsDir = path.join(dir, 'jobs');
    await mkdir(jobsDir, { recursive: true });
    await mkdir(outDir, { recursive: true });
    const configFile = path.join(dir, 'env.yaml');
    const sourceConfig = {
      baseUrl: source.url,
      authUrl: source.url,
      clientId: '${TEST_CLIENT_ID}',
      clientSecret: '${TEST_CLIENT_SECRET}',
      requestTimeoutMs: 5000,
      concurrency: 1,
    };
    await writeFile(configFile, stringify({ source: sourceConfig, sinks: { parquet: { directory: outDir } } }));
    const items = [
      { header: 'Page', formula: '[incident.number]', dataType: 'number', filters: [] },
      { header: 'Text', formula: '[incident.description]', dataType: 'text', filters: [] },
    ];
    await writeFile(
      path.join(jobsDir, 'big.yaml'),
      stringify({ name: 'big', tile: 't-1', query: { items, options: { pageNumber: 0, itemsPerPage: 4 } }, sinks: [{ type: 'parquet' }] }),
    );
    const target = path.join(outDir, 'big.parquet');
    const env = { TEST_CLIENT_ID: 'id', TEST_CLIENT_SECRET: 'x9-test-client-secret' };
    try {
      const random = seededRandom(20261128);
      let largestTemp = 0;
      for (let kill = 0; kill < 4; kill += 1) {
        await writeFile(target, PREVIOUS);
        const before = source.pageRequests();
        const child = spawnCli(['run', '--config', configFile, '--jobs', jobsDir], { env: { ...process.env, ...env }, stdio: 'ignore' });
        let exitedAlready = false;
        const exited = once(child, 'exit').then(() => (exitedAlready = true));
        const moment = 10 + Math.floor(random() * (PAGE_COUNT - 11));
        while (!exitedAlready && source.pageRequests() - before < moment) await sleep(2);
        expect(exitedAlready, `kill ${kill}: the run ended before page ${moment}`).toBe(false);
        child.kill('SIGKILL');
        await exited;
        expect((await readFile(target)).equals(PREVIOUS), `kill ${kill} after page ${moment} changed the target`).toBe(true);
        await expectReadable(await readFile(target), 2, `kill ${kill}`);
        for (const name of (await listFiles(outDir)).filter((file) => file !== 'big.parquet')) {
          const bytes = await readFile(path.join(outDir, name));
          largestTemp = Math.max(largestTemp, bytes.length);
          expect(bytes.subarray(0, 4).toString(), `${name} starts as a Parquet file`).toBe('PAR1');
        }
      }
      // At least one row group (several MiB) had reached the temp file before its run was killed.
      expect(largestTemp).toBeGreaterThan(1 << 20);

      const rerun = await runCli(['run', '--config', configFile, '--jobs', jobsDir], { env });
      expect(rerun.exitCode, rerun.stderr).toBe(0);
      expect(await listFiles(outDir)).toEqual(['big.parquet']);
      expect(await parquetRowCount(target)).toBe(PAGE_COUNT * 4);
    } finally {
      await source.close();
    }
  }, 120_000);
});
