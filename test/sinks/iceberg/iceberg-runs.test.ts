// tilehouse run of the sandbox's tile with two sinks, a local CSV and an Iceberg table, through each
// catalog (Apache Iceberg's REST server; the JDBC catalog on the suite's PostgreSQL) and each mode:
// pyiceberg and DuckDB read back exactly the rows the CSV of the same run holds.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { SANDBOX_TILE } from '../../../sandbox/index.js';
import { runCli, sandboxEnv, summaryOf, writeWorkspace } from '../../support/cli-harness.js';
import { icebergPythonOrSkip, type PyicebergTable, readIceberg } from '../../support/iceberg-readers.js';
import { icebergRestLibOrSkip, type RunningIcebergRest, startIcebergRest } from '../../support/iceberg-rest-server.js';
import { postgresBlocker, postgresOrSkip, TEST_PASSWORD_VARIABLE, usePostgresDatabase } from '../../support/postgres.js';
import { sandboxAndRootForAll } from '../../support/sandbox-fixture.js';
import { describeUnless, missing } from '../../support/skip.js';
import { readBoth, sortedLines } from './iceberg-test-rows.js';

const lib = icebergRestLibOrSkip();
const python = icebergPythonOrSkip();
const server = postgresOrSkip();

/** Every type the sink maps: Number INT64, Amount NUMERIC, Score FLOAT64, Description STRING, Day DATE, Created TIMESTAMP. */
const typedQuery = {
  items: [
    { header: 'Number', formula: '[incident.number]', dataType: 'number', order: 'asc', orderSequence: 0, filters: [] },
    { header: 'Amount', formula: '[incident.number]', dataType: 'number', filters: [] },
    { header: 'Score', formula: '[incident.number]', dataType: 'number', filters: [] },
    { header: 'Description', formula: '[incident.description]', dataType: 'text', filters: [] },
    { header: 'Day', formula: '[incident.created]', dataType: 'datetime', filters: [] },
    { header: 'Created', formula: '[incident.created]', dataType: 'datetime', filters: [] },
  ],
  options: { pageNumber: 0, itemsPerPage: 50, ignoreRepeatedRows: false },
};
const COLUMN_TYPES = { Number: { type: 'INT64' }, Amount: { type: 'NUMERIC' }, Day: { type: 'DATE' } };
const EXPECTED_FIELDS = [
  ['number', 'long'],
  ['amount', 'decimal(38, 9)'],
  ['score', 'double'],
  ['description', 'string'],
  ['day', 'date'],
  ['created', 'timestamptz'],
];
const TYPES = ['INT64', 'NUMERIC', 'FLOAT64', 'STRING', 'DATE', 'TIMESTAMP'] as const;

const TOKEN_VARIABLE = 'TILEHOUSE_TEST_ICEBERG_TOKEN';
const TOKEN = 'tok-7f3c9e1d-never-printed';
const READS_TIMEOUT_MS = 600_000;

/** The CSV of a run, as the readers give text back (iceberg_read.py): null for an unquoted empty field, timestamps in microseconds, a whole double with ".0". */
function csvAsReaderText(csv: string, withLineage?: { runId: string; extractedAtMicros: string }): (string | null)[][] {
  const records = parseCsv(csv, { cast: (value, context) => (value === '' && !context.quoting ? null : value), from_line: 2 }) as (string | null)[][];
  return records.map((record) => {
    const row = record.map((field, index) => {
      if (field === null) return null;
      switch (TYPES[index]) {
        case 'TIMESTAMP':
          return String(BigInt(Date.parse(field)) * 1000n);
        case 'FLOAT64':
          return /^-?\d+$/.test(field) ? `${field}.0` : field;
        case 'NUMERIC':
          return field.includes('.') ? field.replace(/0+$/, '').replace(/\.$/, '') : field;
        default:
          return field;
      }
    });
    return withLineage ? [...row, withLineage.runId, withLineage.extractedAtMicros] : row;
  });
}

interface CatalogUnderTest {
  name: 'rest' | 'jdbc';
  /** `sinks.iceberg.catalog` of the workspace. */
  settings(): Record<string, unknown>;
  /** How pyiceberg reaches the same tables. */
  reader(table: string): PyicebergTable;
  /** Variables the workspace's references name. */
  env(): Record<string, string>;
  secret(): string;
}

describeUnless(missing('the Iceberg REST catalog server', lib) ?? missing('the Iceberg readers', python) ?? postgresBlocker(server))(
  'tilehouse run into Iceberg tables beside a CSV (pyiceberg and DuckDB read back the CSV rows)',
  () => {
    const fixture = sandboxAndRootForAll({ incidents: 60 });
    const database = usePostgresDatabase(server!);
    let rest: RunningIcebergRest | undefined;
    let warehouse: string;
    beforeAll(async () => {
      warehouse = await mkdtemp(path.join(tmpdir(), 'tilehouse-iceberg-runs-'));
      rest = await startIcebergRest(lib!);
    }, 180_000);
    afterAll(async () => {
      await rest?.stop();
      await rm(warehouse, { recursive: true, force: true });
    });

    const catalogs: CatalogUnderTest[] = [
      {
        name: 'rest',
        settings: () => ({ type: 'rest', uri: rest!.uri, token: `\${${TOKEN_VARIABLE}}` }),
        reader: (table) => ({ catalog: { type: 'rest', uri: rest!.uri }, table }),
        env: () => ({ [TOKEN_VARIABLE]: TOKEN }),
        secret: () => TOKEN,
      },
      {
        name: 'jdbc',
        settings: () => ({
          type: 'jdbc',
          catalogName: 'tilehouse_runs',
          host: server!.host,
          port: server!.port,
          database: database.name,
          user: server!.user,
          password: `\${${TEST_PASSWORD_VARIABLE}}`,
          sslmode: 'disable',
        }),
        reader: (table) => ({
          catalog: {
            type: 'sql',
            uri: `postgresql+psycopg2://${encodeURIComponent(server!.user)}:${encodeURIComponent(server!.password)}@${server!.host}:${server!.port}/${database.name}`,
          },
          catalogName: 'tilehouse_runs',
          table,
        }),
        env: () => ({ [TEST_PASSWORD_VARIABLE]: server!.password }),
        secret: () => server!.password,
      },
    ];

    for (const catalog of catalogs) {
      describe(`through the ${catalog.name} catalog`, () => {
        for (const mode of ['replace', 'append'] as const) {
          it(
            `${mode}: the table holds exactly the CSV's rows; a re-run of the run id commits nothing; the second night ${mode === 'replace' ? 'replaces' : 'appends'}; status, plan and check name the table`,
            async () => {
              const table = `night_${catalog.name}.incidents_${mode}`;
              const job = (above: number) => ({
                name: `nightly_${catalog.name}_${mode}`,
                tile: SANDBOX_TILE,
                query: {
                  ...typedQuery,
                  items: typedQuery.items.map((item, i) => (i === 0 ? { ...item, filters: [{ operator: 'gt', values: [String(above)] }] } : item)),
                },
                columns: COLUMN_TYPES,
                sinks: [
                  { type: 'csv', path: '{name}-{runId}.csv' },
                  { type: 'iceberg', table, writeMode: mode },
                ],
              });
              const ws = await writeWorkspace(path.join(fixture.root, `${catalog.name}-${mode}`), fixture.sandbox, [job(0)]);
              const environment = parse(await readFile(ws.configFile, 'utf8')) as { sinks: Record<string, unknown> };
              environment.sinks.iceberg = { catalog: catalog.settings(), location: path.join(warehouse, `${catalog.name}-${mode}`) };
              await writeFile(ws.configFile, stringify(environment));
              const env = { ...sandboxEnv(fixture.sandbox), ...catalog.env() };
              for (const [name, value] of Object.entries(catalog.env())) process.env[name] = value;
              const cli = (args: string[]) => runCli([...args, '--config', ws.configFile, '--jobs', ws.jobsDir], { env });
              const outputs: string[] = [];
              const run = async (runId: string) => {
                const result = await cli(['run', '--run-id', runId, '--json']);
                outputs.push(result.stdout, result.stderr, JSON.stringify(result.logs));
                expect(result.exitCode, result.stderr).toBe(0);
                const summary = summaryOf(result.stdout, 'run');
                return { ...summary.tiles[0]!, startedAt: summary.startedAt };
              };
              const csvOf = (runId: string) => readFile(path.join(ws.outDir, `${job(0).name}-${runId}.csv`), 'utf8');
              const expectTable = async (expected: (string | null)[][]) => {
                const { pyiceberg, duckdb } = await readBoth(python!, catalog.reader(table));
                const columns = [...EXPECTED_FIELDS.map(([name]) => name!), ...(mode === 'append' ? ['_run_id', '_extracted_at'] : [])];
                expect(pyiceberg.columns).toEqual(columns);
                expect(duckdb.columns).toEqual(columns);
                expect(sortedLines(pyiceberg.rows)).toEqual(sortedLines(expected));
                expect(sortedLines(duckdb.rows)).toEqual(sortedLines(expected));
              };
              const lineageOf = (tile: { runId: string }, startedAt: string) => ({
                runId: tile.runId,
                extractedAtMicros: String(BigInt(Date.parse(startedAt)) * 1000n),
              });

              const first = await run('night-1');
              // The iceberg commit publishes first (a remote commit is likelier to fail than a local rename).
              expect(first.outputs.map((output) => [output.sink, output.target, output.rows]).reverse()).toEqual([
                ['csv', path.join(ws.outDir, `${job(0).name}-night-1.csv`), 60],
                ['iceberg', table, 60],
              ]);
              const firstCsv = csvAsReaderText(await csvOf('night-1'), mode === 'append' ? lineageOf(first, first.startedAt) : undefined);
              expect(firstCsv).toHaveLength(60);
              await expectTable(firstCsv);
              const described = await readIceberg(python!, 'pyiceberg-table', catalog.reader(table));
              expect(described.fields.slice(0, 6).map((field) => [field.name, field.type])).toEqual(EXPECTED_FIELDS);

              // The same run id again: the table already holds its snapshot, nothing is committed.
              const again = await run('night-1');
              expect(again.outputs[0]).toMatchObject({ sink: 'iceberg', target: table, rows: 60 });
              expect((await readIceberg(python!, 'pyiceberg-table', catalog.reader(table))).snapshots).toHaveLength(1);

              // The second night exports fewer rows (the guard allows a shrink of a third).
              await writeFile(path.join(ws.jobsDir, `${job(0).name}.yaml`), stringify(job(20)));
              const second = await run('night-2');
              expect(second.outputs[0]).toMatchObject({ sink: 'iceberg', target: table, rows: 40 });
              const secondCsv = csvAsReaderText(await csvOf('night-2'), mode === 'append' ? lineageOf(second, second.startedAt) : undefined);
              await expectTable(mode === 'replace' ? secondCsv : [...firstCsv, ...secondCsv]);
              const history = await readIceberg(python!, 'pyiceberg-table', catalog.reader(table));
              expect(
                history.snapshots.map((snapshot) => [snapshot.operation, snapshot.summary['tilehouse.run-id'], snapshot.summary['total-records']]),
              ).toEqual([
                [mode === 'replace' ? 'overwrite' : 'append', 'night-1', '60'],
                [mode === 'replace' ? 'overwrite' : 'append', 'night-2', mode === 'replace' ? '40' : '100'],
              ]);

              const status = await cli(['status']);
              outputs.push(status.stdout, status.stderr);
              expect(status.stdout).toMatch(new RegExp(`iceberg ${table.replace('.', '\\.')}.*night-2`));
              const plan = await cli(['plan']);
              outputs.push(plan.stdout, plan.stderr);
              expect(plan.exitCode, plan.stderr).toBe(0);
              expect(plan.stdout).toMatch(new RegExp(`${table.replace('.', '\\.')}[\\s\\S]*unchanged`));
              const check = await cli(['check']);
              outputs.push(check.stdout, check.stderr);
              expect(check.exitCode, check.stderr).toBe(0);
              expect(check.stdout + check.stderr).toMatch(new RegExp(`iceberg ${catalog.name} .*${table.replace('.', '\\.')}: table exists at `));
              for (const output of outputs) expect(output).not.toContain(catalog.secret());
            },
            READS_TIMEOUT_MS,
          );
        }
      });
    }
  },
);
