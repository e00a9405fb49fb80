// Housekeeping of tables whose location is a bucket (moto behind the S3 proxy; fake-gcs-server behind
// the fault proxy), through the JDBC catalog on the suite's PostgreSQL (so every file of the table,
// its metadata JSON included, is in the bucket): a writer killed after its data file, manifest and
// manifest list (and, on S3, an unfinished multipart upload such a writer leaves) is tidied by the
// next run whose clock is past `orphanMinAgeHours`, and by no run before; a younger unreferenced
// file and every committed snapshot's files stay; pyiceberg (and DuckDB on s3://, through httpfs)
// read the table exactly before and after. The file ages are the store's own (each object's time
// on its server); only the run's clock for them is injected (`filesNow`), never a sleep.
import { randomUUID } from 'node:crypto';
import { CreateMultipartUploadCommand, ListMultipartUploadsCommand, ListObjectsV2Command, PutObjectCommand, UploadPartCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IcebergCatalog, TableIdentifier } from '../../../src/sinks/iceberg/catalog.js';
import { DEFAULT_HOUSEKEEPING } from '../../../src/sinks/iceberg/expire-snapshots.js';
import { openJdbcCatalog } from '../../../src/sinks/iceberg/jdbc-catalog.js';
import { referencesOf } from '../../../src/sinks/iceberg/orphan-files.js';
import { abortUnfinishedUploads, listLocation, withTableFileStores } from '../../../src/sinks/iceberg/table-files.js';
import { type IcebergRunResult, writeIcebergRun } from '../../../src/sinks/iceberg/table-writer.js';
import type { StoreOptions } from '../../../src/sinks/stores/registry.js';
import { describeWithFakeGcs, fakeGcsClient } from '../../support/fake-gcs-server.js';
import { type GcsFaultProxy, startGcsFaultProxy } from '../../support/gcs-fault-proxy.js';
import { icebergPythonOrSkip, type PyicebergTable, readIceberg } from '../../support/iceberg-readers.js';
import { postgresBlocker, postgresOrSkip, usePostgresDatabase } from '../../support/postgres.js';
import { describeWithS3, keysOf, TEST_AWS_ENV } from '../../support/s3-server.js';
import { describeUnless, missing } from '../../support/skip.js';
import { asText, COLUMNS, readBoth, rowsOf, sortedLines } from './iceberg-test-rows.js';
import { killWriterAt } from './killed-writer.js';
import type { KilledWriterRequest } from './killed-writer-child.js';

const server = postgresOrSkip();
const python = icebergPythonOrSkip();
const READS_TIMEOUT_MS = 300_000;
const HOUR_MS = 3_600_000;
const CUTOFF_MS = DEFAULT_HOUSEKEEPING.orphanMinAgeHours * HOUR_MS;
// Small pages, so every listing of a run spans several (the services' default is 1000).
const PAGE = 2;

/** What the scenarios ask of one bucket store and its test server. */
interface BucketUnderTest {
  scheme: 's3://' | 'gs://';
  newBucket(): Promise<string>;
  /** What the runs are given (a client through the proxy, listings of `PAGE` entries). */
  stores(): StoreOptions;
  childStores(): NonNullable<KilledWriterRequest['stores']>;
  /** Every object of the bucket and its time on the server, read straight from the server. */
  objects(bucket: string): Promise<{ url: string; modifiedMs: number }[]>;
  put(bucket: string, name: string, body: string): Promise<void>;
  /** The listing requests of `prefix` the proxy passed on so far: all, and those asking for a page after the first. */
  listRequests(bucket: string, prefix: string): { all: number; later: number };
  pyCatalog(bucket: string): Record<string, string>;
  duckdb?(): { endpoint: string; region: string; keyId: string; secret: string };
  /** S3: an unfinished multipart upload begun now (as a writer killed mid-upload leaves), its URL and when the store says it began. */
  unfinishedUpload?(bucket: string, key: string): Promise<{ url: string; initiatedMs: number }>;
  /** Makes the store refuse (403) the next listing of the bucket's objects. */
  refuseListing(bucket: string): void;
  /** S3: the keys of the bucket's unfinished multipart uploads. */
  uploads?(bucket: string): Promise<string[]>;
}

describeUnless(postgresBlocker(server) ?? missing('the Iceberg readers', python))('Iceberg housekeeping of tables in a bucket', () => {
  const database = usePostgresDatabase(server!);
  // One catalog per store: the scenarios' tables have the same names.
  const catalogNameOf = (warehouse: string) => `tilehouse_orphans_${warehouse.slice(0, 2)}`;
  const jdbcOptions = (warehouse: string) => {
    const { host, port, user, password } = server!;
    return { catalogName: catalogNameOf(warehouse), warehouse, connection: { host, port, user, password, database: database.name } };
  };

  function scenarios(store: () => BucketUnderTest): void {
    const reader = (bucket: string, table: string): PyicebergTable => {
      const { host, port, user, password } = server!;
      return {
        catalog: {
          type: 'sql',
          uri: `postgresql+psycopg2://${encodeURIComponent(user)}:${encodeURIComponent(password)}@${host}:${port}/${database.name}`,
          warehouse: `${store().scheme}${bucket}/warehouse`,
          ...store().pyCatalog(bucket),
        },
        catalogName: catalogNameOf(store().scheme),
        table,
      };
    };
    const readRows = async (bucket: string, table: string, expected: ReturnType<typeof rowsOf>) => {
      const want = sortedLines(expected.map(asText));
      const duckdb = store().duckdb;
      if (duckdb) {
        const both = await readBoth(python!, reader(bucket, table), duckdb());
        expect(sortedLines(both.pyiceberg.rows)).toEqual(want);
        expect(sortedLines(both.duckdb.rows)).toEqual(want);
      } else {
        // DuckDB reaches Cloud Storage only through its S3-compatible XML API, which fake-gcs-server does not serve.
        expect(sortedLines((await readIceberg(python!, 'pyiceberg-scan', reader(bucket, table))).rows)).toEqual(want);
      }
    };
    /** The bucket's objects that the table's committed metadata does not reference. */
    const unreferenced = async (catalog: IcebergCatalog, table: TableIdentifier, bucket: string) => {
      const { loaded, files } = await withTableFileStores(store().stores(), async () => {
        const current = (await catalog.loadTable(table))!;
        return { loaded: current, files: (await referencesOf(current)).files };
      });
      const objects = await store().objects(bucket);
      return {
        loaded,
        referenced: [...files].sort(),
        objects,
        left: objects.filter((object) => !files.has(object.url)),
      };
    };

    it(
      'a killed writer’s data file, manifest and manifest list (and an unfinished upload) go with the next run past orphanMinAgeHours, not before; a younger file and every committed snapshot’s files stay; the readers read the same table before and after',
      async () => {
        const bucket = await store().newBucket();
        const warehouse = `${store().scheme}${bucket}/warehouse`;
        const catalog = await openJdbcCatalog(jdbcOptions(warehouse));
        const table = { namespace: 'orphans', name: 'killed' };
        const run = (runId: string, first: number, filesNow: number): Promise<IcebergRunResult> =>
          withTableFileStores(store().stores(), () =>
            writeIcebergRun({ catalog, table, columns: COLUMNS, rows: [rowsOf(first, 3)], mode: 'replace', runId, filesNow: () => filesNow }),
          );
        try {
          const startedAt = Date.now();
          const before = await run('before', 0, startedAt);
          expect(before.committed).toBe(true);
          const location = `${warehouse}/orphans/killed`;

          await killWriterAt({
            catalog: { kind: 'jdbc', options: jdbcOptions(warehouse) },
            table,
            runId: 'killed',
            first: 40,
            count: 6,
            pause: 'manifest-list',
            stores: store().childStores(),
          });
          const upload = await store().unfinishedUpload?.(bucket, `warehouse/orphans/killed/data/killed-large-${randomUUID()}.parquet`);
          const killed = (await unreferenced(catalog, table, bucket)).left;
          // What the killed writer left: its data file, its manifest and its manifest list.
          expect(killed.map((object) => object.url.slice(location.length)).sort()).toEqual([
            expect.stringMatching(/^\/data\/killed-.*\.parquet$/),
            expect.stringMatching(/^\/metadata\/.*-m0\.avro$/),
            expect.stringMatching(/^\/metadata\/snap-.*\.avro$/),
          ]);
          await readRows(bucket, 'orphans.killed', rowsOf(0, 3));

          // Within the safety age the killed writer's files may be in flight: the next run keeps them.
          const within = await run('within', 10, startedAt + HOUR_MS);
          expect(within.housekeeping).toEqual({ expiredSnapshots: 0, deletedFiles: [], abortedUploads: [], failures: [] });
          expect((await unreferenced(catalog, table, bucket)).left.map((object) => object.url)).toEqual(killed.map((object) => object.url));
          if (upload) expect(await store().uploads!(bucket)).toEqual([upload.url.slice(`s3://${bucket}/`.length)]);
          await readRows(bucket, 'orphans.killed', rowsOf(10, 3));

          // The cutoff falls on the newest of the killed writer's leftovers, by the store's clock; a
          // file another writer has in flight is younger (written once the server's clock is past it).
          const cutoff = Math.max(...killed.map((object) => object.modifiedMs), upload?.initiatedMs ?? 0);
          const inFlight = `warehouse/orphans/killed/data/in-flight-${randomUUID()}.parquet`;
          for (let tries = 0; ; tries++) {
            expect(tries).toBeLessThan(100_000);
            await store().put(bucket, inFlight, 'another writer’s file, not yet committed');
            const written = (await store().objects(bucket)).find((object) => object.url.endsWith(inFlight))!;
            if (written.modifiedMs > cutoff) break;
          }
          const listedBefore = store().listRequests(bucket, 'warehouse/orphans/killed/data/');

          const later = await run('later', 20, cutoff + CUTOFF_MS);
          expect(later.committed).toBe(true);
          expect(later.housekeeping?.failures).toEqual([]);
          expect(later.housekeeping?.expiredSnapshots).toBe(0);
          expect([...later.housekeeping!.deletedFiles].sort()).toEqual(killed.map((object) => object.url).sort());
          expect(later.housekeeping?.abortedUploads).toEqual(upload ? [upload.url] : []);
          if (upload) expect(await store().uploads!(bucket)).toEqual([]);
          const after = await unreferenced(catalog, table, bucket);
          expect(after.left.map((object) => object.url)).toEqual([`${store().scheme}${bucket}/${inFlight}`]);
          // Every file of every kept snapshot is still there: `before`'s, `within`'s and `later`'s.
          expect(after.loaded.metadata.snapshots).toHaveLength(3);
          const present = new Set(after.objects.map((object) => object.url));
          expect(after.referenced.filter((url) => !present.has(url))).toEqual([]);
          // The run listed the table's folders page by page.
          const listed = store().listRequests(bucket, 'warehouse/orphans/killed/data/');
          expect(listed.later - listedBefore.later).toBeGreaterThan(0);

          await readRows(bucket, 'orphans.killed', rowsOf(20, 3));
          const history = await readIceberg(python!, 'pyiceberg-table', reader(bucket, 'orphans.killed'));
          const first = history.snapshots.find((snapshot) => snapshot.summary['tilehouse.run-id'] === 'before')!;
          const travelled = await readIceberg(python!, 'pyiceberg-scan', { ...reader(bucket, 'orphans.killed'), snapshotId: first.id });
          expect(sortedLines(travelled.rows)).toEqual(sortedLines(rowsOf(0, 3).map(asText)));
        } finally {
          await catalog.close();
        }
      },
      READS_TIMEOUT_MS,
    );

    it(
      'a listing the store refuses is a line of the run’s housekeeping failures, never a failed run; the next run lists again and tidies',
      async () => {
        const bucket = await store().newBucket();
        const warehouse = `${store().scheme}${bucket}/warehouse`;
        const catalog = await openJdbcCatalog(jdbcOptions(warehouse));
        const table = { namespace: 'orphans', name: 'refused' };
        const run = (runId: string, first: number, filesNow: number): Promise<IcebergRunResult> =>
          withTableFileStores(store().stores(), () =>
            writeIcebergRun({ catalog, table, columns: COLUMNS, rows: [rowsOf(first, 3)], mode: 'replace', runId, filesNow: () => filesNow }),
          );
        try {
          await run('one', 0, Date.now());
          const orphan = `warehouse/orphans/refused/data/left-behind-${randomUUID()}.parquet`;
          await store().put(bucket, orphan, 'left by a run that failed');
          // Every object so far is older than the cutoff of this clock.
          const past = Date.now() + CUTOFF_MS + HOUR_MS;
          store().refuseListing(bucket);
          const two = await run('two', 10, past);
          expect(two.committed).toBe(true);
          expect(two.housekeeping?.deletedFiles).toEqual([]);
          expect(two.housekeeping?.failures).toEqual([expect.stringMatching(/^orphan files were not looked for: .*(403|denied|not allowed)/i)]);
          expect((await unreferenced(catalog, table, bucket)).left.map((object) => object.url)).toEqual([`${store().scheme}${bucket}/${orphan}`]);
          await readRows(bucket, 'orphans.refused', rowsOf(10, 3));

          const three = await run('three', 20, past);
          expect(three.housekeeping?.failures).toEqual([]);
          expect(three.housekeeping?.deletedFiles).toEqual([`${store().scheme}${bucket}/${orphan}`]);
          expect((await unreferenced(catalog, table, bucket)).left).toEqual([]);
          await readRows(bucket, 'orphans.refused', rowsOf(20, 3));
        } finally {
          await catalog.close();
        }
      },
      READS_TIMEOUT_MS,
    );

    it('a table folder of more objects than one page is listed whole, page by page, and nothing beside it', async () => {
      const bucket = await store().newBucket();
      const names = Array.from({ length: 2 * PAGE + 1 }, (_, index) => `t/data/file-${index}.parquet`);
      for (const name of [...names, 't/data-other/not-mine.parquet', 't/metadata/v1.metadata.json']) await store().put(bucket, name, 'x');
      const before = store().listRequests(bucket, 't/data/');
      const listed = await listLocation(`${store().scheme}${bucket}/t/data`, store().stores());
      expect(listed.map((file) => file.location).sort()).toEqual(names.map((name) => `${store().scheme}${bucket}/${name}`).sort());
      const objects = await store().objects(bucket);
      for (const file of listed) expect(file.modifiedMs).toBe(objects.find((object) => object.url === file.location)!.modifiedMs);
      const after = store().listRequests(bucket, 't/data/');
      expect(after.all - before.all).toBe(3);
      expect(after.later - before.later).toBe(2);
      expect(await listLocation(`${store().scheme}${bucket}/t/none`, store().stores())).toEqual([]);
    });
  }

  describeWithS3('s3:// tables', (s3) => {
    const store: BucketUnderTest = {
      scheme: 's3://',
      newBucket: () => s3.newBucket('orphans'),
      stores: () => ({ s3Client: s3.sinkClient, s3Write: { listPageSize: PAGE } }),
      childStores: () => ({ s3Endpoint: s3.endpoint }),
      async objects(bucket) {
        const found: { url: string; modifiedMs: number }[] = [];
        let token: string | undefined;
        do {
          const page = await s3.client.send(new ListObjectsV2Command({ Bucket: bucket, ...(token ? { ContinuationToken: token } : {}) }));
          for (const object of page.Contents ?? []) found.push({ url: `s3://${bucket}/${object.Key!}`, modifiedMs: object.LastModified!.getTime() });
          token = page.IsTruncated ? page.NextContinuationToken : undefined;
        } while (token);
        return found.sort((a, b) => a.url.localeCompare(b.url));
      },
      async put(bucket, name, body) {
        await s3.client.send(new PutObjectCommand({ Bucket: bucket, Key: name, Body: body }));
      },
      listRequests(bucket, prefix) {
        const lines = s3.proxy.seen.filter((line) => {
          if (!line.startsWith(`list GET /${bucket}/?`)) return false;
          const query = new URL(line.split(' ')[2]!, 'http://proxy').searchParams;
          return query.get('list-type') === '2' && query.get('prefix') === prefix;
        });
        return { all: lines.length, later: lines.filter((line) => line.includes('continuation-token=')).length };
      },
      pyCatalog: () => ({
        's3.endpoint': s3.serverOrigin,
        's3.access-key-id': TEST_AWS_ENV.AWS_ACCESS_KEY_ID,
        's3.secret-access-key': TEST_AWS_ENV.AWS_SECRET_ACCESS_KEY,
        's3.region': TEST_AWS_ENV.AWS_REGION,
      }),
      duckdb: () => ({
        endpoint: s3.serverOrigin,
        region: TEST_AWS_ENV.AWS_REGION,
        keyId: TEST_AWS_ENV.AWS_ACCESS_KEY_ID,
        secret: TEST_AWS_ENV.AWS_SECRET_ACCESS_KEY,
      }),
      async unfinishedUpload(bucket, key) {
        // Through the proxy, which tells when it began (moto answers a constant date).
        const { UploadId } = await s3.sinkClient.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }));
        await s3.sinkClient.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId, PartNumber: 1, Body: Buffer.alloc(1024, 1) }));
        const listed = await s3.sinkClient.send(new ListMultipartUploadsCommand({ Bucket: bucket }));
        const initiated = listed.Uploads?.find((entry) => entry.UploadId === UploadId)?.Initiated;
        return { url: `s3://${bucket}/${key}`, initiatedMs: initiated!.getTime() };
      },
      refuseListing(bucket) {
        s3.proxy.fail({ on: 'list', fault: { kind: 'status', status: 403, code: 'AccessDenied' }, urlContains: `/${bucket}/?list-type=2` });
      },
      async uploads(bucket) {
        return (await keysOf(s3.client, bucket)).filter((key) => key.endsWith(' (upload)')).map((key) => key.slice(0, -' (upload)'.length));
      },
    };
    scenarios(() => store);
  });

  describeWithS3('s3:// unfinished uploads', (s3) => {
    it('more unfinished multipart uploads than one page are all looked at, and only those begun by the cutoff are aborted', async () => {
      const bucket = await s3.newBucket('uploads');
      const keys = Array.from({ length: 2 * PAGE + 1 }, (_, index) => `t/data/part-${index}.parquet`);
      for (const key of [...keys, 't/data-other/not-mine.parquet']) await s3.sinkClient.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }));
      const stores = { s3Client: s3.sinkClient, s3Write: { listPageSize: PAGE } };
      const pages = () => s3.proxy.seen.filter((line) => line.startsWith(`list GET /${bucket}/?`) && line.includes('uploads')).length;
      // All began after this cutoff: none is taken.
      expect(await abortUnfinishedUploads(`s3://${bucket}/t`, Date.now() - HOUR_MS, stores)).toEqual([]);
      expect(pages()).toBe(3);
      const aborted = await abortUnfinishedUploads(`s3://${bucket}/t/data`, Date.now() + HOUR_MS, stores);
      expect([...aborted].sort()).toEqual(keys.map((key) => `s3://${bucket}/${key}`).sort());
      expect(pages()).toBe(6);
      expect(await keysOf(s3.client, bucket)).toEqual(['t/data-other/not-mine.parquet (upload)']);
    });
  });

  describeWithFakeGcs('gs:// tables', (gcs) => {
    let faults: GcsFaultProxy;
    let stores: StoreOptions;
    beforeAll(async () => {
      faults = await startGcsFaultProxy(gcs.origin);
      stores = { storageClient: await fakeGcsClient(faults.origin), gcsWrite: { listPageSize: PAGE } };
    });
    afterAll(async () => {
      await faults?.close();
    });
    const store: BucketUnderTest = {
      scheme: 'gs://',
      newBucket: () => gcs.newBucket('orphans'),
      stores: () => stores,
      childStores: () => ({ gcsOrigin: gcs.origin }),
      async objects(bucket) {
        const [files] = await gcs.storage.bucket(bucket).getFiles();
        return files
          .map((file) => ({ url: `gs://${bucket}/${file.name}`, modifiedMs: Date.parse(String(file.metadata.updated)) }))
          .sort((a, b) => a.url.localeCompare(b.url));
      },
      async put(bucket, name, body) {
        await gcs.storage.bucket(bucket).file(name).save(body, { resumable: false });
      },
      listRequests(bucket, prefix) {
        const lines = faults.seen.filter(
          (line) =>
            line.startsWith(`other GET /storage/v1/b/${bucket}/o?`) && new URL(line.split(' ')[2]!, 'http://proxy').searchParams.get('prefix') === prefix,
        );
        return { all: lines.length, later: lines.filter((line) => line.includes('pageToken=')).length };
      },
      refuseListing(bucket) {
        faults.fail({ on: 'other', fault: { kind: 'status', status: 403 }, urlContains: `/storage/v1/b/${bucket}/o?` });
      },
      pyCatalog: () => ({
        'gcs.service.host': gcs.origin,
        'gcs.oauth2.token': 'fake-gcs-takes-any-token',
        'gcs.oauth2.token-expires-at': String(Date.now() + 3_600_000),
      }),
    };
    describe('through the fault proxy', () => scenarios(() => store));
  });
});
