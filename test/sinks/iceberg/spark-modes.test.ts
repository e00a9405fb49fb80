// tilehouse run into Iceberg tables with writeMode partition and merge, beside a local CSV of the
// same run, through each catalog (Apache Iceberg's REST server; the JDBC catalog on the suite's
// PostgreSQL): Spark, pyiceberg and DuckDB each read back exactly the rows the CSVs say the table
// holds, with the same types, and Spark sees the day partitioning. One Spark session (one JVM)
// serves the whole file. Measured on the 2-core machine: at a load average of 21-27 the file took
// 218 s, its first test 95 s (Spark's first scans), the others 17-41 s; at a load of 2-4, 185 s.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { SANDBOX_TILE } from '../../../sandbox/index.js';
import { runCli, sandboxEnv, summaryOf, type Workspace, writeWorkspace } from '../../support/cli-harness.js';
import { icebergPythonOrSkip, type PyicebergTable, readIceberg } from '../../support/iceberg-readers.js';
import { icebergRestLibOrSkip, type RunningIcebergRest, startIcebergRest } from '../../support/iceberg-rest-server.js';
import { type IcebergSpark, icebergSparkOrSkip, startIcebergSpark } from '../../support/iceberg-spark.js';
import { postgresBlocker, postgresOrSkip, TEST_PASSWORD_VARIABLE, usePostgresDatabase } from '../../support/postgres.js';
import { sandboxAndRootForAll } from '../../support/sandbox-fixture.js';
import { describeUnless, missing } from '../../support/skip.js';
import { COLUMN_TYPES, csvAsReaderText, EXPECTED_COLUMNS } from './iceberg-run-job.js';
import { readBoth, sortedLines } from './iceberg-test-rows.js';
import { jdbcCatalogSettings, sqlCatalogTable } from '../../support/iceberg-jdbc-catalog.js';

const server = postgresOrSkip();
const python = icebergPythonOrSkip();
const lib = icebergRestLibOrSkip();
const spark = icebergSparkOrSkip();

// The REST server (12-22 s) and one Spark session (36 s at a load of 20, spark-interop's figures) start at once: several times that.
const START_TIMEOUT_MS = 360_000;
// Two tilehouse runs, three Python reader processes and a few Spark requests (a cold Spark scan can take a minute under load).
const TEST_TIMEOUT_MS = 600_000;

/** The types each reader holds the table's columns in: Number INT64, Amount NUMERIC, Score FLOAT64, Description STRING, Day DATE, Created TIMESTAMP (+ merge's lineage). */
const ICEBERG_TYPES = ['long', 'decimal(38, 9)', 'double', 'string', 'date', 'timestamptz'];
const SPARK_TYPES = ['bigint', 'decimal(38,9)', 'double', 'string', 'date', 'timestamp'];
const DUCKDB_TYPES = ['BIGINT', 'DECIMAL(38,9)', 'DOUBLE', 'VARCHAR', 'DATE', 'TIMESTAMP WITH TIME ZONE'];
const ARROW_TYPES = ['int64', 'decimal128(38, 9)', 'double', 'string', 'date32[day]', 'timestamp[us, tz=UTC]'];
const LINEAGE = {
  names: ['_run_id', '_extracted_at'],
  iceberg: ['string', 'timestamptz'],
  spark: ['string', 'timestamp'],
  duckdb: ['VARCHAR', 'TIMESTAMP WITH TIME ZONE'],
  arrow: ['string', 'timestamp[us, tz=UTC]'],
};

const DAY = EXPECTED_COLUMNS.indexOf('day');
const CREATED = EXPECTED_COLUMNS.indexOf('created');
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, index) => String(from + index));

/**
 * Every type the sink maps, for the incidents numbered `numbers`. The two nights compute Amount and
 * Score differently, so a row the second night rewrote differs from the first night's in its values
 * (fractions and negatives for the decimal, repeating binary fractions for the double), not only in
 * its lineage.
 */
function nightQuery(night: 1 | 2, numbers: string[]) {
  const [amount, score] = night === 1 ? ['[incident.number] / 8 - 5', '[incident.number] / 3'] : ['[incident.number] * 1000 + 0.25', '[incident.number] / 7'];
  return {
    items: [
      { header: 'Number', formula: '[incident.number]', dataType: 'number', order: 'asc', orderSequence: 0, filters: [{ operator: 'in', values: numbers }] },
      { header: 'Amount', formula: amount, dataType: 'number', filters: [] },
      { header: 'Score', formula: score, dataType: 'number', filters: [] },
      { header: 'Description', formula: '[incident.description]', dataType: 'text', filters: [] },
      { header: 'Day', formula: '[incident.created]', dataType: 'datetime', filters: [] },
      { header: 'Created', formula: '[incident.created]', dataType: 'datetime', filters: [] },
    ],
    options: { pageNumber: 0, itemsPerPage: 25, ignoreRepeatedRows: false },
  };
}

interface CatalogUnderTest {
  name: 'rest' | 'jdbc';
  /** `sinks.iceberg.catalog` of the workspace. */
  settings(): Record<string, unknown>;
  /** Variables the workspace's references name. */
  env(): Record<string, string>;
  /** How pyiceberg reaches the same tables. */
  reader(table: string): PyicebergTable;
  /** The Spark catalog's name (a JDBC catalog's catalog_name). */
  sparkName: string;
  /** Whether Spark's metadata tables load through this catalog (the REST test server refuses their names: see iceberg_spark.py). */
  metadataTables: boolean;
}

describeUnless(
  postgresBlocker(server) ??
    missing('the Iceberg readers', python) ??
    missing('the Iceberg REST catalog server', lib) ??
    missing('Spark with the Iceberg runtime', spark),
)('tilehouse run into Iceberg tables, writeMode partition and merge: Spark, pyiceberg and DuckDB read back the CSV rows (REST and JDBC catalogs)', () => {
  // 4000 incidents over 400 days: about ten a day, so 60 incidents span six or seven days.
  const fixture = sandboxAndRootForAll({ incidents: 4000, now: new Date('2026-07-05T12:00:00Z') });
  const database = usePostgresDatabase(server!);
  let session: IcebergSpark | undefined;
  let rest: RunningIcebergRest | undefined;
  let warehouse: string;

  const TOKEN_VARIABLE = 'TILEHOUSE_TEST_ICEBERG_TOKEN';
  const jdbcCatalogName = 'tilehouse_spark_modes';
  const catalogs: CatalogUnderTest[] = [
    {
      name: 'rest',
      settings: () => ({ type: 'rest', uri: rest!.uri, token: `\${${TOKEN_VARIABLE}}` }),
      env: () => ({ [TOKEN_VARIABLE]: 'tok-spark-modes-never-printed' }),
      reader: (table) => ({ catalog: { type: 'rest', uri: rest!.uri }, table }),
      sparkName: 'modes_rest',
      metadataTables: false,
    },
    {
      name: 'jdbc',
      settings: () => jdbcCatalogSettings(server!, database.name, jdbcCatalogName),
      env: () => ({ [TEST_PASSWORD_VARIABLE]: server!.password }),
      reader: (table) => sqlCatalogTable(server!, database.name, jdbcCatalogName, table),
      sparkName: jdbcCatalogName,
      metadataTables: true,
    },
  ];

  beforeAll(async () => {
    warehouse = await mkdtemp(path.join(tmpdir(), 'tilehouse-spark-modes-'));
    // One Spark session (one JVM start) reads every table of both catalogs; it starts beside the REST server.
    const [started, restServer] = await Promise.allSettled([startIcebergSpark(spark!), startIcebergRest(lib!)]);
    if (started.status === 'fulfilled') session = started.value;
    if (restServer.status === 'fulfilled') rest = restServer.value;
    if (started.status === 'rejected') throw started.reason;
    if (restServer.status === 'rejected') throw restServer.reason;
    // Not cached: Spark's catalog would keep a loaded table 30 s, and each test commits before it reads.
    await started.value.addCatalog('modes_rest', { type: 'rest', uri: restServer.value.uri, 'cache-enabled': 'false' });
    const { host, port, user, password } = server!;
    await started.value.addCatalog(jdbcCatalogName, {
      type: 'jdbc',
      uri: `jdbc:postgresql://${host}:${port}/${database.name}`,
      'jdbc.user': user,
      'jdbc.password': password,
      // The catalog tables tilehouse creates: the schema with iceberg_type (V1).
      'jdbc.schema-version': 'V1',
      'cache-enabled': 'false',
      warehouse: `file://${warehouse}`,
    });
  }, START_TIMEOUT_MS);

  afterAll(async () => {
    await session?.stop();
    await rest?.stop();
    await rm(warehouse, { recursive: true, force: true });
  });

  /** A workspace of one job (its yaml rewritten per night) whose sinks.iceberg is the catalog's. */
  async function workspace(catalog: CatalogUnderTest, name: string, job: (night: 1 | 2) => Record<string, unknown>) {
    const ws: Workspace = await writeWorkspace(path.join(fixture.root, `${catalog.name}-${name}`), fixture.sandbox, [job(1)], { concurrency: 1 });
    const environment = parse(await readFile(ws.configFile, 'utf8')) as { sinks: Record<string, unknown> };
    environment.sinks.iceberg = { catalog: catalog.settings(), location: path.join(warehouse, `${catalog.name}-${name}`) };
    await writeFile(ws.configFile, stringify(environment));
    const env = { ...sandboxEnv(fixture.sandbox), ...catalog.env() };
    for (const [variable, value] of Object.entries(catalog.env())) process.env[variable] = value;
    const jobName = job(1).name as string;
    /** Runs the night's job; its CSV as the readers give text back (with merge's lineage when asked). */
    const night = async (which: 1 | 2, lineage: boolean) => {
      await writeFile(path.join(ws.jobsDir, `${jobName}.yaml`), stringify(job(which)));
      const runId = `night-${which}`;
      const result = await runCli(['run', '--run-id', runId, '--json', '--config', ws.configFile, '--jobs', ws.jobsDir], { env });
      expect(result.exitCode, result.stderr).toBe(0);
      const summary = summaryOf(result.stdout, 'run');
      const csv = await readFile(path.join(ws.outDir, `${jobName}-${runId}.csv`), 'utf8');
      const extractedAtMicros = String(BigInt(Date.parse(summary.startedAt)) * 1000n);
      return csvAsReaderText(csv).map((row) => (lineage ? [...row, runId, extractedAtMicros] : row));
    };
    return { night };
  }

  /** Spark, pyiceberg and DuckDB each read exactly `expected` (any order), with the columns and types the sink maps. */
  async function expectAllRead(catalog: CatalogUnderTest, table: string, expected: (string | null)[][], lineage: boolean) {
    const extra = <T>(values: T[]) => (lineage ? values : []);
    const columns = [...EXPECTED_COLUMNS, ...extra(LINEAGE.names)];
    const bySpark = await session!.read(`${catalog.sparkName}.${table}`);
    const { pyiceberg, duckdb } = await readBoth(python!, catalog.reader(table));
    const described = await readIceberg(python!, 'pyiceberg-table', catalog.reader(table));
    expect({ spark: bySpark.columns, pyiceberg: pyiceberg.columns, duckdb: duckdb.columns }).toEqual({ spark: columns, pyiceberg: columns, duckdb: columns });
    expect({
      iceberg: described.fields.map((field) => field.type),
      spark: bySpark.types,
      pyarrow: pyiceberg.types,
      duckdb: duckdb.types,
    }).toEqual({
      iceberg: [...ICEBERG_TYPES, ...extra(LINEAGE.iceberg)],
      spark: [...SPARK_TYPES, ...extra(LINEAGE.spark)],
      pyarrow: [...ARROW_TYPES, ...extra(LINEAGE.arrow)],
      duckdb: [...DUCKDB_TYPES, ...extra(LINEAGE.duckdb)],
    });
    const lines = sortedLines(expected);
    expect(sortedLines(bySpark.rows), 'Spark reads the CSV rows').toEqual(lines);
    expect(bySpark.count, "Spark's COUNT(*) from the manifests").toBe(expected.length);
    expect(sortedLines(pyiceberg.rows), 'pyiceberg reads the CSV rows').toEqual(lines);
    expect(sortedLines(duckdb.rows), 'DuckDB reads the CSV rows').toEqual(lines);
    return described;
  }

  for (const catalog of catalogs) {
    describe(`through the ${catalog.name} catalog`, () => {
      it(
        'partition on a DATE and on a TIMESTAMP column: the second night replaces exactly the days its rows fall on and adds its new days; days only the first night had survive; Spark sees days(column)',
        async () => {
          // The same rows into two tables: one partitioned by Day (a date), one by Created (a timestamptz, its UTC day).
          const tables = [
            { table: `spark_${catalog.name}.by_day`, column: 'Day', field: 'day', dayOf: (row: (string | null)[]) => row[DAY]! },
            {
              table: `spark_${catalog.name}.by_created`,
              column: 'Created',
              field: 'created',
              dayOf: (row: (string | null)[]) => new Date(Number(BigInt(row[CREATED]!) / 1000n)).toISOString().slice(0, 10),
            },
          ];
          const { night } = await workspace(catalog, 'partition', (which) => ({
            name: `by_day_${catalog.name}`,
            tile: SANDBOX_TILE,
            // Incidents 1..60, then 41..100: the nights share the days of 41..60, and the first of those days also holds incidents below 41.
            query: nightQuery(which, which === 1 ? range(1, 60) : range(41, 100)),
            columns: COLUMN_TYPES,
            sinks: [
              { type: 'csv', path: '{name}-{runId}.csv' },
              ...tables.map(({ table, column }) => ({ type: 'iceberg', table, writeMode: 'partition', partitionBy: { column } })),
            ],
          }));

          const first = await night(1, false);
          expect(first).toHaveLength(60);
          const second = await night(2, false);
          expect(second).toHaveLength(60);
          for (const { table, field, dayOf } of tables) {
            const firstDays = new Set(first.map(dayOf));
            const covered = new Set(second.map(dayOf));
            const kept = first.filter((row) => !covered.has(dayOf(row)));
            // The scenario has every case: days only the first night had, first-night rows on a replaced day the second night did not export, days new with the second night.
            expect(kept.length).toBeGreaterThan(0);
            expect(first.filter((row) => covered.has(dayOf(row)) && Number(row[0]) < 41).length).toBeGreaterThan(0);
            expect([...covered].filter((day) => !firstDays.has(day)).length).toBeGreaterThan(0);
            const expected = [...kept, ...second];
            const described = await expectAllRead(catalog, table, expected, false);
            expect(described.partitionSpec.map((spec) => [spec.name, spec.transform])).toEqual([[`${field}_day`, 'day']]);

            // Spark's view of the partitioning: the spec, DESCRIBE's words, and the day of each file its scan plans.
            const perDay = new Map<string, number>();
            for (const row of expected) perDay.set(dayOf(row), (perDay.get(dayOf(row)) ?? 0) + 1);
            const wanted = [...perDay].map(([day, count]) => [day, String(count)]).sort();
            const seen = await session!.partitions(`${catalog.sparkName}.${table}`, { metadataTable: catalog.metadataTables });
            expect(seen.spec).toEqual([{ name: `${field}_day`, transform: 'day', source: field, fieldId: 1000 }]);
            expect(seen.partitioning).toEqual([`days(${field})`]);
            // One file per day: the first night's for the days it alone had, the second night's for the others.
            expect(seen.files.map((file) => [file.partition.replace(`${field}_day=`, ''), file.records]).sort()).toEqual(wanted);
            if (catalog.metadataTables)
              expect(seen.rows?.map(([partition, records, files]) => [partition[0], records, files]).sort()).toEqual(
                wanted.map(([day, count]) => [day, count, '1']),
              );
          }
        },
        TEST_TIMEOUT_MS,
      );

      it(
        'merge: keys of the second night are updated (its values and lineage) or inserted, the first night’s other keys kept as they were',
        async () => {
          const table = `spark_${catalog.name}.by_key`;
          const { night } = await workspace(catalog, 'merge', (which) => ({
            name: `by_key_${catalog.name}`,
            tile: SANDBOX_TILE,
            // Keys 1..40, then 21..60: 1..20 untouched, 21..40 updated, 41..60 new.
            query: nightQuery(which, which === 1 ? range(1, 40) : range(21, 60)),
            columns: COLUMN_TYPES,
            sinks: [
              { type: 'csv', path: '{name}-{runId}.csv' },
              { type: 'iceberg', table, writeMode: 'merge', primaryKey: ['Number'] },
            ],
          }));

          const first = await night(1, true);
          expect(first).toHaveLength(40);
          const second = await night(2, true);
          expect(second).toHaveLength(40);
          // An updated key's values differ between the nights, not only its lineage.
          const firstOf = new Map(first.map((row) => [row[0], row]));
          const updated = second.filter((row) => firstOf.has(row[0]));
          expect(updated).toHaveLength(20);
          for (const row of updated) expect(row.slice(1, 3)).not.toEqual(firstOf.get(row[0])!.slice(1, 3));
          const expected = [...first.filter((row) => Number(row[0]) <= 20), ...second];
          const described = await expectAllRead(catalog, table, expected, true);
          expect(described.partitionSpec).toEqual([]);
          expect(described.snapshots.map((snapshot) => [snapshot.operation, snapshot.summary['tilehouse.run-id']])).toEqual([
            ['overwrite', 'night-1'],
            ['overwrite', 'night-2'],
          ]);
          const history = await session!.snapshots(`${catalog.sparkName}.${table}`);
          expect(history.snapshots.map((snapshot) => [snapshot.id, snapshot.summary['tilehouse.run-id'], snapshot.summary['total-records']])).toEqual(
            described.snapshots.map((snapshot) => [snapshot.id, snapshot.summary['tilehouse.run-id'], snapshot.id === history.currentSnapshotId ? '60' : '40']),
          );
        },
        TEST_TIMEOUT_MS,
      );
    });
  }
});
