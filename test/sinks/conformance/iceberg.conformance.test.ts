// The conformance scenarios (scenarios.ts) for the iceberg kind, on each catalog: Apache Iceberg's
// own REST server, and the JDBC catalog on the suite's PostgreSQL. The table's columns are read
// back by pyiceberg, an independent reader.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe } from 'vitest';
import { parse, stringify } from 'yaml';
import type { Workspace } from '../../support/cli-harness.js';
import { icebergPythonOrSkip, type PyicebergTable, readIceberg } from '../../support/iceberg-readers.js';
import { icebergRestLibOrSkip, type RunningIcebergRest, startIcebergRest } from '../../support/iceberg-rest-server.js';
import { postgresBlocker, postgresOrSkip, TEST_PASSWORD_VARIABLE, usePostgresDatabase } from '../../support/postgres.js';
import { describeUnless, missing } from '../../support/skip.js';
import { type ConformanceBackend, conformanceScenarios } from './scenarios.js';

const lib = icebergRestLibOrSkip();
const python = icebergPythonOrSkip();
const server = postgresOrSkip();

describeUnless(missing('the Iceberg REST catalog server', lib) ?? missing('the Iceberg readers', python) ?? postgresBlocker(server))(
  'the sink contract on Iceberg tables',
  () => {
    const database = usePostgresDatabase(server!);
    let rest: RunningIcebergRest | undefined;
    let warehouse = '';
    beforeAll(async () => {
      warehouse = await mkdtemp(path.join(tmpdir(), 'tilehouse-iceberg-conformance-'));
      rest = await startIcebergRest(lib!);
    }, 180_000);
    afterAll(async () => {
      await rest?.stop();
      await rm(warehouse, { recursive: true, force: true });
    });

    const backend = (catalog: 'rest' | 'jdbc'): ConformanceBackend => {
      const table = `conformance.incidents_${catalog}`;
      const reader = (): PyicebergTable =>
        catalog === 'rest'
          ? { catalog: { type: 'rest', uri: rest!.uri }, table }
          : {
              catalog: {
                type: 'sql',
                uri: `postgresql+psycopg2://${encodeURIComponent(server!.user)}:${encodeURIComponent(server!.password)}@${server!.host}:${server!.port}/${database.name}`,
              },
              catalogName: 'conformance',
              table,
            };
      return {
        kind: 'iceberg',
        name: catalog === 'rest' ? "Apache Iceberg's REST catalog server" : 'the JDBC catalog on PostgreSQL',
        sink: () => ({ type: 'iceberg', table }),
        async configure(workspace: Workspace) {
          const environment = parse(await readFile(workspace.configFile, 'utf8')) as { sinks: Record<string, unknown> };
          const settings =
            catalog === 'rest'
              ? { type: 'rest', uri: rest!.uri }
              : {
                  type: 'jdbc',
                  catalogName: 'conformance',
                  host: server!.host,
                  port: server!.port,
                  database: database.name,
                  user: server!.user,
                  password: `\${${TEST_PASSWORD_VARIABLE}}`,
                  sslmode: 'disable',
                };
          environment.sinks.iceberg = { catalog: settings, location: path.join(warehouse, catalog) };
          await writeFile(workspace.configFile, stringify(environment));
          process.env[TEST_PASSWORD_VARIABLE] = server!.password;
          const env: Record<string, string> = catalog === 'rest' ? {} : { [TEST_PASSWORD_VARIABLE]: server!.password };
          return env;
        },
        async storedColumns() {
          const described = await readIceberg(python!, 'pyiceberg-table', reader());
          return described.fields.map((field) => ({ name: field.name, type: field.type }));
        },
        async contents() {
          const scanned = await readIceberg(python!, 'pyiceberg-scan', reader());
          const number = scanned.columns.indexOf('number');
          return JSON.stringify({ columns: scanned.columns, rows: [...scanned.rows].sort((a, b) => Number(a[number]) - Number(b[number])) });
        },
        losePermission: {
          cannot:
            catalog === 'rest'
              ? "Apache Iceberg's REST test server has no permission model (every request is allowed)"
              : "the JDBC catalog's check does not read the role's grants on iceberg_tables yet, and the warehouse directory's mode does not bind the tests' root user",
        },
      };
    };

    describe('REST', () => conformanceScenarios(backend('rest')));
    describe('JDBC', () => conformanceScenarios(backend('jdbc')));
  },
);
