// The conformance scenarios (scenarios.ts) for the iceberg kind, on each catalog: Apache Iceberg's
// own REST server, and the JDBC catalog on the suite's PostgreSQL. The table's columns are read
// back by pyiceberg, an independent reader. The JDBC catalog's lost permission is a role of the
// test's own (the cluster's user is a superuser, whose privileges cannot be taken away) without
// UPDATE on iceberg_tables.
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe } from 'vitest';
import { parse, stringify } from 'yaml';
import { runCli, type Workspace } from '../../support/cli-harness.js';
import { icebergPythonOrSkip, type PyicebergTable, readIceberg } from '../../support/iceberg-readers.js';
import { icebergRestLibOrSkip, type RunningIcebergRest, startIcebergRest } from '../../support/iceberg-rest-server.js';
import { postgresBlocker, postgresOrSkip, psql, TEST_PASSWORD_VARIABLE, usePostgresDatabase } from '../../support/postgres.js';
import { describeUnless, missing } from '../../support/skip.js';
import { type ConformanceBackend, conformanceScenarios } from './scenarios.js';

const lib = icebergRestLibOrSkip();
const python = icebergPythonOrSkip();
const server = postgresOrSkip();
const ROLE_PASSWORD = 'conformance-catalog-role-password';
const ROLE_PASSWORD_VARIABLE = 'TILEHOUSE_CONFORMANCE_CATALOG_PASSWORD';

describeUnless(missing('the Iceberg REST catalog server', lib) ?? missing('the Iceberg readers', python) ?? postgresBlocker(server))(
  'the sink contract on Iceberg tables',
  () => {
    const database = usePostgresDatabase(server!);
    // Roles are the cluster's, not the database's: one per test file run, made by the test that uses it.
    const role = `catalog_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
    let roleMade = false;
    afterAll(async () => {
      if (roleMade) await psql(server!, database.name, `DROP OWNED BY ${role} CASCADE; DROP ROLE ${role}`);
    });
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
        losePermission:
          catalog === 'rest'
            ? { cannot: "Apache Iceberg's REST test server has no permission model (every request is allowed)" }
            : async (workspace, env) => {
                // The catalog's user becomes a role with every privilege a run needs but UPDATE on iceberg_tables.
                await psql(
                  server!,
                  database.name,
                  `CREATE ROLE ${role} LOGIN PASSWORD '${ROLE_PASSWORD}';
                   GRANT SELECT, INSERT, UPDATE ON iceberg_tables, iceberg_namespace_properties TO ${role};
                   REVOKE UPDATE ON iceberg_tables FROM ${role}`,
                );
                roleMade = true;
                const environment = parse(await readFile(workspace.configFile, 'utf8')) as { sinks: { iceberg: { catalog: Record<string, unknown> } } };
                Object.assign(environment.sinks.iceberg.catalog, { user: role, password: `\${${ROLE_PASSWORD_VARIABLE}}` });
                await writeFile(workspace.configFile, stringify(environment));
                process.env[ROLE_PASSWORD_VARIABLE] = ROLE_PASSWORD;
                const as = (command: string) =>
                  runCli([command, '--config', workspace.configFile, '--jobs', workspace.jobsDir], {
                    env: { ...env, [ROLE_PASSWORD_VARIABLE]: ROLE_PASSWORD },
                  });
                return { check: await as('check'), plan: await as('plan') };
              },
      };
    };

    describe('REST', () => conformanceScenarios(backend('rest')));
    describe('JDBC', () => conformanceScenarios(backend('jdbc')));
  },
);
