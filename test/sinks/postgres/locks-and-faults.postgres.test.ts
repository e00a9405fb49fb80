import { expect, it } from 'vitest';
import { postgresOrSkip, psql, usePostgresDatabase, postgresBlocker } from '../../support/postgres.js';
import { column, postgresSink, prepareSink, runContext, runSink } from './postgres-fixtures.js';
import { describeUnless } from '../../support/skip.js';

const server = postgresOrSkip();
const columns = [column('id', 'INT64'), column('title', 'STRING')];

describeUnless(postgresBlocker(server))('the postgres sink under locks and failures as PostgreSQL reports them', () => {
  const database = usePostgresDatabase(server!);
  const idsOf = async (table: string) => (await database.query<{ id: string }>(`SELECT id::text FROM "${table}" ORDER BY id`)).map((row) => Number(row.id));

  it('replaces while a reader holds a long transaction on the table: no wait, the reader keeps its snapshot', async () => {
    const sink = postgresSink(server!, database.name, { table: 'read_long' });
    await runSink(sink, runContext({ columns, runId: 'r1' }), [
      [
        [1n, 'old'],
        [2n, 'old'],
      ],
    ]);
    const reader = await database.client();
    try {
      await reader.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
      expect((await reader.query('SELECT count(*)::int AS n FROM read_long')).rows[0].n).toBe(2);
      const result = await runSink(sink, runContext({ columns, runId: 'r2' }), [[[3n, 'new']]]);

      expect(result.details?.tries).toBeUndefined();
      expect((await reader.query('SELECT count(*)::int AS n FROM read_long')).rows[0].n).toBe(2);
      expect(await idsOf('read_long')).toEqual([3]);
    } finally {
      await reader.query('ROLLBACK');
      await reader.end();
    }
  });

  it('lets go of the lock after lockTimeoutMs and tries again, publishing once the holder is done', async () => {
    const sink = postgresSink(server!, database.name, { table: 'locked', schema: 'add' }, { settings: { lockTimeoutMs: 100, publishBudgetMs: 30_000 } });
    await runSink(sink, runContext({ columns, runId: 'k1' }), [[[1n, 'a']]]);
    const holder = await database.client();
    await holder.query('BEGIN');
    // A reader's ACCESS SHARE lock: adding a column needs ACCESS EXCLUSIVE, which must not queue in front of readers.
    await holder.query('SELECT * FROM locked');
    const wider = [...columns, column('extra', 'STRING')];
    const writer = await prepareSink(sink, runContext({ columns: wider, runId: 'k2' }), [[[2n, 'b', 'x']]]);
    const publishing = writer.publish();
    // While the publish retries, a second reader is never stuck behind it for longer than the lock timeout.
    const other = await database.client();
    try {
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect((await other.query('SELECT count(*)::int AS n FROM locked')).rows[0].n).toBe(1);
      await holder.query('COMMIT');
      const result = await publishing;
      expect(result.details?.tries).toBeGreaterThan(1);
      expect(await database.query('SELECT id::text, extra FROM locked')).toEqual([{ id: '2', extra: 'x' }]);
    } finally {
      await holder.end();
      await other.end();
    }
  });

  it('fails with postgres_lock_timeout when the lock stays taken for the whole budget, the table unchanged', async () => {
    const sink = postgresSink(server!, database.name, { table: 'never_free' }, { settings: { lockTimeoutMs: 50, publishBudgetMs: 400 } });
    await runSink(sink, runContext({ columns, runId: 'n1' }), [[[1n, 'kept']]]);
    const holder = await database.client();
    try {
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE never_free IN SHARE MODE');
      await expect(runSink(sink, runContext({ columns, runId: 'n2' }), [[[2n, 'new']]])).rejects.toMatchObject({
        code: 'postgres_lock_timeout',
        message: expect.stringContaining('job open_incidents: postgres public.never_free: the publish could not get the table'),
      });
    } finally {
      await holder.query('ROLLBACK');
      await holder.end();
    }
    expect(await idsOf('never_free')).toEqual([1]);
  });

  it('retries a transaction the server ended as a serialization failure (40001)', async () => {
    const sink = postgresSink(server!, database.name, { table: 'victim', writeMode: 'append' });
    await runSink(sink, runContext({ columns, runId: 'v1' }), [[[1n, 'a']]]);
    // A sequence counts the tries outside their transactions (a table's count would roll back with each).
    await psql(server!, database.name, 'CREATE SEQUENCE victim_seq');
    await psql(
      server!,
      database.name,
      `CREATE FUNCTION victim_once() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         IF nextval('victim_seq') = 1 THEN RAISE EXCEPTION 'could not serialize' USING ERRCODE = 'serialization_failure'; END IF;
         RETURN NULL;
       END $$;
       CREATE TRIGGER victim_once AFTER INSERT ON victim FOR EACH STATEMENT EXECUTE FUNCTION victim_once();`,
    );
    const result = await runSink(sink, runContext({ columns, runId: 'v2' }), [[[2n, 'b']]]);

    expect(result.details?.tries).toBe(2);
    expect(await idsOf('victim')).toEqual([1, 2]);
  });

  it('fails with disk_full (53100) at the target, naming it, and publishes nothing', async () => {
    const sink = postgresSink(server!, database.name, { table: 'full_disk' });
    await runSink(sink, runContext({ columns, runId: 'f1' }), [[[1n, 'kept']]]);
    await psql(
      server!,
      database.name,
      `CREATE FUNCTION full_disk() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = 'disk_full'; END $$;
       CREATE TRIGGER full_disk AFTER INSERT ON full_disk FOR EACH STATEMENT EXECUTE FUNCTION full_disk();`,
    );
    await expect(runSink(sink, runContext({ columns, runId: 'f2' }), [[[2n, 'new']]])).rejects.toMatchObject({
      code: 'disk_full',
      targetKind: 'postgres',
      message: expect.stringContaining("postgres public.full_disk: the server's disk is full (53100"),
    });
    expect(await idsOf('full_disk')).toEqual([1]);
  });

  it('fails with postgres_read_only on a server that takes no writes (25006)', async () => {
    const readOnly = `${database.name}_ro`;
    await psql(server!, 'postgres', `CREATE DATABASE ${readOnly}`);
    try {
      await psql(server!, 'postgres', `ALTER DATABASE ${readOnly} SET default_transaction_read_only = on`);
      const sink = postgresSink(server!, readOnly, { table: 'anything' });
      await expect(runSink(sink, runContext({ columns, runId: 'ro' }), [[[1n, 'a']]])).rejects.toMatchObject({
        code: 'postgres_read_only',
        targetKind: 'postgres',
      });
      await expect(sink.checkAccess({ jobName: 'open_incidents', logger: runContext({ columns }).logger })).rejects.toMatchObject({
        code: 'postgres_read_only',
      });
    } finally {
      await psql(server!, 'postgres', `DROP DATABASE ${readOnly} WITH (FORCE)`);
    }
  });

  it('fails with permission_denied (42501) for a user without CREATE on the schema, and check names what is missing', async () => {
    // Roles are the cluster's, not the database's: named after the test file's database.
    const weak = `weak_${database.name}`;
    await psql(server!, database.name, `CREATE ROLE ${weak} LOGIN PASSWORD 'weak-password'; REVOKE CREATE ON SCHEMA public FROM PUBLIC`);
    const sink = postgresSink(
      server!,
      database.name,
      { table: 'forbidden' },
      { settings: { user: weak, password: '${WEAK_PASSWORD}' }, env: { WEAK_PASSWORD: 'weak-password' } },
    );

    await expect(runSink(sink, runContext({ columns, runId: 'p' }), [[[1n, 'a']]])).rejects.toMatchObject({
      code: 'permission_denied',
      targetKind: 'postgres',
    });
    await expect(sink.checkAccess({ jobName: 'open_incidents', logger: runContext({ columns }).logger })).rejects.toThrow(
      // The run ledger beside them: in the message as absent (CREATE) or, made by a test before, as lacking SELECT, INSERT.
      /grant the run's user CREATE on schema public \(the staging tables, the table(, the run ledger\)|\); SELECT, INSERT on table public\._tilehouse_runs \(the run ledger\))/,
    );
  });

  it('fails with postgres_auth_failed for a wrong password (28P01), never printing it', async () => {
    const sink = postgresSink(server!, database.name, { table: 'auth' }, { env: { TILEHOUSE_TEST_PG_PASSWORD: 'not-the-password' } });
    const failure = runSink(sink, runContext({ columns, runId: 'a' }), [[[1n, 'a']]]);

    await expect(failure).rejects.toMatchObject({ code: 'postgres_auth_failed', message: expect.stringContaining('28P01') });
    await expect(failure).rejects.not.toThrow('not-the-password');
  });

  it('publishes two runs into one table at once one after the other: the table is one run whole, the ledger has both', async () => {
    const sink = postgresSink(server!, database.name, { table: 'two_at_once' });
    await runSink(sink, runContext({ columns, runId: 'seed' }), [[[0n, 'seed']]]);
    const first = Array.from({ length: 2_000 }, (_, index) => [BigInt(index), 'first']);
    const second = Array.from({ length: 3_000 }, (_, index) => [BigInt(index), 'second']);
    await Promise.all([runSink(sink, runContext({ columns, runId: 'one' }), [first]), runSink(sink, runContext({ columns, runId: 'two' }), [second])]);

    const held = await database.query<{ title: string; n: number }>('SELECT title, count(*)::int AS n FROM two_at_once GROUP BY title');
    expect(held.length).toBe(1);
    expect([
      { title: 'first', n: 2_000 },
      { title: 'second', n: 3_000 },
    ]).toContainEqual(held[0]);
    expect(await database.query("SELECT count(*)::int AS n FROM _tilehouse_runs WHERE target_table = 'public.two_at_once'")).toEqual([{ n: 3 }]);
  });
});
