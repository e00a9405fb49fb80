// A job with a BigQuery sink and a gs:// CSV sink whose publish fails after BigQuery's: the run
// is partially published (exit 3) and says which target holds the new run and which the previous
// one. BigQuery is the emulator (behind the copy-job proxy), Cloud Storage fake-gcs-server behind
// gcs-precondition-proxy.ts, which refuses the rewrite onto the target with a 403, as Cloud
// Storage does when the service account may create objects but not replace them (objectCreator).
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { BigQuery } from '@google-cloud/bigquery';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SANDBOX_TILE, startSandbox, type Sandbox } from '../../sandbox/index.js';
import { describeWithEmulator, uniqueDatasetId } from '../support/bigquery-emulator.js';
import { startEmulatorWithCopyJobs, type EmulatorWithCopyJobs } from '../support/bigquery-fake-server.js';
import { readTable } from '../support/bigquery-read.js';
import { writeBigQueryWorkspace } from '../support/bigquery-workspace.js';
import { runCli, sandboxEnv } from '../support/cli-harness.js';
import { describeWithFakeGcs, usePreconditionProxy } from '../support/fake-gcs-server.js';
import { detailQuery } from '../support/queries.js';
import { makeTempDir } from '../support/temp-dir.js';

const INCIDENTS = 180;
const PREVIOUS = Buffer.from('Number,Created,Description,Severity\r\nprevious run\r\n');
const job = {
  name: 'incident_detail',
  tile: SANDBOX_TILE,
  query: detailQuery,
  sinks: [{ type: 'bigquery', writeMode: 'replace' }, { type: 'csv' }],
};

interface SummaryTile {
  status: string;
  outputs: Array<{ sink: string; target: string; rows: number }>;
  unpublished?: string[];
  error?: { code: string; message: string };
}

let sandbox: Sandbox;
let root: string;

beforeAll(async () => {
  sandbox = await startSandbox({ incidents: INCIDENTS });
  root = await makeTempDir();
});
afterAll(async () => {
  await sandbox?.close();
  await rm(root, { recursive: true, force: true });
});

describeWithEmulator('a job with a BigQuery sink and a gs:// CSV sink', (endpoint) => {
  let bigquery: EmulatorWithCopyJobs;
  let client: BigQuery;

  beforeAll(async () => {
    bigquery = await startEmulatorWithCopyJobs(endpoint);
    client = bigquery.client();
  });
  afterAll(async () => {
    await bigquery?.close();
  });

  describeWithFakeGcs('whose gs:// publish fails', (gcs) => {
    const through = usePreconditionProxy(gcs);

    it('exits 3 naming which target holds the new run and which the previous one; the object is untouched; a healthy re-run converges', async () => {
      const bucket = await gcs.newBucket('two-sinks');
      const dataset = uniqueDatasetId('tilehouse_gcs_two');
      const workspace = await writeBigQueryWorkspace(root, sandbox, [job], { projectId: endpoint.projectId, dataset }, { itemsPerPage: 50 });
      await writeFile(workspace.configFile, (await readFile(workspace.configFile, 'utf8')).replace(/directory: .*/, `directory: gs://${bucket}/out`));
      const object = through.storage.bucket(bucket).file('out/incident_detail.csv');
      const objectUrl = `gs://${bucket}/out/incident_detail.csv`;
      await object.save(PREVIOUS, { resumable: false });
      const summaryFile = path.join(root, 'summary.json');
      const run = () =>
        runCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir, '--summary-json', summaryFile], {
          env: sandboxEnv(sandbox),
          seams: { sinkOptions: { bigqueryClient: client, storageClient: through.storage } },
        });

      through.proxy.failRewrites({
        status: 403,
        message: 'tilehouse@acme.iam.gserviceaccount.com does not have storage.objects.delete access to the Google Cloud Storage object. Permission denied.',
      });
      const result = await run();
      expect(result.exitCode, result.stderr).toBe(3);
      expect(result.stderr).toMatch(/0 succeeded, 0 failed, 1 PARTIALLY PUBLISHED/);
      const tile = (JSON.parse(await readFile(summaryFile, 'utf8')) as { exitCode: number; tiles: SummaryTile[] }).tiles[0]!;
      // BigQuery published first (its rank), then the rewrite onto the object was refused.
      expect(tile).toMatchObject({ status: 'partially_published', unpublished: [objectUrl], error: { code: 'partially_published' } });
      expect(tile.outputs).toEqual([expect.objectContaining({ sink: 'bigquery', rows: INCIDENTS, target: expect.stringContaining(dataset) })]);
      expect(tile.error!.message).toContain('storage.objects.delete');
      const bigqueryTarget = tile.outputs[0]!.target;
      expect(result.stderr).toContain(`new run in: ${bigqueryTarget}; previous run still in: ${objectUrl}`);
      // What each target holds: the table the new run, the object its previous bytes, no temp object.
      expect(await readTable(client, { projectId: endpoint.projectId, dataset, table: 'incident_detail' }, 'number')).toHaveLength(INCIDENTS);
      expect((await object.download())[0].equals(PREVIOUS)).toBe(true);
      expect((await through.storage.bucket(bucket).getFiles())[0].map((file) => file.name)).toEqual(['out/incident_detail.csv']);

      through.proxy.failRewrites(undefined);
      const rerun = await run();
      expect(rerun.exitCode, rerun.stderr).toBe(0);
      const records = parse((await object.download())[0]) as string[][];
      expect(records).toHaveLength(INCIDENTS + 1);
      expect(await readTable(client, { projectId: endpoint.projectId, dataset, table: 'incident_detail' }, 'number')).toHaveLength(INCIDENTS);
      expect((await through.storage.bucket(bucket).getFiles())[0].map((file) => file.name)).toEqual(['out/incident_detail.csv']);
    }, 60_000);
  });
});
