import { CreateBucketCommand, DeleteObjectCommand, DeleteObjectsCommand, HeadObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { join } from 'node:path';
import { findMotoBinary, startMoto } from '../../test/support/moto-process.js';
import { repoRoot } from './repo-root.js';

/** Where the s3 scenario writes: a moto server process on loopback with one bucket. */
export interface RunningMotoS3 {
  /** `http://127.0.0.1:PORT`: `sinks.s3.endpoint` of the measured tilehouse process. */
  origin: string;
  bucket: string;
  /** The server's process (its CPU and memory are not the scenario's). */
  pid: number;
  /** Credentials the measured process finds in its environment (the AWS chain); moto takes any. */
  env: Record<string, string>;
  client: S3Client;
  stop(): Promise<void>;
}

const ENV = { AWS_ACCESS_KEY_ID: 'bench', AWS_SECRET_ACCESS_KEY: 'bench-secret', AWS_REGION: 'us-east-1' };

/** moto (the tests' S3 stand-in, `npm run setup:moto`), or undefined when it is not installed. */
export async function startMotoIfInstalled(): Promise<RunningMotoS3 | undefined> {
  const binary = findMotoBinary(process.env, join(repoRoot(), '.tools/bin/moto_server'));
  if (binary === undefined) return undefined;
  const server = await startMoto(binary);
  const client = new S3Client({
    endpoint: server.origin,
    region: ENV.AWS_REGION,
    forcePathStyle: true,
    credentials: { accessKeyId: ENV.AWS_ACCESS_KEY_ID, secretAccessKey: ENV.AWS_SECRET_ACCESS_KEY },
  });
  const bucket = 'tilehouse-bench';
  await client.send(new CreateBucketCommand({ Bucket: bucket }));
  return {
    origin: server.origin,
    bucket,
    pid: server.pid,
    env: ENV,
    client,
    async stop() {
      client.destroy();
      await server.stop();
    },
  };
}

/** The size of an object in bytes, or undefined when it does not exist. */
export async function s3ObjectSize(s3: RunningMotoS3, key: string): Promise<number | undefined> {
  try {
    return (await s3.client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: key }))).ContentLength;
  } catch (error) {
    if ((error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 404) return undefined;
    throw error;
  }
}

export async function deleteS3Object(s3: RunningMotoS3, key: string): Promise<void> {
  await s3.client.send(new DeleteObjectCommand({ Bucket: s3.bucket, Key: key }));
}

/** Every object under `prefix/` removed (a scenario's table files or output), a thousand keys a request. */
export async function deleteS3Prefix(s3: RunningMotoS3, prefix: string): Promise<void> {
  for (;;) {
    const listed = await s3.client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: `${prefix}/` }));
    const keys = (listed.Contents ?? []).flatMap((object) => (object.Key === undefined ? [] : [{ Key: object.Key }]));
    if (keys.length === 0) return;
    await s3.client.send(new DeleteObjectsCommand({ Bucket: s3.bucket, Delete: { Objects: keys } }));
  }
}
