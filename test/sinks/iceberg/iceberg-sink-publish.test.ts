// The iceberg sink's two phases on the JDBC catalog (the suite's PostgreSQL): nothing of a run is in
// the catalog before publish (a first run creates its table only at the commit), an aborted run's
// files are gone, and a commit whose answer is lost while the table cannot be read either is
// publish_outcome_unknown with its files kept: the re-run of its run id commits nothing more.
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { icebergEnvironmentSchema } from '../../../src/config/iceberg-sink-schema.js';
import { CommitOutcomeUnknown, type IcebergCatalog } from '../../../src/sinks/iceberg/catalog.js';
import { IcebergSink } from '../../../src/sinks/iceberg/iceberg-sink.js';
import { openJdbcCatalog } from '../../../src/sinks/iceberg/jdbc-catalog.js';
import { icebergPythonOrSkip, readIceberg } from '../../support/iceberg-readers.js';
import { postgresBlocker, postgresOrSkip, usePostgresDatabase } from '../../support/postgres.js';
import { column, prepareSink, runContext } from '../../support/sink-run-context.js';
import { describeUnless, missing } from '../../support/skip.js';

const server = postgresOrSkip();
const python = icebergPythonOrSkip();
const COLUMNS = [column('id', 'INT64'), column('title', 'STRING')];
const rows = (count: number) => Array.from({ length: count }, (_, index) => [BigInt(index), `row ${index}`]);

async function filesBelow(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir, { recursive: true, withFileTypes: true })).filter((entry) => entry.isFile()).map((entry) => entry.name);
  } catch {
    return [];
  }
}

describeUnless(postgresBlocker(server) ?? missing('the Iceberg readers', python))("the iceberg sink's publish on the JDBC catalog", () => {
  const database = usePostgresDatabase(server!);
  let warehouse = '';
  beforeAll(async () => {
    warehouse = await mkdtemp(path.join(tmpdir(), 'tilehouse-iceberg-publish-'));
  });
  afterAll(() => rm(warehouse, { recursive: true, force: true }));

  const open = () => {
    const { host, port, user, password } = server!;
    return openJdbcCatalog({ catalogName: 'publish', warehouse, connection: { host, port, user, password, database: database.name } });
  };
  const sinkWith = (table: string, wrap: (catalog: IcebergCatalog) => IcebergCatalog = (catalog) => catalog) =>
    new IcebergSink({
      config: { type: 'iceberg', table, writeMode: 'replace' },
      settings: icebergEnvironmentSchema.parse({
        catalog: { type: 'jdbc', catalogName: 'publish', host: 'unused', database: 'unused', user: 'u', password: '${UNUSED}' },
        location: warehouse,
      }),
      environmentFile: 'env.yaml',
      guard: undefined,
      openCatalog: async () => wrap(await open()),
    });
  const reader = (table: string) => ({
    catalog: {
      type: 'sql',
      uri: `postgresql+psycopg2://${encodeURIComponent(server!.user)}:${encodeURIComponent(server!.password)}@${server!.host}:${server!.port}/${database.name}`,
    },
    catalogName: 'publish',
    table,
  });

  it('a first run creates its table only at publish; an aborted one leaves no table and no file', async () => {
    const sink = sinkWith('phases.first');
    const aborted = await prepareSink(sink, runContext({ columns: COLUMNS }), [rows(3)]);
    expect(await filesBelow(path.join(warehouse, 'phases', 'first'))).toHaveLength(2);
    expect(await database.query("SELECT * FROM iceberg_tables WHERE table_name = 'first'")).toEqual([]);
    await aborted.abort();
    expect(await filesBelow(path.join(warehouse, 'phases', 'first'))).toEqual([]);

    const writer = await prepareSink(sink, runContext({ columns: COLUMNS, runId: 'first-1' }), [rows(2), rows(3)]);
    expect(await database.query("SELECT * FROM iceberg_tables WHERE table_name = 'first'")).toEqual([]);
    expect(await writer.publish()).toMatchObject({ sink: 'iceberg', target: 'phases.first', rows: 5 });
    const scanned = await readIceberg(python!, 'pyiceberg-scan', reader('phases.first'));
    expect(scanned.rows.map((row) => row.join('|')).sort()).toEqual(['0|row 0', '0|row 0', '1|row 1', '1|row 1', '2|row 2']);
  }, 120_000);

  it('a lost commit answer with the table unreadable after it is publish_outcome_unknown, its files kept; the re-run commits nothing', async () => {
    let lose = true;
    const faulty = (catalog: IcebergCatalog): IcebergCatalog => ({
      description: catalog.description,
      namespaceExists: (namespace) => catalog.namespaceExists(namespace),
      loadTable: async (table) => {
        const loaded = await catalog.loadTable(table);
        // After the lost answer, the catalog cannot be read either.
        if (lose && loaded?.metadata.snapshots?.length) throw new Error('catalog unreachable');
        return loaded;
      },
      createTable: (table, schema, location) => catalog.createTable(table, schema, location),
      commitSnapshot: async (table, base, snapshot) => {
        await catalog.commitSnapshot(table, base, snapshot);
        throw new CommitOutcomeUnknown('phases.lost', { cause: new Error('socket hang up') });
      },
      close: () => catalog.close(),
    });
    const writer = await prepareSink(sinkWith('phases.lost', faulty), runContext({ columns: COLUMNS, runId: 'lost-1' }), [rows(4)]);
    const error = await writer.publish().catch((thrown: unknown) => thrown);
    expect(error).toMatchObject({ code: 'publish_outcome_unknown', targetKind: 'iceberg', publishOutcomeUnknown: true });
    expect((error as Error).message).toContain('Re-running with --run-id lost-1 is safe');
    await writer.abort();
    // The commit landed: its files are the table's and stay.
    const history = await readIceberg(python!, 'pyiceberg-table', reader('phases.lost'));
    expect(history.snapshots.map((snapshot) => snapshot.summary['tilehouse.run-id'])).toEqual(['lost-1']);
    expect((await readIceberg(python!, 'pyiceberg-scan', reader('phases.lost'))).rows).toHaveLength(4);

    lose = false;
    const again = await prepareSink(sinkWith('phases.lost'), runContext({ columns: COLUMNS, runId: 'lost-1' }), [rows(4)]);
    expect(await again.publish()).toMatchObject({ rows: 4, details: { adopted: true } });
    expect((await readIceberg(python!, 'pyiceberg-table', reader('phases.lost'))).snapshots).toHaveLength(1);
  }, 180_000);
});
