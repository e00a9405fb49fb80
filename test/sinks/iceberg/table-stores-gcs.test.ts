import { createHash } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openJdbcCatalog } from '../../../src/sinks/iceberg/jdbc-catalog.js';
import { withTableFileStores, writeNewFile } from '../../../src/sinks/iceberg/local-files.js';
import { writeIcebergRun } from '../../../src/sinks/iceberg/table-writer.js';
import type { StoreOptions } from '../../../src/sinks/stores/registry.js';
import { describeWithFakeGcs, fakeGcsClient } from '../../support/fake-gcs-server.js';
import { type GcsFaultProxy, startGcsFaultProxy } from '../../support/gcs-fault-proxy.js';
import { icebergPythonOrSkip, readIceberg } from '../../support/iceberg-readers.js';
import { postgresBlocker, postgresOrSkip, usePostgresDatabase } from '../../support/postgres.js';
import { describeUnless, missing } from '../../support/skip.js';
import { asText, COLUMNS, rowsOf, sortedLines } from './iceberg-test-rows.js';

const server = postgresOrSkip();
const python = icebergPythonOrSkip();
const READS_TIMEOUT_MS = 240_000;

/**
 * Tables whose location is on gs:// (fake-gcs-server, behind the fault proxy): the writer's files go
 * through the stores' seam, and pyiceberg reads the table back through pyarrow's own Cloud Storage
 * file system pointed at the fake server (`gcs.service.host`, a dummy token: the fake server takes
 * any). DuckDB is not asked: its httpfs reaches Cloud Storage only through the S3-compatible XML API
 * with HMAC keys, which fake-gcs-server does not serve.
 */
describeUnless(postgresBlocker(server) ?? missing('the Iceberg readers', python))('Iceberg tables on gs://', () => {
  describeWithFakeGcs('writeIcebergRun into a table located in a bucket through the JDBC catalog', (gcs) => {
    const database = usePostgresDatabase(server!);
    const catalogName = 'tilehouse_gcs';
    let faults: GcsFaultProxy;
    let stores: StoreOptions;
    beforeAll(async () => {
      faults = await startGcsFaultProxy(gcs.origin);
      stores = {
        storageClient: await fakeGcsClient(faults.origin),
        gcsWrite: { limits: { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 5 }, requestTimeoutMs: 5_000 },
      };
    });
    afterAll(async () => {
      await faults?.close();
    });
    const openJdbc = (bucket: string) => {
      const { host, port, user, password } = server!;
      return openJdbcCatalog({ catalogName, warehouse: `gs://${bucket}/warehouse`, connection: { host, port, user, password, database: database.name } });
    };
    const pyTable = (bucket: string, table: string) => {
      const { host, port, user, password } = server!;
      return {
        catalog: {
          type: 'sql',
          uri: `postgresql+psycopg2://${encodeURIComponent(user)}:${encodeURIComponent(password)}@${host}:${port}/${database.name}`,
          warehouse: `gs://${bucket}/warehouse`,
          'gcs.service.host': gcs.origin,
          'gcs.oauth2.token': 'fake-gcs-takes-any-token',
          'gcs.oauth2.token-expires-at': String(Date.now() + 3_600_000),
        },
        catalogName,
        table,
      };
    };
    const objectNames = async (bucket: string) => (await gcs.storage.bucket(bucket).getFiles())[0].map((file) => file.name).sort();

    it(
      'the metadata, manifests and data files are objects below the warehouse, read back by pyiceberg',
      async () => {
        const bucket = await gcs.newBucket('iceberg-jdbc');
        const catalog = await openJdbc(bucket);
        try {
          const table = { namespace: 'tiles', name: 'on_gcs' };
          const first = rowsOf(0, 20);
          const second = rowsOf(40, 6);
          await withTableFileStores(stores, () => writeIcebergRun({ catalog, table, columns: COLUMNS, rows: [first], mode: 'replace', runId: 'gcs-1' }));
          const two = await withTableFileStores(stores, () =>
            writeIcebergRun({ catalog, table, columns: COLUMNS, rows: [second], mode: 'replace', runId: 'gcs-2' }),
          );
          expect(two.metadataLocation).toMatch(new RegExp(`^gs://${bucket}/warehouse/tiles/on_gcs/metadata/00002-`));
          const read = await readIceberg(python!, 'pyiceberg-scan', pyTable(bucket, 'tiles.on_gcs'));
          expect(sortedLines(read.rows)).toEqual(sortedLines(second.map(asText)));
          const names = await objectNames(bucket);
          expect(names.filter((name) => name.endsWith('.parquet'))).toHaveLength(2);
          expect(names.filter((name) => name.endsWith('.metadata.json'))).toHaveLength(3);
          expect(names.every((name) => name.startsWith('warehouse/tiles/on_gcs/'))).toBe(true);
        } finally {
          await catalog.close();
        }
      },
      READS_TIMEOUT_MS,
    );

    it(
      'a data file of many 2 MiB chunks is streamed in one resumable upload and read back whole',
      async () => {
        const bucket = await gcs.newBucket('iceberg-chunks');
        const catalog = await openJdbc(bucket);
        try {
          const chunksBefore = faults.seen.filter((line) => line.startsWith('chunk ')).length;
          const rows = Array.from({ length: 12_000 }, (_, index) => [
            `k${index}`,
            Array.from({ length: 12 }, (_, part) => createHash('sha512').update(`${index}-${part}`).digest('base64')).join(''),
          ]);
          await withTableFileStores(stores, () =>
            writeIcebergRun({
              catalog,
              table: { namespace: 'tiles', name: 'large' },
              columns: [
                { name: 'key', type: 'STRING' },
                { name: 'text', type: 'STRING' },
              ],
              rows: [rows.slice(0, 6_000), rows.slice(6_000)],
              mode: 'replace',
              runId: 'large-1',
            }),
          );
          expect(faults.seen.filter((line) => line.startsWith('chunk ')).length - chunksBefore).toBeGreaterThan(2);
          const read = await readIceberg(python!, 'pyiceberg-scan', pyTable(bucket, 'tiles.large'));
          expect(sortedLines(read.rows)).toEqual(sortedLines(rows));
        } finally {
          await catalog.close();
        }
      },
      READS_TIMEOUT_MS,
    );

    it(
      'an upload refused after it landed (403 instead of the answer) fails the run: nothing committed, the object deleted again',
      async () => {
        const bucket = await gcs.newBucket('iceberg-fault');
        const catalog = await openJdbc(bucket);
        try {
          const table = { namespace: 'tiles', name: 'faulted' };
          const kept = rowsOf(0, 5);
          await withTableFileStores(stores, () => writeIcebergRun({ catalog, table, columns: COLUMNS, rows: [kept], mode: 'replace', runId: 'kept' }));
          const before = await objectNames(bucket);
          // The data file's upload (the run's first) is stored by the server; the writer hears 403.
          faults.fail({ on: 'finalize', fault: { kind: 'answer-instead', status: 403 }, nth: 1 });
          await expect(
            withTableFileStores(stores, () => writeIcebergRun({ catalog, table, columns: COLUMNS, rows: [rowsOf(10, 3)], mode: 'replace', runId: 'failed' })),
          ).rejects.toMatchObject({
            code: 'permission_denied',
            target: expect.stringMatching(new RegExp(`^gs://${bucket}/warehouse/tiles/faulted/data/failed-.*\\.parquet$`)),
          });
          expect(faults.pending).toBe(0);
          expect(await objectNames(bucket)).toEqual(before);
          const read = await readIceberg(python!, 'pyiceberg-scan', pyTable(bucket, 'tiles.faulted'));
          expect(sortedLines(read.rows)).toEqual(sortedLines(kept.map(asText)));
        } finally {
          await catalog.close();
        }
      },
      READS_TIMEOUT_MS,
    );

    it('writeNewFile: an upload that landed but was answered 403 is deleted again by the store itself', async () => {
      const bucket = await gcs.newBucket('iceberg-file');
      faults.fail({ on: 'finalize', fault: { kind: 'answer-instead', status: 403 }, nth: 1 });
      await expect(writeNewFile(`gs://${bucket}/t/data/one.parquet`, [Buffer.from('a whole file')], stores)).rejects.toMatchObject({
        code: 'permission_denied',
        target: `gs://${bucket}/t/data/one.parquet`,
      });
      expect(faults.pending).toBe(0);
      expect(await objectNames(bucket)).toEqual([]);
      expect(await writeNewFile(`gs://${bucket}/t/data/two.parquet`, [Buffer.from('a whole '), Buffer.from('file')], stores)).toBe(12);
      expect(await objectNames(bucket)).toEqual(['t/data/two.parquet']);
    });
  });
});
