import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { CreateMultipartUploadCommand, HeadObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { parse } from 'csv-parse/sync';
import { afterAll, expect, it } from 'vitest';
import type { CsvSinkConfig } from '../../../../src/config/job-schema.js';
import type { ParquetSinkConfig } from '../../../../src/config/parquet-sink-schema.js';
import { CsvSink } from '../../../../src/sinks/csv/csv-sink.js';
import { FileSink } from '../../../../src/sinks/files/file-sink.js';
import { parquetFormat } from '../../../../src/sinks/parquet/parquet-format.js';
import type { SinkWriter } from '../../../../src/sinks/sink.js';
import { RUN_ID_METADATA_KEY } from '../../../../src/sinks/stores/s3/temp-keys.js';
import type { TypedRow } from '../../../../src/transform/column.js';
import { describeWithS3, getBytes, keysOf, putBytes } from '../../../support/s3-server.js';
import { DEAD_PID, tagOf } from '../../../support/temp-owners.js';
import { duckdb, sqlString } from '../../parquet/encoder/duckdb-read-back.js';
import { silentLogger as logger } from '../../../support/fake-sinks.js';
import { incidentsRun as context, twoRows as rows } from '../../../support/two-row-fixture.js';

// Fast retries: a fault test must not wait out S3's real backoff.
const s3Write = { limits: { maxAttempts: 4, baseDelayMs: 1, maxDelayMs: 5 }, requestTimeoutMs: 5_000 };

const locals: string[] = [];
afterAll(async () => {
  for (const directory of locals) await rm(directory, { recursive: true, force: true });
});
async function localDirectory(): Promise<string> {
  const directory = await mkdtemp(path.join(tmpdir(), 'tilehouse-s3-'));
  locals.push(directory);
  return directory;
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return (error as { code: string }).code;
  }
  return 'resolved';
}

async function commit(writer: SinkWriter, batch: readonly TypedRow[] = rows) {
  await writer.writeRows(batch);
  await writer.prepare();
  return writer.publish();
}

describeWithS3('the CSV and Parquet sinks on s3://', (s3) => {
  const csvSink = (target: string, config: Partial<CsvSinkConfig> = {}, client = s3.sinkClient) =>
    new CsvSink({
      config: { type: 'csv', gzip: false, manifest: false, path: target, ...config },
      directory: 'out',
      timezone: 'UTC',
      s3Client: client,
      s3Write,
    });
  const parquetSink = (target: string, config: Partial<ParquetSinkConfig> = {}) =>
    new FileSink(parquetFormat, {
      config: { type: 'parquet', compression: 'snappy', path: target, ...config } as ParquetSinkConfig,
      directory: 'out',
      timezone: 'UTC',
      s3Client: s3.sinkClient,
      s3Write,
    });

  it('publishes exactly the bytes the local CSV sink writes for the same run, gzip and manifest included', async () => {
    const bucket = await s3.newBucket();
    const local = await localDirectory();
    const writer = await csvSink(`s3://${bucket}/exports/{name}/{date}.csv.gz`, { gzip: true, manifest: true }).open(context('run-gz'));
    expect(writer.target).toBe(`s3://${bucket}/exports/incidents/2026-07-01.csv.gz`);
    const result = await commit(writer);
    await commit(await new CsvSink({ config: { type: 'csv', gzip: true, path: 'a.csv.gz' }, directory: local, timezone: 'UTC' }).open(context('run-gz')));
    const bytes = await getBytes(s3.client, bucket, 'exports/incidents/2026-07-01.csv.gz');
    expect(gunzipSync(bytes)).toEqual(gunzipSync(await readFile(path.join(local, 'a.csv.gz'))));
    expect(parse(gunzipSync(bytes).toString('utf8'))).toEqual([
      ['id', 'Title, "quoted"'],
      ['1', 'first'],
      ['2', 'zweite\nZeile'],
    ]);
    const manifest = JSON.parse((await getBytes(s3.client, bucket, 'exports/incidents/2026-07-01.csv.gz.manifest.json')).toString('utf8')) as Record<
      string,
      unknown
    >;
    expect(manifest).toMatchObject({
      file: '2026-07-01.csv.gz',
      job: 'incidents',
      runId: 'run-gz',
      rows: 2,
      bytes: bytes.length,
      gzip: true,
      sha256: createHash('sha256').update(bytes).digest('hex'),
    });
    expect(result.details).toMatchObject({ sha256: manifest.sha256, bytes: bytes.length });
    const head = await s3.client.send(new HeadObjectCommand({ Bucket: bucket, Key: 'exports/incidents/2026-07-01.csv.gz' }));
    expect(head.Metadata?.[RUN_ID_METADATA_KEY]).toBe('run-gz');
    expect(head.ContentType).toBe('application/gzip');
    expect(await keysOf(s3.client, bucket)).toEqual(['exports/incidents/2026-07-01.csv.gz', 'exports/incidents/2026-07-01.csv.gz.manifest.json']);
  });

  it("publishes the local Parquet sink's exact bytes, which DuckDB reads back", async () => {
    const bucket = await s3.newBucket();
    const local = await localDirectory();
    await commit(await parquetSink(`s3://${bucket}/lake/{date}.parquet`).open(context('run-pq')));
    await commit(
      await new FileSink(parquetFormat, {
        config: { type: 'parquet', compression: 'snappy', path: 'a.parquet' } as ParquetSinkConfig,
        directory: local,
        timezone: 'UTC',
      }).open(context('run-pq')),
    );
    const bytes = await getBytes(s3.client, bucket, 'lake/2026-07-01.parquet');
    expect(bytes.equals(await readFile(path.join(local, 'a.parquet')))).toBe(true);
    const copy = path.join(local, 'downloaded.parquet');
    await writeFile(copy, bytes);
    const reader = await (await duckdb()).runAndReadAll(`SELECT CAST(id AS VARCHAR), title FROM read_parquet(${sqlString(copy)}) ORDER BY id`);
    expect(reader.getRows()).toEqual([
      ['1', 'first'],
      ['2', 'zweite\nZeile'],
    ]);
    // plan reads the stored object's footer through the S3 range reads.
    expect(await parquetSink(`s3://${bucket}/lake/{date}.parquet`).plan(context('plan'))).toMatchObject({ action: 'unchanged' });
  });

  it('streams a run larger than a part as a multipart upload, and publishes it whole', async () => {
    const bucket = await s3.newBucket();
    const big: TypedRow[] = Array.from({ length: 60_000 }, (_, index) => [BigInt(index), `row ${index} ${'x'.repeat(90)}`]);
    const sink = new CsvSink({
      config: { type: 'csv', gzip: false, path: `s3://${bucket}/big.csv` },
      directory: 'out',
      timezone: 'UTC',
      s3Client: s3.sinkClient,
      s3Write: { ...s3Write, partBytes: 5 * 1024 * 1024 },
    });
    const before = s3.proxy.seen.length;
    const result = await commit(await sink.open(context('run-big')), big);
    const kinds = s3.proxy.seen.slice(before).map((line) => line.split(' ')[0]);
    expect(kinds.filter((kind) => kind === 'upload-part').length).toBeGreaterThanOrEqual(2);
    expect(kinds).toContain('complete-multipart');
    const bytes = await getBytes(s3.client, bucket, 'big.csv');
    expect(bytes.length).toBe(result.details?.bytes);
    expect(bytes.length).toBeGreaterThan(5 * 1024 * 1024);
    expect(bytes.toString('utf8').split('\r\n').at(-2)).toBe(`59999,row 59999 ${'x'.repeat(90)}`);
    expect(await keysOf(s3.client, bucket)).toEqual(['big.csv']);
  });

  it('aborts a multipart upload whose part keeps failing, and leaves the target and the bucket as they were', async () => {
    const bucket = await s3.newBucket();
    await putBytes(s3.client, bucket, 'big.csv', 'id\r\nprevious\r\n');
    const big: TypedRow[] = Array.from({ length: 60_000 }, (_, index) => [BigInt(index), `row ${index} ${'x'.repeat(90)}`]);
    const sink = new CsvSink({
      config: { type: 'csv', gzip: false, path: `s3://${bucket}/big.csv` },
      directory: 'out',
      timezone: 'UTC',
      s3Client: s3.sinkClient,
      s3Write: { ...s3Write, partBytes: 5 * 1024 * 1024 },
    });
    s3.proxy.fail({ on: 'upload-part', fault: { kind: 'status', status: 500, code: 'InternalError' }, urlContains: bucket, nth: 2, times: 10 });
    const writer = await sink.open(context('run-broken'));
    const failed = (async () => {
      await writer.writeRows(big);
      await writer.prepare();
    })();
    expect(await codeOf(failed)).toBe('write_failed');
    await writer.abort();
    s3.proxy.disarm();
    expect(s3.proxy.fired.filter((fired) => fired === 'upload-part:status')).toHaveLength(4);
    expect(s3.proxy.seen.some((line) => line.startsWith('abort-multipart') && line.includes(bucket))).toBe(true);
    expect(await keysOf(s3.client, bucket)).toEqual(['big.csv']);
    expect((await getBytes(s3.client, bucket, 'big.csv')).toString()).toBe('id\r\nprevious\r\n');
  });

  it('retries 503 SlowDown and 500 InternalError on the upload and the publishing copy, and publishes once', async () => {
    const bucket = await s3.newBucket();
    s3.proxy.fail({ on: 'put', fault: { kind: 'status', status: 503, code: 'SlowDown' }, urlContains: bucket, times: 2 });
    s3.proxy.fail({ on: 'copy', fault: { kind: 'status', status: 500, code: 'InternalError' }, urlContains: bucket });
    s3.proxy.fail({ on: 'head', fault: { kind: 'reset' }, urlContains: bucket });
    const result = await commit(await csvSink(`s3://${bucket}/a.csv`).open(context('run-retry')));
    expect(s3.proxy.pending).toBe(0);
    expect(result.details?.retries).toBe(4);
    expect(parse((await getBytes(s3.client, bucket, 'a.csv')).toString())).toEqual([
      ['id', 'Title, "quoted"'],
      ['1', 'first'],
      ['2', 'zweite\nZeile'],
    ]);
    expect(await keysOf(s3.client, bucket)).toEqual(['a.csv']);
  });

  it('judges a lost answer to the publishing copy by reading the target: published, not a conflict', async () => {
    const bucket = await s3.newBucket();
    await putBytes(s3.client, bucket, 'a.csv', 'id\r\nprevious\r\n');
    s3.proxy.fail({ on: 'copy', fault: { kind: 'lost-answer' }, urlContains: `${bucket}/a.csv` });
    const result = await commit(await csvSink(`s3://${bucket}/a.csv`).open(context('run-lost')));
    expect(s3.proxy.fired).toContain('copy:lost-answer');
    expect(result.rows).toBe(2);
    expect((await s3.client.send(new HeadObjectCommand({ Bucket: bucket, Key: 'a.csv' }))).Metadata?.[RUN_ID_METADATA_KEY]).toBe('run-lost');
    expect(await keysOf(s3.client, bucket)).toEqual(['a.csv']);
  });

  it('gives up after the retry limit with the target unchanged, saying so (write_failed)', async () => {
    const bucket = await s3.newBucket();
    await putBytes(s3.client, bucket, 'a.csv', 'id\r\nprevious\r\n');
    s3.proxy.fail({ on: 'copy', fault: { kind: 'status', status: 503, code: 'SlowDown' }, urlContains: bucket, times: 4 });
    const writer = await csvSink(`s3://${bucket}/a.csv`).open(context('run-sick'));
    await writer.writeRows(rows);
    await writer.prepare();
    const error = (await writer.publish().then(
      () => new Error('published'),
      (caught: unknown) => caught,
    )) as Error & { code: string };
    expect(error).toMatchObject({ code: 'write_failed' });
    expect(error.message).toMatch(/SlowDown.*this run published nothing/s);
    await writer.abort();
    expect((await getBytes(s3.client, bucket, 'a.csv')).toString()).toBe('id\r\nprevious\r\n');
    expect(await keysOf(s3.client, bucket)).toEqual(['a.csv']);
  });

  it('lets one of two runs of one target win and the other publish nothing, naming the winner (target_changed)', async () => {
    const bucket = await s3.newBucket();
    await putBytes(s3.client, bucket, 'a.csv', 'id\r\nprevious\r\n');
    const first = await csvSink(`s3://${bucket}/a.csv`).open(context('run-first'));
    const second = await csvSink(`s3://${bucket}/a.csv`).open(context('run-second'));
    await second.writeRows(rows);
    await first.writeRows(rows.slice(0, 1));
    await second.prepare();
    await first.prepare();
    await second.publish();
    const error = (await first.publish().then(
      () => new Error('published'),
      (caught: unknown) => caught,
    )) as Error & { code: string };
    expect(error).toMatchObject({ code: 'target_changed' });
    expect(error.message).toContain('run run-second of job incidents');
    await first.abort();
    expect((await s3.client.send(new HeadObjectCommand({ Bucket: bucket, Key: 'a.csv' }))).Metadata?.[RUN_ID_METADATA_KEY]).toBe('run-second');
    expect(await keysOf(s3.client, bucket)).toEqual(['a.csv']);
  });

  it('refuses to overwrite a target created after the run opened (If-None-Match: *), and accepts one that did not change', async () => {
    const bucket = await s3.newBucket();
    const writer = await csvSink(`s3://${bucket}/new.csv`).open(context('run-create'));
    await putBytes(s3.client, bucket, 'new.csv', 'someone else');
    expect(await codeOf(commit(writer))).toBe('target_changed');
    await writer.abort();
    expect((await getBytes(s3.client, bucket, 'new.csv')).toString()).toBe('someone else');
    // The legal answer: the same target, unchanged since open (If-Match its ETag), is replaced.
    await commit(await csvSink(`s3://${bucket}/new.csv`).open(context('run-replace')));
    expect((await s3.client.send(new HeadObjectCommand({ Bucket: bucket, Key: 'new.csv' }))).Metadata?.[RUN_ID_METADATA_KEY]).toBe('run-replace');
  });

  // An unknown bucket and a "directory" prefix at the target: test/sinks/files/object-targets.test.ts, for gs:// and s3:// alike.
  it('refuses a forbidden bucket in the access check, before any row (permission_denied), and passes it once allowed', async () => {
    const checkContext = { jobName: 'incidents', tileId: 't', logger };
    const bucket = await s3.newBucket();
    s3.proxy.fail({ on: 'list', fault: { kind: 'status', status: 403, code: 'AccessDenied' }, urlContains: bucket });
    expect(await codeOf(csvSink(`s3://${bucket}/a.csv`).checkAccess(checkContext))).toBe('permission_denied');
    expect(await csvSink(`s3://${bucket}/a.csv`).checkAccess(checkContext)).toContain(`s3://${bucket}/: bucket found`);
  });

  it('does not retry a client that cannot sign (no credentials in the chain), and says why', async () => {
    const { S3Client } = await import('@aws-sdk/client-s3');
    const unsigned = new S3Client({
      endpoint: s3.endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      maxAttempts: 1,
      credentials: () => {
        asked += 1;
        return Promise.reject(new Error('Could not load credentials from any providers'));
      },
    });
    let asked = 0;
    const bucket = await s3.newBucket();
    const before = s3.proxy.seen.length;
    const error = (await csvSink(`s3://${bucket}/a.csv`, {}, unsigned)
      .open(context('run-unsigned'))
      .then(
        () => new Error('opened'),
        (caught: unknown) => caught,
      )) as Error & { code: string };
    expect(error.code).toBe('write_failed');
    expect(error.message).toContain('Could not load credentials');
    // Asked for credentials once: a request that cannot be signed is not tried again.
    expect(asked).toBe(1);
    expect(s3.proxy.seen.length).toBe(before);
  });

  it('sweeps temp objects and multipart uploads of dead owners, never a live one, and names them', async () => {
    const bucket = await s3.newBucket();
    const dead = `exports/.a.csv.tilehouse-run-dead+${tagOf({ pid: DEAD_PID })}.tmp`;
    const deadUpload = `exports/.b.csv.tilehouse-run-dead+${tagOf({ pid: DEAD_PID })}.tmp`;
    const live = `exports/.c.csv.tilehouse-run-live+${tagOf({})}.tmp`;
    await putBytes(s3.client, bucket, dead, 'x');
    await putBytes(s3.client, bucket, live, 'x');
    await putBytes(s3.client, bucket, 'exports/a.csv', 'kept');
    await s3.client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: deadUpload }));
    const swept = await csvSink(`s3://${bucket}/exports/{name}.csv`).sweep(logger);
    expect(swept.sort()).toEqual([`s3://${bucket}/${deadUpload} (incomplete multipart upload)`, `s3://${bucket}/${dead}`].sort());
    expect(await keysOf(s3.client, bucket)).toEqual(['exports/a.csv', live].sort());
  });

  it('keeps the previous object when a run is aborted mid-stream, after prepare, or fails to open', async () => {
    const bucket = await s3.newBucket();
    await s3.client.send(new PutObjectCommand({ Bucket: bucket, Key: 'a.csv', Body: 'id\r\nprevious\r\n' }));
    const during = await csvSink(`s3://${bucket}/a.csv`, { manifest: true }).open(context('run-during'));
    await during.writeRows(rows);
    await during.abort();
    const after = await csvSink(`s3://${bucket}/a.csv`, { manifest: true }).open(context('run-after'));
    await after.writeRows(rows);
    await after.prepare();
    expect((await keysOf(s3.client, bucket)).length).toBe(3); // target, temp object, temp manifest
    await after.abort();
    expect(await keysOf(s3.client, bucket)).toEqual(['a.csv']);
    expect((await getBytes(s3.client, bucket, 'a.csv')).toString()).toBe('id\r\nprevious\r\n');
    // Refused at open (the target's HeadObject forbidden): nothing started, nothing left.
    s3.proxy.fail({ on: 'head', fault: { kind: 'status', status: 403, code: 'AccessDenied' }, urlContains: 'a.csv', times: 10 });
    expect(await codeOf(csvSink(`s3://${bucket}/a.csv`, { manifest: true }).open(context('run-refused')))).toBe('permission_denied');
    // keysOf lists incomplete multipart uploads too (as `<key> (upload)`): none is left.
    expect(await keysOf(s3.client, bucket)).toEqual(['a.csv']);
    expect((await getBytes(s3.client, bucket, 'a.csv')).toString()).toBe('id\r\nprevious\r\n');
  });
});
