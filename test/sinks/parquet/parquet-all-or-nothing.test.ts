import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { SANDBOX_TILE, startSandbox, type Sandbox } from '../../../sandbox/index.js';
import { localBigQueryClient } from '../../support/bigquery-emulator.js';
import { listFiles, runCli, sandboxEnv, writeWorkspace, type Workspace } from '../../support/cli-harness.js';
import { detailQuery } from '../../support/queries.js';
import { makeTempDir } from '../../support/temp-dir.js';
import { ParquetEncoder } from '../../../src/sinks/parquet/encoder/parquet-encoder.js';
import { addParquetDirectory, parquetRowCount } from './parquet-test-support.js';

/** All or nothing: a job whose other sink fails keeps the previous Parquet file, whole, and leaves no temp file. */

const INCIDENTS = 120;
const encoder = new ParquetEncoder([{ name: 'previous', type: 'STRING' }]);
const PREVIOUS = Buffer.concat([...encoder.addRows([['previous run']]), ...encoder.finish()]);

let sandbox: Sandbox;
let root: string;
const roots: string[] = [];
let bigquery: Server;
let bigqueryUrl: string;
beforeAll(async () => {
  sandbox = await startSandbox({ incidents: INCIDENTS });
  // A BigQuery API that refuses every request as a project without the permission would.
  bigquery = createServer((request, response) => {
    request.resume();
    response.writeHead(403, { 'content-type': 'application/json' });
    response.end(
      JSON.stringify({
        error: {
          code: 403,
          message: 'Access Denied: Project p: User does not have bigquery.datasets.get permission',
          errors: [{ reason: 'accessDenied', message: 'Access Denied' }],
          status: 'PERMISSION_DENIED',
        },
      }),
    );
  });
  await new Promise<void>((resolve) => bigquery.listen(0, '127.0.0.1', resolve));
  bigqueryUrl = `http://127.0.0.1:${(bigquery.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await sandbox.close();
  bigquery.closeAllConnections();
  await new Promise((resolve) => bigquery.close(resolve));
  for (const dir of roots) await rm(dir, { recursive: true, force: true });
});
beforeEach(async () => {
  root = await makeTempDir();
  roots.push(root);
});

async function workspaceWith(sinks: object[], bigQuery = false): Promise<{ ws: Workspace; parquetFile: string }> {
  const ws = await writeWorkspace(root, sandbox, [{ name: 'detail', tile: SANDBOX_TILE, query: detailQuery, sinks }], { itemsPerPage: 20 });
  await addParquetDirectory(ws);
  if (bigQuery) {
    const environment = parse(await readFile(ws.configFile, 'utf8')) as { sinks: Record<string, unknown> };
    environment.sinks['bigquery'] = { projectId: 'p', dataset: 'reports', location: 'US' };
    (environment as Record<string, unknown>)['tempDirectory'] = path.join(root, 'tmp');
    await writeFile(ws.configFile, stringify(environment));
  }
  const parquetFile = path.join(ws.outDir, 'detail.parquet');
  await mkdir(ws.outDir, { recursive: true });
  await writeFile(parquetFile, PREVIOUS);
  return { ws, parquetFile };
}

describe('a job with a Parquet sink and a failing other sink', () => {
  it('keeps the previous Parquet file when the CSV target cannot be written (a directory stands there)', async () => {
    const { ws, parquetFile } = await workspaceWith([{ type: 'parquet' }, { type: 'csv', path: 'detail.csv' }]);
    await mkdir(path.join(ws.outDir, 'detail.csv', 'inside'), { recursive: true });
    const result = await runCli(['run', '--config', ws.configFile, '--jobs', ws.jobsDir], { env: sandboxEnv(sandbox) });
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain('target_is_directory');
    expect((await readFile(parquetFile)).equals(PREVIOUS)).toBe(true);
    expect(await listFiles(ws.outDir)).toEqual(['detail.parquet']);

    // The control: with the CSV target free, the same job publishes both.
    await rm(path.join(ws.outDir, 'detail.csv'), { recursive: true });
    expect((await runCli(['run', '--config', ws.configFile, '--jobs', ws.jobsDir], { env: sandboxEnv(sandbox) })).exitCode).toBe(0);
    expect(await parquetRowCount(parquetFile)).toBe(INCIDENTS);
  });

  it('keeps the previous Parquet file when the BigQuery sink is refused', async () => {
    const { ws, parquetFile } = await workspaceWith([{ type: 'parquet' }, { type: 'bigquery', table: 'detail' }], true);
    const result = await runCli(['run', '--config', ws.configFile, '--jobs', ws.jobsDir], {
      env: sandboxEnv(sandbox),
      seams: { sinkOptions: { bigqueryClient: localBigQueryClient({ projectId: 'p', apiEndpoint: bigqueryUrl }) } },
    });
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(/Access Denied/);
    expect((await readFile(parquetFile)).equals(PREVIOUS)).toBe(true);
    expect(await listFiles(ws.outDir)).toEqual(['detail.parquet']);
  });
});
