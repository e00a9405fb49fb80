import fsPromises from 'node:fs/promises';
import { syncBuiltinESMExports } from 'node:module';
import type { JdbcCatalogOptions } from '../../../src/sinks/iceberg/jdbc-catalog.js';
import type { RestCatalogOptions } from '../../../src/sinks/iceberg/rest-catalog.js';

/**
 * A child process that runs one `writeIcebergRun` and stops dead at a chosen moment, printing
 * `paused` so the test (killed-writer.ts) can SIGKILL it there: `data-file` (the data file written
 * and fsynced, the manifest not begun), `manifest-list` (every file written, the commit not sent),
 * `commit-sent` (the commit started and not awaited: the kill races it, so it may or may not land),
`committed` (the commit landed, its cleanup not run). Argument: one JSON request.
 */
export interface KilledWriterRequest {
  catalog: { kind: 'rest'; options: RestCatalogOptions } | { kind: 'jdbc'; options: JdbcCatalogOptions };
  table: { namespace: string; name: string };
  runId: string;
  first: number;
  count: number;
  pause: 'data-file' | 'manifest-list' | 'commit-sent' | 'committed';
  /** A table in a bucket: the store's endpoint (S3, its credentials from the AWS chain) or fake-gcs-server's origin. */
  stores?: { s3Endpoint: string } | { gcsOrigin: string };
}

const request = JSON.parse(process.argv[2]!) as KilledWriterRequest;
const hang = (): Promise<never> => {
  process.stdout.write('paused\n');
  return new Promise<never>(() => {});
};

if (request.pause === 'data-file') {
  // The writer opens the manifest right after the data file is fsynced and linked into place
  // (a table's local files are written under a temp name beside them: `.<name>.tilehouse-….tmp`).
  const open = fsPromises.open;
  fsPromises.open = (async (...args: Parameters<typeof open>) => {
    if (String(args[0]).includes('-m0.avro')) await hang();
    return open(...args);
  }) as typeof open;
  syncBuiltinESMExports();
}

const { writeIcebergRun } = await import('../../../src/sinks/iceberg/table-writer.js');
const { COLUMNS, rowsOf } = await import('./iceberg-test-rows.js');
const catalog =
  request.catalog.kind === 'rest'
    ? await (await import('../../../src/sinks/iceberg/rest-catalog.js')).openRestCatalog(request.catalog.options)
    : await (await import('../../../src/sinks/iceberg/jdbc-catalog.js')).openJdbcCatalog(request.catalog.options);
const { withTableFileStores } = await import('../../../src/sinks/iceberg/table-files.js');
const stores =
  request.stores === undefined
    ? {}
    : 's3Endpoint' in request.stores
      ? { s3Client: await (await import('../../../src/sinks/stores/s3/s3-client.js')).createS3Client({ endpoint: request.stores.s3Endpoint }) }
      : {
          storageClient: await (await import('../../../src/sinks/stores/gcs/storage-client.js')).createStorageClient({
            STORAGE_EMULATOR_HOST: request.stores.gcsOrigin,
          }),
        };
await withTableFileStores(stores, () =>
  writeIcebergRun({
    catalog: {
      description: catalog.description,
      loadTable: (table) => catalog.loadTable(table),
      createTable: (table, schema, options) => catalog.createTable(table, schema, options),
      namespaceExists: (namespace) => catalog.namespaceExists(namespace),
      commitSnapshot: async (table, base, snapshot, housekeeping) => {
        if (request.pause === 'manifest-list') await hang();
        if (request.pause === 'commit-sent') {
          void catalog.commitSnapshot(table, base, snapshot, housekeeping).catch(() => {});
          await hang();
        }
        const committed = await catalog.commitSnapshot(table, base, snapshot, housekeeping);
        if (request.pause === 'committed') await hang();
        return committed;
      },
      close: () => catalog.close(),
    },
    table: request.table,
    columns: COLUMNS,
    rows: [rowsOf(request.first, request.count)],
    mode: 'replace',
    runId: request.runId,
    housekeeping: { keepSnapshots: 1, maxSnapshotAgeDays: 0 },
  }),
);
process.stdout.write('finished\n');
await catalog.close();
