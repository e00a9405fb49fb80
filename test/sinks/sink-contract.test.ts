// The contract every sink keeps, run against each sink (as Kysely runs one suite per dialect):
// the pipeline's promises ("all sinks publish or none", "a failed run leaves no partial output")
// rest on exactly these behaviours. A new sink kind, or a new place a kind writes to, is added here
// before it is added anywhere else.
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { BigQuery } from '@google-cloud/bigquery';
import { parse } from 'csv-parse/sync';
import { pino } from 'pino';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BigQuerySink } from '../../src/sinks/bigquery/bigquery-sink.js';
import { CsvSink } from '../../src/sinks/csv/csv-sink.js';
import { FileSink } from '../../src/sinks/files/file-sink.js';
import { ParquetEncoder } from '../../src/sinks/parquet/encoder/parquet-encoder.js';
import { parquetFormat } from '../../src/sinks/parquet/parquet-format.js';
import type { Sink, SinkRunContext } from '../../src/sinks/sink.js';
import type { Column, TypedRow } from '../../src/transform/column.js';
import { emulatorBinaryOrSkip, uniqueDatasetId } from '../support/bigquery-emulator.js';
import { startEmulator, type RunningEmulator } from '../support/bigquery-emulator-process.js';
import { startEmulatorWithCopyJobs, type EmulatorWithCopyJobs } from '../support/bigquery-fake-server.js';
import { readTable, stagingTables, tableExists } from '../support/bigquery-read.js';
import { fakeGcsBinaryOrSkip, fakeGcsClient, startFakeGcs, uniqueBucketName, type RunningFakeGcs } from '../support/fake-gcs-server.js';
import { duckdb, sqlString } from './parquet/encoder/duckdb-read-back.js';
import { getBytes, keysOf, motoBinaryOrSkip, putBytes, startTestS3, type TestS3 } from '../support/s3-server.js';

const columns: Column[] = [
  { name: 'id', header: 'id', type: 'INT64', sourceDataType: 'number' },
  { name: 'title', header: 'title', type: 'STRING', sourceDataType: 'text' },
];
const PREVIOUS: string[][] = [['0', 'previous run']];
const NEW_ROWS: TypedRow[] = [
  [1n, 'first'],
  [2n, 'second, with "quotes"'],
  [3n, null],
];
const NEW_TEXT = [
  ['1', 'first'],
  ['2', 'second, with "quotes"'],
  ['3', ''],
];

/** One sink as the suite sees it: its target's rows as text, and what temporary artefacts exist. */
interface SinkFixture {
  sink: Sink;
  context(runId: string): SinkRunContext;
  seedPrevious(): Promise<void>;
  /** The target's rows as text, ordered by id; undefined when there is no target. */
  read(): Promise<string[][] | undefined>;
  /** Temp files, staging tables: whatever a run holds before it publishes. */
  artefacts(): Promise<string[]>;
  close(): Promise<void>;
}

interface SinkUnderTest {
  name: string;
  /** False when this sink cannot be tested here (the emulator is absent outside CI): its cases are skipped, saying why. */
  available(): boolean;
  make(): Promise<SinkFixture>;
}

const logger = pino({ level: 'silent' });
const baseContext = (runId: string): SinkRunContext => ({
  jobName: 'contract',
  tileId: 'tile-c',
  runId,
  startedAt: new Date('2026-07-01T06:00:00Z'),
  columns,
  logger,
});

const csvUnderTest: SinkUnderTest = {
  name: 'csv',
  available: () => true,
  async make() {
    const directory = await mkdtemp(path.join(tmpdir(), 'tilehouse-contract-'));
    const target = path.join(directory, 'contract.csv');
    return {
      sink: new CsvSink({ config: { type: 'csv', gzip: false }, directory, timezone: 'UTC' }),
      context: baseContext,
      seedPrevious: () => writeFile(target, `id,title\r\n${PREVIOUS.map((row) => row.join(',')).join('\r\n')}\r\n`),
      async read() {
        const entries = await readdir(directory);
        if (!entries.includes('contract.csv')) return undefined;
        return (parse(await readFile(target, 'utf8')) as string[][]).slice(1);
      },
      artefacts: async () => (await readdir(directory)).filter((name) => name !== 'contract.csv'),
      close: () => rm(directory, { recursive: true, force: true }),
    };
  },
};

// An emulator of this file's own (see test/support/global-setup.ts), behind the copy-job proxy.
let running: RunningEmulator | undefined;
let emulator: EmulatorWithCopyJobs | undefined;
const binary = emulatorBinaryOrSkip();

const bigqueryUnderTest: SinkUnderTest = {
  name: 'bigquery (emulator)',
  available: () => binary !== null,
  async make() {
    running ??= await startEmulator(binary!);
    emulator ??= await startEmulatorWithCopyJobs(running);
    const client: BigQuery = emulator.client();
    const dataset = uniqueDatasetId('tilehouse_contract');
    const tempDirectory = await mkdtemp(path.join(tmpdir(), 'tilehouse-contract-bq-'));
    const sink = new BigQuerySink({
      config: { type: 'bigquery', writeMode: 'replace', schema: 'freeze' },
      defaults: { dataset, location: 'US' },
      client,
      tempDirectory,
      retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 2 },
      polling: { initialIntervalMs: 1, maxIntervalMs: 2, jobAttempts: 3, maxWaitMs: 10_000 },
    });
    const read = async () => {
      if (!(await client.dataset(dataset).exists())[0] || !(await tableExists(client, dataset, 'contract'))) return undefined;
      const rows = await readTable(client, { projectId: running!.projectId, dataset, table: 'contract' }, 'id');
      return rows.map((row) => [String(row.id), row.title === null ? '' : String(row.title)]);
    };
    return {
      sink,
      context: baseContext,
      async seedPrevious() {
        // The previous run, published by the sink itself: the one way a target comes to exist.
        const writer = await sink.open(baseContext('seed'));
        await writer.writeRows(PREVIOUS.map(([id, title]) => [BigInt(id!), title!]));
        await writer.prepare();
        await writer.publish();
      },
      read,
      artefacts: async () => [...(await readdir(tempDirectory)), ...((await client.dataset(dataset).exists())[0] ? await stagingTables(client, dataset) : [])],
      close: () => rm(tempDirectory, { recursive: true, force: true }),
    };
  },
};

// A fake-gcs-server of this file's own, started on first use; a bucket per test.
let fakeGcs: RunningFakeGcs | undefined;
const fakeGcsBinary = fakeGcsBinaryOrSkip();

const gcsUnderTest: SinkUnderTest = {
  name: 'csv on gs:// (fake-gcs-server)',
  available: () => fakeGcsBinary !== null,
  async make() {
    fakeGcs ??= await startFakeGcs(fakeGcsBinary!);
    const storage = await fakeGcsClient(fakeGcs.origin);
    const bucketName = uniqueBucketName('contract');
    await storage.createBucket(bucketName);
    const bucket = storage.bucket(bucketName);
    const sink = new CsvSink({ config: { type: 'csv', gzip: false }, directory: `gs://${bucketName}/exports`, timezone: 'UTC', storageClient: storage });
    const names = async () => (await bucket.getFiles())[0].map((file) => file.name);
    return {
      sink,
      context: baseContext,
      seedPrevious: async () => {
        await bucket.file('exports/contract.csv').save(`id,title\r\n${PREVIOUS.map((row) => row.join(',')).join('\r\n')}\r\n`, { resumable: false });
      },
      async read() {
        if (!(await names()).includes('exports/contract.csv')) return undefined;
        const [bytes] = await bucket.file('exports/contract.csv').download();
        return (parse(bytes.toString('utf8')) as string[][]).slice(1);
      },
      artefacts: async () => (await names()).filter((name) => name !== 'exports/contract.csv'),
      close: async () => undefined,
    };
  },
};

/** The previous run as a Parquet file (the encoder's bytes: what an earlier run of the sink wrote). */
function previousParquet(): Buffer {
  const encoder = new ParquetEncoder(columns.map(({ name, type }) => ({ name, type })));
  return Buffer.concat([...encoder.addRows(PREVIOUS.map(([id, title]) => [BigInt(id!), title!])), ...encoder.finish()]);
}

/** A Parquet file's rows as DuckDB reads them, as text ordered by id (null as '', as the other fixtures read it). */
async function readParquetRows(file: string): Promise<string[][]> {
  const reader = await (await duckdb()).runAndReadAll(`SELECT CAST(id AS VARCHAR), coalesce(title, '') FROM read_parquet(${sqlString(file)}) ORDER BY id`);
  return reader.getRows().map((row) => row.map(String));
}

const parquetUnderTest: SinkUnderTest = {
  name: 'parquet',
  available: () => true,
  async make() {
    const directory = await mkdtemp(path.join(tmpdir(), 'tilehouse-contract-pq-'));
    const target = path.join(directory, 'contract.parquet');
    return {
      sink: new FileSink(parquetFormat, { config: { type: 'parquet', compression: 'snappy' }, directory, timezone: 'UTC' }),
      context: baseContext,
      seedPrevious: () => writeFile(target, previousParquet()),
      read: async () => ((await readdir(directory)).includes('contract.parquet') ? readParquetRows(target) : undefined),
      artefacts: async () => (await readdir(directory)).filter((name) => name !== 'contract.parquet'),
      close: () => rm(directory, { recursive: true, force: true }),
    };
  },
};

const parquetGcsUnderTest: SinkUnderTest = {
  name: 'parquet on gs:// (fake-gcs-server)',
  available: () => fakeGcsBinary !== null,
  async make() {
    fakeGcs ??= await startFakeGcs(fakeGcsBinary!);
    const storage = await fakeGcsClient(fakeGcs.origin);
    const bucketName = uniqueBucketName('contract-pq');
    await storage.createBucket(bucketName);
    const bucket = storage.bucket(bucketName);
    const local = await mkdtemp(path.join(tmpdir(), 'tilehouse-contract-pq-gs-'));
    const sink = new FileSink(parquetFormat, {
      config: { type: 'parquet', compression: 'zstd' },
      directory: `gs://${bucketName}/lake`,
      timezone: 'UTC',
      storageClient: storage,
    });
    const names = async () => (await bucket.getFiles())[0].map((file) => file.name);
    return {
      sink,
      context: baseContext,
      seedPrevious: async () => {
        await bucket.file('lake/contract.parquet').save(previousParquet(), { resumable: false });
      },
      async read() {
        if (!(await names()).includes('lake/contract.parquet')) return undefined;
        const copy = path.join(local, `read-${Date.now()}.parquet`);
        await writeFile(copy, (await bucket.file('lake/contract.parquet').download())[0]);
        return readParquetRows(copy);
      },
      artefacts: async () => (await names()).filter((name) => name !== 'lake/contract.parquet'),
      close: () => rm(local, { recursive: true, force: true }),
    };
  },
};

// moto (behind the proxy that enforces CopyObject's destination conditions), started on first use; a bucket per test.
let testS3: (TestS3 & { stop(): Promise<void> }) | undefined;
const motoBinary = motoBinaryOrSkip();

/** A file sink on s3:// as the suite sees it: the target's rows read from the downloaded object. */
function s3UnderTest(
  name: string,
  key: string,
  makeSink: (directory: string, s3: TestS3) => Sink,
  previous: () => Buffer | string,
  readRows: (bytes: Buffer, local: string) => Promise<string[][]>,
): SinkUnderTest {
  return {
    name,
    available: () => motoBinary !== null,
    async make() {
      testS3 ??= await startTestS3(motoBinary!);
      const s3 = testS3;
      const bucket = await s3.newBucket('contract');
      const local = await mkdtemp(path.join(tmpdir(), 'tilehouse-contract-s3-'));
      return {
        sink: makeSink(`s3://${bucket}/exports`, s3),
        context: baseContext,
        seedPrevious: () => putBytes(s3.client, bucket, `exports/${key}`, previous()),
        async read() {
          if (!(await keysOf(s3.client, bucket)).includes(`exports/${key}`)) return undefined;
          return readRows(await getBytes(s3.client, bucket, `exports/${key}`), local);
        },
        artefacts: async () => (await keysOf(s3.client, bucket)).filter((name) => name !== `exports/${key}`),
        close: () => rm(local, { recursive: true, force: true }),
      };
    },
  };
}

const s3Write = { limits: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 2 } };
const csvS3UnderTest = s3UnderTest(
  'csv on s3:// (moto)',
  'contract.csv',
  (directory, s3) => new CsvSink({ config: { type: 'csv', gzip: false }, directory, timezone: 'UTC', s3Client: s3.sinkClient, s3Write }),
  () => `id,title\r\n${PREVIOUS.map((row) => row.join(',')).join('\r\n')}\r\n`,
  async (bytes) => (parse(bytes.toString('utf8')) as string[][]).slice(1),
);
const parquetS3UnderTest = s3UnderTest(
  'parquet on s3:// (moto)',
  'contract.parquet',
  (directory, s3) =>
    new FileSink(parquetFormat, { config: { type: 'parquet', compression: 'zstd' }, directory, timezone: 'UTC', s3Client: s3.sinkClient, s3Write }),
  previousParquet,
  async (bytes, local) => {
    const copy = path.join(local, `read-${Date.now()}.parquet`);
    await writeFile(copy, bytes);
    return readParquetRows(copy);
  },
);

afterAll(async () => {
  await testS3?.stop();
  await emulator?.close();
  await running?.stop();
  await fakeGcs?.stop();
});

describe.each([csvUnderTest, bigqueryUnderTest, gcsUnderTest, parquetUnderTest, parquetGcsUnderTest, csvS3UnderTest, parquetS3UnderTest])(
  'the sink contract: $name',
  (underTest) => {
    let fixture: SinkFixture;
    beforeEach(async (context) => {
      if (!underTest.available()) context.skip(`${underTest.name} cannot run here: its server is not installed (npm run setup:tools)`);
      fixture = await underTest.make();
      await fixture.seedPrevious();
    });
    afterEach(async () => {
      await fixture?.close();
    });

    it('changes nothing readers see until publish, then shows exactly the new run', async () => {
      const writer = await fixture.sink.open(fixture.context('run-a'));
      await writer.writeRows(NEW_ROWS.slice(0, 2));
      await writer.writeRows(NEW_ROWS.slice(2));
      await writer.prepare();
      expect(await fixture.read()).toEqual(PREVIOUS);
      const result = await writer.publish();
      expect(await fixture.read()).toEqual(NEW_TEXT);
      expect(result).toMatchObject({ sink: fixture.sink.kind, target: writer.target, rows: NEW_ROWS.length });
      expect(await fixture.artefacts()).toEqual([]);
    });

    it('on abort after prepare keeps the previous run and leaves no artefact', async () => {
      const writer = await fixture.sink.open(fixture.context('run-b'));
      await writer.writeRows(NEW_ROWS);
      await writer.prepare();
      await writer.abort();
      expect(await fixture.read()).toEqual(PREVIOUS);
      expect(await fixture.artefacts()).toEqual([]);
    });

    it('on abort while rows are being written keeps the previous run and leaves no artefact', async () => {
      const writer = await fixture.sink.open(fixture.context('run-c'));
      await writer.writeRows(NEW_ROWS.slice(0, 1));
      await writer.abort();
      await writer.abort();
      expect(await fixture.read()).toEqual(PREVIOUS);
      expect(await fixture.artefacts()).toEqual([]);
    });

    it('refuses publish before prepare, and abort after a publish changes nothing', async () => {
      const writer = await fixture.sink.open(fixture.context('run-d'));
      await writer.writeRows(NEW_ROWS);
      // A writer used out of order is a bug in the pipeline, never data: internal_error, saying so.
      await expect(writer.publish()).rejects.toMatchObject({
        code: 'internal_error',
        // One voice for every kind: the job, the kind and its target, then what was misused.
        message: expect.stringMatching(/^job [\w-]+: (csv|parquet|bigquery) \S+: publish(ing)? called on a writer that is open$/),
      });
      expect(await fixture.read()).toEqual(PREVIOUS);
      await writer.prepare();
      await writer.publish();
      await writer.abort();
      expect(await fixture.read()).toEqual(NEW_TEXT);
    });

    it("never sweeps a live run's artefacts, this process's own included", async () => {
      const writer = await fixture.sink.open(fixture.context('run-e'));
      await writer.writeRows(NEW_ROWS);
      expect(await fixture.sink.sweep(logger)).toEqual([]);
      await writer.prepare();
      expect(await fixture.sink.sweep(logger)).toEqual([]);
      await writer.publish();
      expect(await fixture.read()).toEqual(NEW_TEXT);
    });

    it('orders its publish by rank: remote sinks before local ones (BigQuery, then Cloud Storage and S3, then files)', () => {
      expect(fixture.sink.publishRank).toBe(
        {
          csv: 10,
          'bigquery (emulator)': 0,
          'csv on gs:// (fake-gcs-server)': 5,
          parquet: 10,
          'parquet on gs:// (fake-gcs-server)': 5,
          'csv on s3:// (moto)': 5,
          'parquet on s3:// (moto)': 5,
        }[underTest.name],
      );
    });
  },
);
