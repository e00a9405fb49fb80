import { randomUUID } from 'node:crypto';
import { CreateBucketCommand, GetObjectCommand, ListMultipartUploadsCommand, ListObjectsV2Command, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe } from 'vitest';
import { createS3Client } from '../../src/sinks/stores/s3/s3-client.js';
import { findMotoBinary, PROJECT_LOCAL_MOTO, startMoto } from './moto-process.js';
import { startS3Proxy, type S3Proxy } from './s3-proxy.js';
import { describeUnless } from './skip.js';
import { underCi } from './ci.js';

export { startMoto };

// moto takes any signed key pair; the SDK's chain finds these in the environment, as it would a
// real pair (never a file of tilehouse's: the credentials chain is the one under test).
export const TEST_AWS_ENV = { AWS_ACCESS_KEY_ID: 'tilehouse-test', AWS_SECRET_ACCESS_KEY: 'tilehouse-test-secret', AWS_REGION: 'us-east-1' } as const;

/**
 * The moto launcher, or null when absent. Under CI a missing server fails (as the BigQuery
 * emulator does), so the s3:// tests can never pass as skipped in a green build.
 */
export function motoBinaryOrSkip(env: NodeJS.ProcessEnv = process.env, projectLocal: string = PROJECT_LOCAL_MOTO): string | null {
  const found = findMotoBinary(env, projectLocal);
  if (found !== undefined) return found;
  if (underCi(env))
    throw new Error('CI is set but moto is not installed: run `npm run setup:moto` (a venv under .tools/moto, the launcher .tools/bin/moto_server).');
  return null;
}

/** A client as production builds one from `sinks.s3.endpoint`, credentials from the environment chain. */
export function s3ClientFor(endpoint: string): Promise<S3Client> {
  for (const [name, value] of Object.entries(TEST_AWS_ENV)) process.env[name] ??= value;
  return createS3Client({ endpoint });
}

export function uniqueS3BucketName(prefix = 'tilehouse-test'): string {
  return `${prefix}-${randomUUID().slice(0, 12)}`;
}

/** Every key of a bucket, and every incomplete multipart upload (as `<key> (upload)`). */
export async function keysOf(client: S3Client, bucket: string): Promise<string[]> {
  const objects = (await client.send(new ListObjectsV2Command({ Bucket: bucket }))).Contents ?? [];
  const uploads = (await client.send(new ListMultipartUploadsCommand({ Bucket: bucket }))).Uploads ?? [];
  return [...objects.map((object) => object.Key!), ...uploads.map((upload) => `${upload.Key!} (upload)`)].sort();
}

export async function getBytes(client: S3Client, bucket: string, key: string): Promise<Buffer> {
  const answer = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  return Buffer.from(await answer.Body!.transformToByteArray());
}

export async function putBytes(client: S3Client, bucket: string, key: string, body: Buffer | string): Promise<void> {
  await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
}

export interface TestS3 {
  /** moto's own origin (no proxy). */
  serverOrigin: string;
  /** The proxy's origin: the endpoint tilehouse is given (conditions on CopyObject enforced, faults). */
  endpoint: string;
  proxy: S3Proxy;
  /** A client straight to the server (the test's own reads and seeds). */
  client: S3Client;
  /** A client through the proxy, built as production builds one. */
  sinkClient: S3Client;
  newBucket(prefix?: string): Promise<string>;
}

/** Starts moto and the proxy in front of it; one per test file (`describeWithS3` or by hand). */
export async function startTestS3(binary: string): Promise<TestS3 & { stop(): Promise<void> }> {
  const moto = await startMoto(binary);
  const proxy = await startS3Proxy(moto.origin);
  const client = await s3ClientFor(moto.origin);
  const sinkClient = await s3ClientFor(proxy.origin);
  return {
    serverOrigin: moto.origin,
    endpoint: proxy.origin,
    proxy,
    client,
    sinkClient,
    async newBucket(prefix) {
      const name = uniqueS3BucketName(prefix);
      await client.send(new CreateBucketCommand({ Bucket: name }));
      return name;
    },
    async stop() {
      client.destroy();
      sinkClient.destroy();
      await proxy.close();
      await moto.stop();
    },
  };
}

/**
 * `describe` for tests that need the S3 server: the title says so, the block gets moto and the
 * proxy of its own, and it is skipped, never silently passed, when moto is absent outside CI.
 */
export function describeWithS3(title: string, body: (s3: TestS3) => void): void {
  const binary = motoBinaryOrSkip();
  const fullTitle = `${title} (moto S3 server)`;
  if (binary === null) {
    describeUnless('moto is not installed (npm run setup:moto)')(fullTitle, () => undefined);
    return;
  }
  describe(fullTitle, () => {
    let running: (TestS3 & { stop(): Promise<void> }) | undefined;
    const s3 = {} as TestS3;
    beforeAll(async () => {
      running = await startTestS3(binary);
      Object.assign(s3, running);
    }, 60_000);
    afterAll(async () => {
      await running?.stop();
    });
    body(s3);
  });
}
