// The iceberg sink's two phases on the JDBC catalog (the suite's PostgreSQL): nothing of a run is in
// the catalog before publish (a first run creates its table only at the commit), an aborted run's
// files are gone, and a commit whose answer is lost while the table cannot be read either is
// publish_outcome_unknown with its files kept: the re-run of its run id commits nothing more.
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { icebergEnvironmentSchema, type IcebergSinkConfig } from '../../../src/config/iceberg-sink-schema.js';
import { CommitOutcomeUnknown, type IcebergCatalog } from '../../../src/sinks/iceberg/catalog.js';
import { IcebergSink } from '../../../src/sinks/iceberg/iceberg-sink.js';
import { openJdbcCatalog } from '../../../src/sinks/iceberg/jdbc-catalog.js';
import { icebergPythonOrSkip, readIceberg } from '../../support/iceberg-readers.js';
import { postgresBlocker, postgresOrSkip, usePostgresDatabase } from '../../support/postgres.js';
import { column, prepareSink, runContext } from '../../support/sink-run-context.js';
import { describeUnless, missing } from '../../support/skip.js';

const server = postgresOrSkip();
const python = icebergPythonOrSkip();
const COLUMNS = [column('id', 'INT64'), column('title', 'STRING'), column('day', 'DATE')];
const rows = (count: number, first = 0) =>
  Array.from({ length: count }, (_, offset) => [BigInt(first + offset), `row ${first + offset}`, `2026-07-0${1 + ((first + offset) % 3)}`]);

/** Every write mode's sink, each with its own tables: the phases are the same whichever overwrites what. */
const MODES: { mode: string; config: Omit<IcebergSinkConfig, 'type' | 'table'> }[] = [
  { mode: 'replace', config: { writeMode: 'replace' } },
  { mode: 'partition', config: { writeMode: 'partition', partitionBy: { column: 'day' } } },
  { mode: 'merge', config: { writeMode: 'merge', primaryKey: ['id'] } },
];

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
  const sinkWith = (config: (typeof MODES)[number]['config'], table: string, wrap: (catalog: IcebergCatalog) => IcebergCatalog = (catalog) => catalog) =>
    new IcebergSink({
      config: { type: 'iceberg', table, ...config },
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

  for (const { mode, config } of MODES) {
    it(`${mode}: a first run creates its table only at publish; an aborted one leaves no table and no file`, async () => {
      const first = `first_${mode}`;
      const sink = sinkWith(config, `phases.${first}`);
      const aborted = await prepareSink(sink, runContext({ columns: COLUMNS }), [rows(3)]);
      expect((await filesBelow(path.join(warehouse, 'phases', first))).length).toBeGreaterThan(0);
      expect(await database.query(`SELECT * FROM iceberg_tables WHERE table_name = '${first}'`)).toEqual([]);
      await aborted.abort();
      expect(await filesBelow(path.join(warehouse, 'phases', first))).toEqual([]);

      const writer = await prepareSink(sink, runContext({ columns: COLUMNS, runId: 'first-1' }), [rows(2), rows(3, 2)]);
      expect(await database.query(`SELECT * FROM iceberg_tables WHERE table_name = '${first}'`)).toEqual([]);
      expect(await writer.publish()).toMatchObject({ sink: 'iceberg', target: `phases.${first}`, rows: 5 });
      const scanned = await readIceberg(python!, 'pyiceberg-scan', reader(`phases.${first}`));
      expect(scanned.rows.map((row) => row.slice(0, 3).join('|')).sort()).toEqual([
        '0|row 0|2026-07-01',
        '1|row 1|2026-07-02',
        '2|row 2|2026-07-03',
        '3|row 3|2026-07-01',
        '4|row 4|2026-07-02',
      ]);
    }, 120_000);

    it(`${mode}: a lost commit answer with the table unreadable after it is publish_outcome_unknown, its files kept; the re-run commits nothing`, async () => {
      const lost = `phases.lost_${mode}`;
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
          throw new CommitOutcomeUnknown(lost, { cause: new Error('socket hang up') });
        },
        close: () => catalog.close(),
      });
      const writer = await prepareSink(sinkWith(config, lost, faulty), runContext({ columns: COLUMNS, runId: 'lost-1' }), [rows(4)]);
      const error = await writer.publish().catch((thrown: unknown) => thrown);
      expect(error).toMatchObject({ code: 'publish_outcome_unknown', targetKind: 'iceberg', publishOutcomeUnknown: true });
      expect((error as Error).message).toContain('Re-running with --run-id lost-1 is safe');
      await writer.abort();
      // The commit landed: its files are the table's and stay.
      const history = await readIceberg(python!, 'pyiceberg-table', reader(lost));
      expect(history.snapshots.map((snapshot) => snapshot.summary['tilehouse.run-id'])).toEqual(['lost-1']);
      expect((await readIceberg(python!, 'pyiceberg-scan', reader(lost))).rows).toHaveLength(4);

      lose = false;
      const again = await prepareSink(sinkWith(config, lost), runContext({ columns: COLUMNS, runId: 'lost-1' }), [rows(4)]);
      expect(await again.publish()).toMatchObject({ rows: 4, details: { adopted: true } });
      expect((await readIceberg(python!, 'pyiceberg-table', reader(lost))).snapshots).toHaveLength(1);
    }, 180_000);
  }
});
