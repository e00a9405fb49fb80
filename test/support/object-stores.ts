// The object stores tilehouse writes files to (gs://, s3://), behind one face, so that a test of
// behaviour they share is written once and run against each (as Kysely runs every feature test
// against each dialect): fake-gcs-server behind the proxy that enforces Cloud Storage's
// preconditions, and moto behind the proxy that enforces S3's copy conditions.
import { readFile, writeFile } from 'node:fs/promises';
import { HeadObjectCommand } from '@aws-sdk/client-s3';
import type { Storage } from '@google-cloud/storage';
import { parse, stringify } from 'yaml';
import type { CliSeams } from '../../src/cli/command.js';
import type { FileSinkOptions } from '../../src/sinks/files/file-sink.js';
import { RUN_ID_METADATA_KEY as GCS_RUN_ID_KEY } from '../../src/sinks/stores/gcs/temp-objects.js';
import { RUN_ID_METADATA_KEY as S3_RUN_ID_KEY } from '../../src/sinks/stores/s3/temp-keys.js';
import { describeWithFakeGcs, usePreconditionProxy } from './fake-gcs-server.js';
import { describeWithS3, getBytes, keysOf, putBytes, TEST_AWS_ENV, type TestS3 } from './s3-server.js';

export interface TestObjectStore {
  /** The target kind, as an error's `targetKind` says it. */
  readonly kind: 'gcs' | 's3';
  /** `gs` or `s3`: a target is `${scheme}://bucket/key`. */
  readonly scheme: 'gs' | 's3';
  newBucket(prefix: string): Promise<string>;
  /** Points a workspace's environment file at the store (an endpoint, where it needs one). */
  configure(configFile: string): Promise<void>;
  /** What a CLI process needs in its environment to reach the store. */
  processEnv(): Record<string, string>;
  /** What an in-process run (`runCli`) needs to reach the store. */
  seams(): CliSeams;
  /** What a file sink built by hand needs to reach the store (its client; fast retries). */
  sinkOptions(): Pick<FileSinkOptions, 'storageClient' | 's3Client' | 's3Write'>;
  put(bucket: string, key: string, text: string): Promise<void>;
  /** Every key of a bucket with its bytes (base64), and on S3 every incomplete multipart upload (`<key> (upload)`), sorted by key. */
  objects(bucket: string): Promise<Array<readonly [string, string]>>;
  bytes(bucket: string, key: string): Promise<Buffer>;
  /** The run id an object's metadata names (the run that published it). */
  runIdOf(bucket: string, key: string): Promise<string | undefined>;
  /** The conditional publishes the store's proxy refused so far (412), where it counts them. */
  refusedPublishes?: () => number;
}

function gcsStore(storage: () => Storage, origin: () => string, refused: () => number, newBucket: (prefix: string) => Promise<string>): TestObjectStore {
  return {
    kind: 'gcs',
    scheme: 'gs',
    newBucket,
    configure: async () => undefined,
    processEnv: () => ({ STORAGE_EMULATOR_HOST: origin() }),
    seams: () => ({ sinkOptions: { storageClient: storage() } }),
    sinkOptions: () => ({ storageClient: storage() }),
    put: (bucket, key, text) => storage().bucket(bucket).file(key).save(text, { resumable: false }),
    async objects(bucket) {
      const [files] = await storage().bucket(bucket).getFiles();
      const entries = await Promise.all(files.map(async (file) => [file.name, (await file.download())[0].toString('base64')] as const));
      return entries.sort(([a], [b]) => a.localeCompare(b));
    },
    bytes: async (bucket, key) => (await storage().bucket(bucket).file(key).download())[0],
    async runIdOf(bucket, key) {
      const [metadata] = await storage().bucket(bucket).file(key).getMetadata();
      const runId = metadata.metadata?.[GCS_RUN_ID_KEY];
      return runId === undefined || runId === null ? undefined : String(runId);
    },
    refusedPublishes: refused,
  };
}

function s3Store(s3: TestS3): TestObjectStore {
  return {
    kind: 's3',
    scheme: 's3',
    newBucket: (prefix) => s3.newBucket(prefix),
    async configure(configFile) {
      const config = parse(await readFile(configFile, 'utf8')) as { sinks: Record<string, unknown> };
      config.sinks.s3 = { endpoint: s3.endpoint, region: 'eu-west-1' };
      await writeFile(configFile, stringify(config));
    },
    processEnv: () => ({ ...TEST_AWS_ENV }),
    seams: () => ({}),
    // Fast retries: a fault test must not wait out S3's real backoff.
    sinkOptions: () => ({ s3Client: s3.sinkClient, s3Write: { limits: { maxAttempts: 4, baseDelayMs: 1, maxDelayMs: 5 }, requestTimeoutMs: 5_000 } }),
    put: (bucket, key, text) => putBytes(s3.client, bucket, key, text),
    async objects(bucket) {
      const keys = (await keysOf(s3.client, bucket)).sort();
      // An incomplete multipart upload is listed without bytes (it has none to read): one left behind shows as a difference.
      return Promise.all(keys.map(async (key) => [key, key.endsWith(' (upload)') ? '' : (await getBytes(s3.client, bucket, key)).toString('base64')] as const));
    },
    bytes: (bucket, key) => getBytes(s3.client, bucket, key),
    runIdOf: async (bucket, key) => (await s3.client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }))).Metadata?.[S3_RUN_ID_KEY],
  };
}

/** `body` once per object store, each in its own describe block that starts the store's server (and skips or, under CI, fails without it). */
export function describeWithObjectStores(title: string, body: (store: TestObjectStore) => void): void {
  describeWithFakeGcs(`${title}, gs://`, (gcs) => {
    const through = usePreconditionProxy(gcs);
    body(
      gcsStore(
        () => through.storage,
        () => through.proxy.origin,
        () => through.proxy.preconditionFailures,
        (prefix) => gcs.newBucket(prefix),
      ),
    );
  });
  describeWithS3(`${title}, s3://`, (s3) => body(s3Store(s3)));
}
