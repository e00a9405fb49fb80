// The iceberg sink on the JDBC catalog when the catalog's database refuses it, on the suite's
// PostgreSQL, as a role of the test's own (the cluster's superuser has every privilege whatever is
// revoked), through the tests' PostgreSQL proxy, which counts the commits' UPDATEs and cuts a
// connection where a test says: a revoked UPDATE on iceberg_tables, a wrong password, a commit whose
// answer is lost. The codes, the tries the server saw, the files left in the table's directory, and
// every line a person reads.
import { randomUUID } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { icebergEnvironmentSchema } from '../../../src/config/iceberg-sink-schema.js';
import { ERROR_CODES } from '../../../src/error-codes.js';
import { IcebergSink } from '../../../src/sinks/iceberg/iceberg-sink.js';
import { openJdbcCatalog } from '../../../src/sinks/iceberg/jdbc-catalog.js';
import { runCli, sandboxEnv } from '../../support/cli-harness.js';
import { silentLogger } from '../../support/fake-sinks.js';
import { postgresBlocker, postgresOrSkip, psql, usePostgresDatabase } from '../../support/postgres.js';
import { type PostgresProxy, startPostgresProxy } from '../../support/postgres-proxy.js';
import { sandboxAndRootForAll } from '../../support/sandbox-fixture.js';
import { column, prepareSink, runContext } from '../../support/sink-run-context.js';
import { describeUnless } from '../../support/skip.js';
import { faultJob, icebergWorkspace } from './iceberg-cli-support.js';

const server = postgresOrSkip();
const ROLE_PASSWORD = 'jdbc-catalog-role-password';
const PASSWORD_VARIABLE = 'TILEHOUSE_TEST_JDBC_ROLE_PASSWORD';
const COLUMNS = [column('id', 'INT64'), column('title', 'STRING')];
const rows = (count: number, first = 0) => Array.from({ length: count }, (_, offset) => [BigInt(first + offset), `row ${first + offset}`]);

/** Every file below `dir`, relative to it, sorted. */
async function filesBelow(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(dir, path.join(entry.parentPath, entry.name)))
    .sort();
}

describeUnless(postgresBlocker(server))("the iceberg sink when the JDBC catalog's database refuses it (PostgreSQL)", () => {
  const fixture = sandboxAndRootForAll({ incidents: 30 });
  const database = usePostgresDatabase(server!);
  // Roles are the cluster's, not the database's: one per test file run.
  const role = `iceberg_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  let proxy: PostgresProxy;
  let warehouse = '';
  /** The commits' UPDATEs that reached the proxy, and whether to cut the connection after the next one's answer is asked for. */
  const seen = { updates: 0 };

  beforeAll(async () => {
    warehouse = await mkdtemp(path.join(tmpdir(), 'tilehouse-jdbc-refusals-'));
    proxy = await startPostgresProxy({ host: server!.host, port: server!.port });
    proxy.rule(counting(() => 'pass'));
    // The catalog's tables made by an administrator (the cluster's user); the role may use them, not create in the schema.
    const { host, port, user, password } = server!;
    const admin = await openJdbcCatalog({ catalogName: 'refusals', warehouse, connection: { host, port, user, password, database: database.name } });
    await admin.close();
    await psql(
      server!,
      database.name,
      `CREATE ROLE ${role} LOGIN PASSWORD '${ROLE_PASSWORD}'; REVOKE CREATE ON SCHEMA public FROM PUBLIC;
       GRANT SELECT, INSERT, UPDATE ON iceberg_tables, iceberg_namespace_properties TO ${role}`,
    );
  });
  afterAll(async () => {
    await psql(server!, database.name, `DROP OWNED BY ${role} CASCADE; DROP ROLE ${role}`);
    await proxy.stop();
    await rm(warehouse, { recursive: true, force: true });
  });

  /** A proxy rule that counts the commits' UPDATEs before deciding by `decide`. */
  function counting(decide: Parameters<PostgresProxy['rule']>[0]): Parameters<PostgresProxy['rule']>[0] {
    return (message) => {
      if (message.type === 'P' && message.body.includes('UPDATE iceberg_tables')) seen.updates += 1;
      return decide(message);
    };
  }

  const catalogSettings = () => ({
    type: 'jdbc',
    catalogName: 'refusals',
    host: '127.0.0.1',
    port: proxy.port,
    database: database.name,
    user: role,
    password: `\${${PASSWORD_VARIABLE}}`,
    sslmode: 'disable',
  });
  const sinkFor = (table: string, password = ROLE_PASSWORD) =>
    new IcebergSink({
      config: { type: 'iceberg', table, writeMode: 'append' },
      settings: icebergEnvironmentSchema.parse({ catalog: catalogSettings(), location: warehouse }),
      environmentFile: 'config/env.yaml',
      guard: undefined,
      env: { [PASSWORD_VARIABLE]: password },
    });
  /** The table's snapshots' run ids, as the catalog's administrator reads them (not through the proxy). */
  const runIdsOf = async (table: string): Promise<string[]> => {
    const { host, port, user, password } = server!;
    const catalog = await openJdbcCatalog({ catalogName: 'refusals', warehouse, connection: { host, port, user, password, database: database.name } });
    try {
      const [namespace, name] = table.split('.') as [string, string];
      const loaded = await catalog.loadTable({ namespace, name });
      return (loaded?.metadata.snapshots ?? []).map((snapshot) => snapshot.summary['tilehouse.run-id'] ?? '');
    } finally {
      await catalog.close();
    }
  };

  it('UPDATE on iceberg_tables revoked: check and plan refuse with permission_denied naming it; a commit fails at once (one UPDATE), leaving no file of its own', async () => {
    const table = 'refusals.revoked';
    const tableDir = path.join(warehouse, 'refusals', 'revoked');
    const sink = sinkFor(table);
    const first = await prepareSink(sink, runContext({ columns: COLUMNS, runId: 'granted-1' }), [rows(3)]);
    await expect(first.publish()).resolves.toMatchObject({ rows: 3 });
    await expect(sink.checkAccess({ jobName: 'open_incidents', logger: silentLogger })).resolves.toContain(
      `user "${role}" has SELECT, INSERT, UPDATE on iceberg_tables and SELECT, INSERT on iceberg_namespace_properties`,
    );
    const filesBefore = await filesBelow(tableDir);

    await psql(server!, database.name, `REVOKE UPDATE ON iceberg_tables FROM ${role}`);
    try {
      const grant = `GRANT UPDATE ON iceberg_tables TO "${role}"`;
      await expect(sink.checkAccess({ jobName: 'open_incidents', logger: silentLogger })).rejects.toMatchObject({
        code: 'permission_denied',
        targetKind: 'iceberg',
        message: expect.stringContaining(`user "${role}" lacks UPDATE on iceberg_tables (has_table_privilege): ${grant}`),
      });

      // `check` and `plan` say it as the run would fail, before any commit is tried.
      const ws = await icebergWorkspace(path.join(fixture.root, 'revoked'), fixture.sandbox, [faultJob('job_revoked', table, 'append')], {
        catalog: catalogSettings(),
        location: warehouse,
      });
      const env = { ...sandboxEnv(fixture.sandbox), [PASSWORD_VARIABLE]: ROLE_PASSWORD };
      process.env[PASSWORD_VARIABLE] = ROLE_PASSWORD;
      const updatesBeforeViews = seen.updates;
      const check = await runCli(['check', '--config', ws.configFile, '--jobs', ws.jobsDir], { env });
      expect(check.exitCode, check.stdout + check.stderr).toBe(1);
      expect(check.stdout + check.stderr).toContain('permission_denied');
      expect(check.stdout + check.stderr).toContain(grant);
      const plan = await runCli(['plan', '--json', '--config', ws.configFile, '--jobs', ws.jobsDir], { env });
      expect(plan.exitCode, plan.stderr).toBe(1);
      const planned = JSON.parse(plan.stdout) as { sinks: { sink: string; action: string; access?: { verdict: string; code?: string; message?: string } }[] }[];
      expect(planned[0]!.sinks.find((entry) => entry.sink === 'iceberg')).toMatchObject({
        action: 'refuse',
        access: { verdict: 'refused', code: 'permission_denied', message: expect.stringContaining(grant) },
      });
      expect(seen.updates, 'check and plan send no UPDATE').toBe(updatesBeforeViews);

      // A run that got past its check (the grant revoked meanwhile): the commit's refusal is the error, tried once.
      const writer = await prepareSink(sink, runContext({ columns: COLUMNS, runId: 'revoked-1' }), [rows(2, 3)]);
      const updates = seen.updates;
      const failure = (await writer.publish().catch((error: unknown) => error)) as Error & { code?: string };
      await writer.abort();
      expect(failure).toMatchObject({ code: 'permission_denied', targetKind: 'iceberg' });
      expect(failure.message).toContain(`table ${table} (jdbc 127.0.0.1:${proxy.port}/${database.name} catalog refusals)`);
      expect(failure.message).toContain(`user "${role}" lacks UPDATE on iceberg_tables (42501 permission denied for table iceberg_tables): ${grant}`);
      expect(failure.message).toContain('nothing of this run was committed');
      expect(seen.updates - updates, 'the refused UPDATE is not tried again').toBe(1);
      // Neither the refused commit's metadata file nor any other file of the run is left; the table is as it was.
      expect(await filesBelow(tableDir)).toEqual(filesBefore);
      expect(await runIdsOf(table)).toEqual(['granted-1']);
    } finally {
      await psql(server!, database.name, `GRANT UPDATE ON iceberg_tables TO ${role}`);
    }
  }, 120_000);

  it('a wrong password: iceberg_catalog_auth_failed (not retryable) from the run, check and plan alike, naming the user, never the password', async () => {
    expect(ERROR_CODES.iceberg_catalog_auth_failed.retryable).toBe(false);
    const wrong = 'not-the-role-password';
    const sink = sinkFor('refusals.password', wrong);
    const opened = (await sink.open(runContext({ columns: COLUMNS })).catch((error: unknown) => error)) as Error & { code?: string };
    const checked = (await sink.checkAccess({ jobName: 'open_incidents', logger: silentLogger }).catch((error: unknown) => error)) as Error & { code?: string };
    for (const failure of [opened, checked]) {
      expect(failure).toMatchObject({ code: 'iceberg_catalog_auth_failed', targetKind: 'iceberg' });
      expect(failure.message).toMatch(new RegExp(`the database refused user "${role}" \\(28P01 password authentication failed for user "${role}"\\)`));
      expect(failure.message).not.toContain(wrong);
    }
  }, 60_000);

  it('a commit whose UPDATE never reached the server: the table, read again, lacks it, so its metadata file is deleted and the next try lands', async () => {
    const table = 'refusals.cut_before';
    const tableDir = path.join(warehouse, 'refusals', 'cut_before');
    const sink = sinkFor(table);
    const first = await prepareSink(sink, runContext({ columns: COLUMNS, runId: 'before-1' }), [rows(1)]);
    await first.publish();
    const writer = await prepareSink(sink, runContext({ columns: COLUMNS, runId: 'before-2' }), [rows(2, 1)]);
    let cut = false;
    proxy.rule(
      counting((message) => {
        if (!cut && message.type === 'P' && message.body.includes('UPDATE iceberg_tables')) {
          cut = true;
          return 'cut-before';
        }
        return 'pass';
      }),
    );
    try {
      await expect(writer.publish()).resolves.toMatchObject({ rows: 2, details: { tries: 2 } });
    } finally {
      proxy.rule(counting(() => 'pass'));
    }
    // One metadata file per version the table went through: the lost try's (same version as the landed one) is gone.
    const metadata = (await filesBelow(tableDir)).filter((file) => file.endsWith('.metadata.json')).map((file) => path.basename(file).slice(0, 5));
    expect(metadata).toEqual(['00000', '00001', '00002']);
    expect(await runIdsOf(table)).toEqual(['before-1', 'before-2']);
  }, 60_000);

  it("a commit whose answer is lost, the catalog unreachable after: publish_outcome_unknown saying only what is known, while the table holds the run's snapshot", async () => {
    const table = 'refusals.lost_answer';
    const sink = sinkFor(table);
    const first = await prepareSink(sink, runContext({ columns: COLUMNS, runId: 'lost-0' }), [rows(1)]);
    await first.publish();
    const writer = await prepareSink(sink, runContext({ columns: COLUMNS, runId: 'lost-1' }), [rows(2, 1)]);
    let updateSent = false;
    let cutAt: number | undefined;
    proxy.rule(
      counting((message) => {
        if (message.type === 'P' && message.body.includes('UPDATE iceberg_tables')) updateSent = true;
        // The UPDATE reaches the server and commits; its answer never comes back ...
        if (cutAt === undefined && updateSent && message.type === 'S') {
          cutAt = message.connection;
          return 'cut-after';
        }
        // ... and every connection after it is cut at its first message (the catalog out of reach).
        return cutAt !== undefined && message.connection > cutAt ? 'cut-before' : 'pass';
      }),
    );
    let failure: Error & { code?: string };
    try {
      failure = (await writer.publish().catch((error: unknown) => error)) as Error & { code?: string };
      await writer.abort();
    } finally {
      proxy.rule(counting(() => 'pass'));
    }
    expect(failure).toMatchObject({ code: 'publish_outcome_unknown' });
    expect(failure.message).toContain('whether run lost-1 is in the table is not known');
    expect(failure.message).not.toContain('nothing was published');
    expect(failure.message).not.toContain('nothing of this run was committed');
    expect(writer.leftBehind?.()).toEqual([]);
    // What a reader finds: the run's snapshot is the table's.
    expect(await runIdsOf(table)).toEqual(['lost-0', 'lost-1']);
  }, 60_000);
});
