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
}

const request = JSON.parse(process.argv[2]!) as KilledWriterRequest;
const hang = (): Promise<never> => {
  process.stdout.write('paused\n');
  return new Promise<never>(() => {});
};

if (request.pause === 'data-file') {
  // The writer opens the manifest right after the data file is fsynced and closed: the manifest's
  // temp file beside it (`.<name>-m0.avro.tilehouse-….tmp`, linked into place once whole) is opened first.
  const open = fsPromises.open;
  fsPromises.open = (async (...args: Parameters<typeof open>) => {
    if (/-m0\.avro(\.tilehouse-[^/]*\.tmp)?$/.test(String(args[0]))) await hang();
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
await writeIcebergRun({
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
});
process.stdout.write('finished\n');
await catalog.close();
