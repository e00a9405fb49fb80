// The conformance scenarios (scenarios.ts) for the postgres kind: straight to the server, and
// through PgBouncer in transaction pooling. The run's user is a role of the test's own (not the
// cluster's superuser, whose privileges cannot be taken away), so a revoked grant shows.
import { randomUUID } from 'node:crypto';
import { parse, stringify } from 'yaml';
import { readFile, writeFile } from 'node:fs/promises';
import { runCli, type Workspace } from '../../support/cli-harness.js';
import { addPostgresSettings, postgresBlocker, postgresOrSkip, psql, usePostgresDatabase } from '../../support/postgres.js';
import { describeUnless } from '../../support/skip.js';
import { afterAll, beforeAll } from 'vitest';
import { type ConformanceBackend, conformanceScenarios } from './scenarios.js';

const server = postgresOrSkip();
const ROLE_PASSWORD = 'conformance-role-password';
const ROLE_PASSWORD_VARIABLE = 'TILEHOUSE_CONFORMANCE_PG_PASSWORD';

describeUnless(postgresBlocker(server))('the sink contract on PostgreSQL', () => {
  const database = usePostgresDatabase(server!);
  // Roles are the cluster's, not the database's: one per test file run.
  const role = `conformance_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  beforeAll(async () => {
    await psql(
      server!,
      database.name,
      `CREATE ROLE ${role} LOGIN PASSWORD '${ROLE_PASSWORD}'; REVOKE CREATE ON SCHEMA public FROM PUBLIC; GRANT USAGE, CREATE ON SCHEMA public TO ${role}`,
    );
    process.env[ROLE_PASSWORD_VARIABLE] = ROLE_PASSWORD;
  });
  // Before the database is dropped (usePostgresDatabase's afterAll runs after this one): what the role owns there goes first.
  afterAll(() => psql(server!, database.name, `DROP OWNED BY ${role} CASCADE; DROP ROLE ${role}`));

  const backend = (name: string, table: string, through: 'server' | 'bouncer'): ConformanceBackend => ({
    kind: 'postgres',
    name,
    sink: () => ({ type: 'postgres', table }),
    async configure(workspace: Workspace) {
      const env = await addPostgresSettings(workspace.configFile, server!, database.name);
      const config = parse(await readFile(workspace.configFile, 'utf8')) as { sinks: { postgres: Record<string, unknown> } };
      // Through the pooler, lineage names the server behind it (lineageNamespace, lineageDatabase):
      // a run that fails before it connects must name it as the open writer does (the failed night).
      const pooled = { port: server!.bouncerPort, lineageNamespace: `postgres://127.0.0.1:${server!.port}`, lineageDatabase: 'warehouse' };
      Object.assign(config.sinks.postgres, through === 'bouncer' ? pooled : { user: role, password: `\${${ROLE_PASSWORD_VARIABLE}}` });
      await writeFile(workspace.configFile, stringify(config));
      return { ...env, [ROLE_PASSWORD_VARIABLE]: ROLE_PASSWORD };
    },
    async storedColumns() {
      const columns = await database.query<{ name: string; type: string }>(
        `SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type FROM pg_catalog.pg_attribute a
          WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`,
        [`public.${table}`],
      );
      return columns.map(({ name, type }) => ({ name, type }));
    },
    async contents() {
      const rows = await database.query<Record<string, unknown>>(`SELECT * FROM public.${table} ORDER BY number`);
      return JSON.stringify(rows);
    },
    losePermission:
      through === 'bouncer'
        ? { cannot: "PgBouncer's auth file knows only the cluster's user, a superuser, whose privileges cannot be revoked; the direct backend shows it" }
        : async (workspace, env) => {
            await psql(server!, database.name, `REVOKE CREATE ON SCHEMA public FROM ${role}`);
            const as = (command: string) => runCli([command, '--config', workspace.configFile, '--jobs', workspace.jobsDir], { env });
            return { check: await as('check'), plan: await as('plan') };
          },
  });

  conformanceScenarios(backend('straight to the server, as a role of its own', 'conformance_direct', 'server'));
  conformanceScenarios(backend('through PgBouncer (transaction pooling)', 'conformance_pooled', 'bouncer'));
});
