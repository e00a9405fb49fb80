import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { IcebergCatalog } from '../../../src/sinks/iceberg/catalog.js';
import { openJdbcCatalog } from '../../../src/sinks/iceberg/jdbc-catalog.js';
import { withTableFileStores } from '../../../src/sinks/iceberg/local-files.js';
import { openRestCatalog } from '../../../src/sinks/iceberg/rest-catalog.js';
import { writeIcebergRun } from '../../../src/sinks/iceberg/table-writer.js';
import type { StoreOptions } from '../../../src/sinks/stores/registry.js';
import { icebergPythonOrSkip, readIceberg } from '../../support/iceberg-readers.js';
import { icebergRestLibOrSkip, type RunningIcebergRest, startIcebergRest } from '../../support/iceberg-rest-server.js';
import { postgresBlocker, postgresOrSkip, usePostgresDatabase } from '../../support/postgres.js';
import { describeWithS3, keysOf, TEST_AWS_ENV } from '../../support/s3-server.js';
import { describeUnless, missing } from '../../support/skip.js';
import { asText, COLUMNS, rowsOf, sortedLines } from './iceberg-test-rows.js';

const server = postgresOrSkip();
const python = icebergPythonOrSkip();
const lib = icebergRestLibOrSkip();

const READS_TIMEOUT_MS = 240_000;

/** Rows of incompressible text: ~16 MB of Parquet, so the data file is a multipart upload of several 5 MiB parts. */
const WIDE = [
  { name: 'key', type: 'STRING' },
  { name: 'text', type: 'STRING' },
] as const;
const WIDE_ROWS = 16_000;
function wideBatches(): string[][][] {
  const rows = Array.from({ length: WIDE_ROWS }, (_, index) => [
    `k${index}`,
    Array.from({ length: 12 }, (_, part) => createHash('sha512').update(`${index}-${part}`).digest('base64')).join(''),
  ]);
  return Array.from({ length: 8 }, (_, index) => rows.slice(index * 2_000, (index + 1) * 2_000));
}
const NAMES = COLUMNS.map((column) => column.name);

/**
 * Tables whose location is on s3:// (moto, behind the test proxy that fails chosen requests): the
 * table writer's files go through the stores' seam, and pyiceberg (pyarrow's S3 file system) and
 * DuckDB (httpfs) read the table back from the bucket, through the JDBC catalog on PostgreSQL and
 * the Apache Iceberg REST server. The REST server has no S3 file IO among its jars, so its tables
 * keep their metadata JSON on this machine (`write.metadata.path`) while the table's location,
 * data files, manifests and manifest lists are on S3.
 */
describeUnless(postgresBlocker(server) ?? missing('the Iceberg readers', python) ?? missing('the Iceberg REST catalog server', lib))(
  'Iceberg tables on s3://',
  () => {
    describeWithS3('writeIcebergRun into a table located in a bucket', (s3) => {
      const database = usePostgresDatabase(server!);
      const catalogName = 'tilehouse_s3';
      let rest: RunningIcebergRest | undefined;
      let local: string;
      let stores: StoreOptions;
      const s3Properties = () => ({
        's3.endpoint': s3.serverOrigin,
        's3.access-key-id': TEST_AWS_ENV.AWS_ACCESS_KEY_ID,
        's3.secret-access-key': TEST_AWS_ENV.AWS_SECRET_ACCESS_KEY,
        's3.region': TEST_AWS_ENV.AWS_REGION,
      });
      const duckdbS3 = () => ({
        endpoint: s3.serverOrigin,
        region: TEST_AWS_ENV.AWS_REGION,
        keyId: TEST_AWS_ENV.AWS_ACCESS_KEY_ID,
        secret: TEST_AWS_ENV.AWS_SECRET_ACCESS_KEY,
      });
      const jdbcPy = (bucket: string) => {
        const { host, port, user, password } = server!;
        return {
          type: 'sql',
          uri: `postgresql+psycopg2://${encodeURIComponent(user)}:${encodeURIComponent(password)}@${host}:${port}/${database.name}`,
          warehouse: `s3://${bucket}/warehouse`,
          ...s3Properties(),
        };
      };
      const openJdbc = (bucket: string) => {
        const { host, port, user, password } = server!;
        return openJdbcCatalog({ catalogName, warehouse: `s3://${bucket}/warehouse`, connection: { host, port, user, password, database: database.name } });
      };

      beforeAll(async () => {
        rest = await startIcebergRest(lib!);
        local = await mkdtemp(join(tmpdir(), 'tilehouse-iceberg-s3-'));
        // Fast retries: a fault test must not wait out S3's real backoff.
        stores = { s3Client: s3.sinkClient, s3Write: { limits: { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 5 }, requestTimeoutMs: 5_000 } };
      }, 180_000);
      afterAll(async () => {
        await rest?.stop();
        if (local) await rm(local, { recursive: true, force: true });
      });

      const expectRead = async (pyTable: { catalog: Record<string, string>; catalogName?: string; table: string }, expected: (string | null)[][]) => {
        const pyiceberg = await readIceberg(python!, 'pyiceberg-scan', pyTable);
        const { metadataLocation, location } = await readIceberg(python!, 'pyiceberg-table', pyTable);
        const duckdb = await readIceberg(python!, 'duckdb-scan', { metadata: metadataLocation, s3: duckdbS3() });
        expect(pyiceberg.columns).toEqual(NAMES);
        expect(sortedLines(pyiceberg.rows)).toEqual(sortedLines(expected));
        expect(duckdb.columns).toEqual(NAMES);
        expect(sortedLines(duckdb.rows)).toEqual(sortedLines(expected));
        return { metadataLocation, location };
      };

      it(
        'through the JDBC catalog: the metadata, manifests and data files are objects below the warehouse, read back by pyiceberg and DuckDB',
        async () => {
          const bucket = await s3.newBucket('iceberg-jdbc');
          const catalog = await openJdbc(bucket);
          try {
            const table = { namespace: 'tiles', name: 'on_s3' };
            const first = rowsOf(0, 30);
            const one = await withTableFileStores(stores, () =>
              writeIcebergRun({ catalog, table, columns: COLUMNS, rows: [first], mode: 'replace', runId: 'run-1' }),
            );
            expect(one).toMatchObject({ committed: true, rows: 30 });
            expect(one.metadataLocation).toMatch(new RegExp(`^s3://${bucket}/warehouse/tiles/on_s3/metadata/00001-.*\\.metadata\\.json$`));
            const read = await expectRead({ catalog: jdbcPy(bucket), catalogName, table: 'tiles.on_s3' }, first.map(asText));
            expect(read.location).toBe(`s3://${bucket}/warehouse/tiles/on_s3`);

            const second = rowsOf(100, 9);
            await withTableFileStores(stores, () => writeIcebergRun({ catalog, table, columns: COLUMNS, rows: [second], mode: 'replace', runId: 'run-2' }));
            await expectRead({ catalog: jdbcPy(bucket), catalogName, table: 'tiles.on_s3' }, second.map(asText));
            const keys = await keysOf(s3.client, bucket);
            expect(keys.filter((key) => key.endsWith('.parquet'))).toHaveLength(2);
            expect(keys.filter((key) => key.endsWith('.metadata.json'))).toHaveLength(3);
            expect(keys.every((key) => key.startsWith('warehouse/tiles/on_s3/'))).toBe(true);
          } finally {
            await catalog.close();
          }
        },
        READS_TIMEOUT_MS,
      );

      it(
        'a data file of several multipart parts is one object once complete, read back whole',
        async () => {
          const bucket = await s3.newBucket('iceberg-parts');
          const catalog = await openJdbc(bucket);
          try {
            const uploadsBefore = s3.proxy.seen.filter((line) => line.startsWith('complete-multipart')).length;
            await withTableFileStores(stores, () =>
              writeIcebergRun({ catalog, table: { namespace: 'tiles', name: 'large' }, columns: WIDE, rows: wideBatches(), mode: 'replace', runId: 'large-1' }),
            );
            const completed = s3.proxy.seen.filter((line) => line.startsWith('complete-multipart')).slice(uploadsBefore);
            expect(completed).toHaveLength(1);
            expect(completed[0]).toMatch(/\.parquet\?/);
            const pyiceberg = await readIceberg(python!, 'pyiceberg-scan', { catalog: jdbcPy(bucket), catalogName, table: 'tiles.large' });
            expect(pyiceberg.rows).toHaveLength(WIDE_ROWS);
            expect(sortedLines(pyiceberg.rows)).toEqual(
              sortedLines(
                wideBatches()
                  .flat()
                  .map((row) => row.map(String)),
              ),
            );
          } finally {
            await catalog.close();
          }
        },
        READS_TIMEOUT_MS,
      );

      it(
        'through the REST catalog: a table created at an s3:// location, appended twice, read back by pyiceberg and DuckDB',
        async () => {
          const bucket = await s3.newBucket('iceberg-rest');
          const catalog: IcebergCatalog = await openRestCatalog({
            uri: rest!.uri,
            location: `s3://${bucket}/tables`,
            tableProperties: { 'write.metadata.path': pathToFileURL(join(local, 'rest-metadata')).href },
          });
          const table = { namespace: 'tiles', name: 'appended' };
          const first = rowsOf(0, 12);
          const second = rowsOf(50, 5);
          await withTableFileStores(stores, () =>
            writeIcebergRun({ catalog, table, columns: COLUMNS, rows: [first], mode: 'append', runId: 'rest-1', extractedAtMs: 1_700_000_000_000 }),
          );
          await withTableFileStores(stores, () =>
            writeIcebergRun({ catalog, table, columns: COLUMNS, rows: [second], mode: 'append', runId: 'rest-2', extractedAtMs: 1_700_000_000_000 }),
          );
          const pyTable = { catalog: { type: 'rest', uri: rest!.uri, ...s3Properties() }, table: 'tiles.appended' };
          const pyiceberg = await readIceberg(python!, 'pyiceberg-scan', pyTable);
          const { metadataLocation, location } = await readIceberg(python!, 'pyiceberg-table', pyTable);
          expect(location).toBe(`s3://${bucket}/tables/tiles/appended`);
          const duckdb = await readIceberg(python!, 'duckdb-scan', { metadata: metadataLocation, s3: duckdbS3() });
          const expected = [
            ...first.map((row) => [...asText(row), 'rest-1', '1700000000000000']),
            ...second.map((row) => [...asText(row), 'rest-2', '1700000000000000']),
          ];
          expect(sortedLines(pyiceberg.rows)).toEqual(sortedLines(expected));
          expect(sortedLines(duckdb.rows)).toEqual(sortedLines(expected));
          const keys = await keysOf(s3.client, bucket);
          expect(keys.filter((key) => key.endsWith('.parquet'))).toHaveLength(2);
          expect(keys.filter((key) => key.endsWith('.avro'))).toHaveLength(4);
        },
        READS_TIMEOUT_MS,
      );

      it(
        'a PUT that fails fails the run: nothing committed, no object (nor multipart upload) left of it',
        async () => {
          const bucket = await s3.newBucket('iceberg-fault');
          const catalog = await openJdbc(bucket);
          try {
            const table = { namespace: 'tiles', name: 'faulted' };
            const kept = rowsOf(0, 6);
            await withTableFileStores(stores, () => writeIcebergRun({ catalog, table, columns: COLUMNS, rows: [kept], mode: 'replace', runId: 'kept' }));
            const before = await keysOf(s3.client, bucket);
            // The manifest's PutObject (the data file is the first PUT), failed on every try.
            s3.proxy.fail({ on: 'put', fault: { kind: 'status', status: 500, code: 'InternalError' }, urlContains: '-m0.avro', times: 2 });
            await expect(
              withTableFileStores(stores, () => writeIcebergRun({ catalog, table, columns: COLUMNS, rows: [rowsOf(10, 4)], mode: 'replace', runId: 'failed' })),
            ).rejects.toMatchObject({ code: 'write_failed', target: expect.stringContaining(`s3://${bucket}/warehouse/tiles/faulted/metadata/`) });
            expect(s3.proxy.pending).toBe(0);
            expect(await keysOf(s3.client, bucket)).toEqual(before);
            await expectRead({ catalog: jdbcPy(bucket), catalogName, table: 'tiles.faulted' }, kept.map(asText));

            // A multipart data file whose part fails: the upload is aborted, nothing is left.
            s3.proxy.fail({ on: 'upload-part', fault: { kind: 'status', status: 500, code: 'InternalError' }, nth: 2, times: 2 });
            const large = { namespace: 'tiles', name: 'faulted_large' };
            await withTableFileStores(stores, () =>
              writeIcebergRun({ catalog, table: large, columns: WIDE, rows: [[['kept', 'k']]], mode: 'replace', runId: 'kept' }),
            );
            const beforeLarge = await keysOf(s3.client, bucket);
            await expect(
              withTableFileStores(stores, () =>
                writeIcebergRun({ catalog, table: large, columns: WIDE, rows: wideBatches(), mode: 'replace', runId: 'failed-large' }),
              ),
            ).rejects.toMatchObject({ code: 'write_failed', target: expect.stringMatching(/\.parquet$/) });
            expect(s3.proxy.pending).toBe(0);
            expect(await keysOf(s3.client, bucket)).toEqual(beforeLarge);
          } finally {
            await catalog.close();
          }
        },
        READS_TIMEOUT_MS,
      );
    });
  },
);
