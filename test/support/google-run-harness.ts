import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { BigQuery } from '@google-cloud/bigquery';
import type { Storage } from '@google-cloud/storage';
import { afterAll, afterEach, beforeAll, describe } from 'vitest';
import { stringify } from 'yaml';
import { SANDBOX_TILE, startSandbox, type Sandbox } from '../../sandbox/index.js';
import { createStorageClient } from '../../src/sinks/stores/gcs/storage-client.js';
import { emulatorBinaryOrSkip, localBigQueryClient, uniqueDatasetId } from './bigquery-emulator.js';
import { startEmulator, type RunningEmulator } from './bigquery-emulator-process.js';
import { startEmulatorWithCopyJobs, type EmulatorWithCopyJobs } from './bigquery-fake-server.js';
import { startBearerProxy, type BearerProxy, type ProxiedRequest } from './bearer-proxy.js';
import { exitWithin, spawnCli, textOf } from './child-process.js';
import { sandboxEnv } from './cli-harness.js';
import { startFakeMetadataServer, type FakeMetadataOptions, type FakeMetadataServer } from './fake-metadata-server.js';
import { fakeGcsBinaryOrSkip, uniqueBucketName } from './fake-gcs-server.js';
import { startFakeGcs, type RunningFakeGcs } from './fake-gcs-process.js';
import { TokenBook } from './google-token-book.js';
import { detailQuery } from './queries.js';
import { makeTempDir } from './temp-dir.js';
import { describeUnless } from './skip.js';

/**
 * Runs of tilehouse as production runs them against Google: Application Default Credentials, no
 * emulator variables, both endpoints from the environment config (`sinks.bigquery.apiEndpoint`,
 * `sinks.gcs.apiEndpoint`), each a bearer proxy (bearer-proxy.ts) in front of the BigQuery emulator
 * or fake-gcs-server that refuses any request without a token the test's issuers gave out. The
 * token issuer (a fake metadata server, a key file's OAuth endpoint) is the test's: it shares the
 * block's TokenBook and is named through the run's environment variables.
 */
export interface GoogleRig {
  sandbox: Sandbox;
  book: TokenBook;
  bigquery: BearerProxy;
  gcs: BearerProxy;
  /** Clients straight to the emulator and fake-gcs-server (no proxy, no credentials), for the test's own reads. */
  bigqueryClient: BigQuery;
  storage: Storage;
  projectId: string;
  root: string;
}

export interface GoogleRun {
  exitCode: number | null;
  elapsedMs: number;
  stdout: string;
  stderr: string;
  dataset: string;
  bucket: string;
  table: string;
  /** The run summary (--json), when stdout held one. */
  summary: { tiles: Array<{ status: string; error?: { code: string; message: string }; leftBehind?: string[] }> } | undefined;
}

/**
 * `describe` for these runs: needs the emulator and fake-gcs-server (a failure under CI when
 * either is missing, as everywhere), and starts the sandbox, both servers and both proxies once.
 */
export function describeWithGoogleRig(title: string, body: (rig: GoogleRig) => void): void {
  const emulator = emulatorBinaryOrSkip();
  const fakeGcs = fakeGcsBinaryOrSkip();
  const fullTitle = `${title} (emulator, fake-gcs-server)`;
  if (emulator === null || fakeGcs === null) {
    describeUnless('the BigQuery emulator or fake-gcs-server is not installed (npm run setup:tools)')(fullTitle, () => undefined);
    return;
  }
  describe(fullTitle, () => {
    const rig = {} as GoogleRig;
    let runningEmulator: RunningEmulator | undefined;
    let withCopies: EmulatorWithCopyJobs | undefined;
    let runningGcs: RunningFakeGcs | undefined;
    beforeAll(async () => {
      rig.root = await makeTempDir();
      rig.book = new TokenBook();
      [rig.sandbox, runningEmulator, runningGcs] = await Promise.all([startSandbox({ incidents: 60 }), startEmulator(emulator), startFakeGcs(fakeGcs)]);
      rig.projectId = runningEmulator.projectId;
      // The emulator has no copy jobs (the publish): the house's proxy carries them out (docs/emulators.md).
      withCopies = await startEmulatorWithCopyJobs(runningEmulator);
      rig.bigquery = await startBearerProxy(withCopies.endpoint.apiEndpoint, rig.book);
      rig.gcs = await startBearerProxy(runningGcs.origin, rig.book);
      rig.bigqueryClient = localBigQueryClient(runningEmulator);
      rig.storage = await createStorageClient({ STORAGE_EMULATOR_HOST: runningGcs.origin });
    }, 60_000);
    afterAll(async () => {
      await Promise.all([rig.bigquery?.close(), rig.gcs?.close()]);
      await withCopies?.close();
      await Promise.all([runningEmulator?.stop(), runningGcs?.stop(), rig.sandbox?.close()]);
      if (rig.root) await rm(rig.root, { recursive: true, force: true });
    });
    body(rig);
  });
}

/** The environment of a run: the parent's, less every variable that would pick credentials or an emulator for it. */
export function googleRunEnv(rig: GoogleRig, extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...sandboxEnv(rig.sandbox), CI: '', ...extra };
  for (const name of [
    'BIGQUERY_EMULATOR_HOST',
    'STORAGE_EMULATOR_HOST',
    'GCE_METADATA_HOST',
    'GCE_METADATA_IP',
    'METADATA_SERVER_DETECTION',
    'GOOGLE_APPLICATION_CREDENTIALS',
    'GOOGLE_CLOUD_PROJECT',
    'GCLOUD_PROJECT',
  ]) {
    if (!(name in extra)) delete env[name];
  }
  return env;
}

/**
 * One `tilehouse <command>` of a job with a BigQuery sink and a gs:// CSV sink, in a fresh
 * workspace, dataset and bucket. `env` names the credentials (GCE_METADATA_HOST, or
 * GOOGLE_APPLICATION_CREDENTIALS); `environment` adds to the environment config.
 */
export async function googleRun(
  rig: GoogleRig,
  name: string,
  options: { env: Record<string, string>; environment?: Record<string, unknown>; command?: string[]; limitMs?: number },
): Promise<GoogleRun> {
  const dir = path.join(rig.root, name);
  const jobsDir = path.join(dir, 'jobs');
  await mkdir(jobsDir, { recursive: true });
  // gcloud's own application default credentials must not be found: CLOUDSDK_CONFIG points at an empty directory.
  await mkdir(path.join(dir, 'gcloud'), { recursive: true });
  const dataset = uniqueDatasetId('creds');
  const bucket = uniqueBucketName('creds');
  await rig.storage.createBucket(bucket);
  const table = 'incident_detail';
  const configFile = path.join(dir, 'env.yaml');
  await writeFile(
    configFile,
    stringify({
      source: {
        baseUrl: rig.sandbox.url,
        authUrl: rig.sandbox.url,
        clientId: '${TEST_CLIENT_ID}',
        clientSecret: '${TEST_CLIENT_SECRET}',
        requestTimeoutMs: 5000,
      },
      sinks: {
        csv: { directory: `gs://${bucket}/exports` },
        bigquery: { projectId: rig.projectId, dataset, location: 'US', apiEndpoint: rig.bigquery.origin },
        gcs: { apiEndpoint: rig.gcs.origin },
      },
      tempDirectory: path.join(dir, 'tmp'),
      ...options.environment,
    }),
  );
  await writeFile(
    path.join(jobsDir, `${table}.yaml`),
    stringify({ name: table, tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'bigquery', table, writeMode: 'replace' }, { type: 'csv' }] }),
  );
  const command = options.command ?? ['run', '--json'];
  const child = spawnCli([...command, '--config', configFile, '--jobs', jobsDir], {
    env: googleRunEnv(rig, { CLOUDSDK_CONFIG: path.join(dir, 'gcloud'), ...options.env }),
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const stdout = textOf(child.stdout);
  const stderr = textOf(child.stderr);
  const exit = await exitWithin(child, options.limitMs ?? 60_000);
  const out = await stdout;
  let summary: GoogleRun['summary'];
  try {
    summary = JSON.parse(out) as GoogleRun['summary'];
  } catch {
    summary = undefined;
  }
  return { exitCode: exit.code, elapsedMs: exit.elapsedMs, stdout: out, stderr: await stderr, dataset, bucket, table, summary };
}

/** The objects of a bucket (fake-gcs-server, straight). */
export async function objectNames(rig: GoogleRig, bucket: string): Promise<string[]> {
  const [files] = await rig.storage.bucket(bucket).getFiles();
  return files.map((file) => file.name).sort();
}

/** The tables of a dataset (the emulator, straight); [] when the dataset does not exist. */
export async function tableNames(rig: GoogleRig, dataset: string): Promise<string[]> {
  try {
    const [tables] = await rig.bigqueryClient.dataset(dataset).getTables();
    return tables.map((table) => table.id!).sort();
  } catch (error) {
    if ((error as { code?: unknown }).code === 404) return [];
    throw error;
  }
}

/** The requests both proxies carried, counted where a test started to look. */
export interface ProxiedMark {
  bigquery: number;
  gcs: number;
}

export interface MetadataServerRuns {
  /** This test's fake metadata server on the block's token book; closed after the test. */
  start(options?: Omit<FakeMetadataOptions, 'book'>): Promise<FakeMetadataServer>;
  /** googleRun with Application Default Credentials from this test's metadata server (started first). */
  run(name: string, options?: { environment?: Record<string, unknown> }): Promise<GoogleRun>;
  /** How many requests each proxy has carried so far. */
  mark(): ProxiedMark;
  /** The requests both proxies carried since `before`, BigQuery's first. */
  requestsSince(before: ProxiedMark): ProxiedRequest[];
}

/**
 * For the enclosing block of Workload Identity's runs (a fake GCE metadata server): each test
 * starts its own server, and after it the server is closed and both proxies' faults and delays
 * are undone, so no test sees another's.
 */
export function metadataServerEachTest(rig: GoogleRig): MetadataServerRuns {
  let metadata: FakeMetadataServer | undefined;
  afterEach(async () => {
    await metadata?.close();
    metadata = undefined;
    for (const proxy of [rig.bigquery, rig.gcs]) {
      proxy.setFault(undefined);
      proxy.setDelayMs(0);
    }
  });
  return {
    start: async (options = {}) => {
      metadata = await startFakeMetadataServer({ ...options, book: rig.book });
      return metadata;
    },
    run: (name, options = {}) => {
      if (metadata === undefined) throw new Error('start the metadata server before a run');
      return googleRun(rig, name, { ...options, env: { GCE_METADATA_HOST: metadata.host } });
    },
    mark: () => ({ bigquery: rig.bigquery.requests.length, gcs: rig.gcs.requests.length }),
    requestsSince: (before) => [...rig.bigquery.requests.slice(before.bigquery), ...rig.gcs.requests.slice(before.gcs)],
  };
}
