import { execFile } from 'node:child_process';
import { chmod, chown, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { promisify } from 'node:util';
import pg from 'pg';
import { pino } from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type RunningPostgres, startPostgres } from '../../support/postgres-cluster.js';
import { startPostgresProxy } from '../../support/postgres-proxy.js';
import { postgresBlocker, postgresOrSkip } from '../../support/postgres.js';
import { describeUnless } from '../../support/skip.js';
import { waitUntil } from '../../support/wait-until.js';
import { column, postgresSink, prepareSink, runContext, runSink } from './postgres-fixtures.js';

const run = promisify(execFile);
const shared = postgresOrSkip();
const columns = [column('id', 'INT64'), column('title', 'STRING')];

/** A logger whose lines the test reads: the publish's 'tried again' warnings are the barrier the fault is ordered by. */
function recordingLogger() {
  const lines: Array<{ msg: string; error?: string }> = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line) as { msg: string; error?: string });
      done();
    },
  });
  return { logger: pino({ level: 'warn' }, stream), lines };
}

/** The errors of the publish's 'tried again' warnings, in order. */
function triedAgain(lines: ReadonlyArray<{ msg: string; error?: string }>): string[] {
  return lines.filter((line) => line.msg === 'PostgreSQL publish tried again').map((line) => line.error ?? '');
}

describeUnless(postgresBlocker(shared))("the postgres sink against a server of the test's own: restarted mid-publish, and behind a certificate", () => {
  // A cluster of this file's own: the shared one is never stopped under the other files' tests.
  let cluster: RunningPostgres;
  const database = 'postgres';

  beforeAll(async () => {
    cluster = await startPostgres(shared!.binDirectory, undefined);
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  async function query<T extends Record<string, unknown>>(sql: string): Promise<T[]> {
    const client = new pg.Client({ host: cluster.host, port: cluster.port, user: cluster.user, password: cluster.password, database });
    await client.connect();
    try {
      return (await client.query<T>(sql)).rows;
    } finally {
      await client.end();
    }
  }

  it('a server restarted during a publish: the publish reconnects within its budget and the run ends exact', async () => {
    const { logger, lines } = recordingLogger();
    const sink = postgresSink(cluster, database, { table: 'restarted', writeMode: 'append' }, { settings: { publishBudgetMs: 60_000 } });
    await runSink(sink, runContext({ columns, runId: 'before' }), [[[1n, 'before']]]);
    const writer = await prepareSink(sink, runContext({ columns, runId: 'across', logger }), [
      [
        [2n, 'two'],
        [3n, 'three'],
      ],
    ]);
    // The publish's first statement after BEGIN waits for this lock: the restart lands inside its transaction.
    const holder = new pg.Client({ host: cluster.host, port: cluster.port, user: cluster.user, password: cluster.password, database });
    holder.on('error', () => undefined);
    await holder.connect();
    await holder.query("SELECT pg_advisory_lock(hashtextextended('tilehouse public.restarted', 0))");
    const publishing = writer.publish();
    let settled = false;
    publishing.then(
      () => (settled = true),
      () => (settled = true),
    );
    await waitUntil(
      async () =>
        (
          await query<{ n: number }>(
            "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'tilehouse open_incidents' AND wait_event_type = 'Lock'",
          )
        )[0]!.n === 1,
      'the publish waits for the lock inside its transaction',
      { gaveUp: () => settled },
    );

    await cluster.stopServer();

    try {
      // Down until the publish has found it gone and been refused on reconnecting; then up again.
      // The barrier is the refusal itself, not a count of tries: on a loaded machine a reconnect
      // can still reach the server while it shuts down (57P03) before one finds the port closed.
      await waitUntil(
        () =>
          triedAgain(lines)
            .slice(1)
            .some((error) => error.includes('ECONNREFUSED')),
        'a try after the first refused (ECONNREFUSED)',
        {
          gaveUp: () => settled,
        },
      );
    } finally {
      // Up again whatever happened: the next test needs the server.
      await cluster.startServer();
      await holder.end().catch(() => undefined);
    }
    const result = await publishing;

    const tried = triedAgain(lines);
    expect(tried[0]).toContain('terminating connection due to administrator command');
    expect(tried.slice(1).some((error) => error.includes('ECONNREFUSED'))).toBe(true);
    expect(result).toMatchObject({ rows: 2, details: { writeMode: 'append', sentRows: 2 } });
    expect(result.details?.tries).toBeGreaterThanOrEqual(3);
    expect(await query('SELECT id::text, title FROM restarted ORDER BY id')).toEqual([
      { id: '1', title: 'before' },
      { id: '2', title: 'two' },
      { id: '3', title: 'three' },
    ]);
    expect(await query("SELECT run_id, rows::text FROM _tilehouse_runs WHERE target_table = 'public.restarted' ORDER BY run_id")).toEqual([
      { run_id: 'across', rows: '2' },
      { run_id: 'before', rows: '1' },
    ]);
    expect(await query("SELECT relname FROM pg_class WHERE relname LIKE '\\_tilehouse\\_stage\\_%'")).toEqual([]);
  });

  it('a COMMIT answer lost as the server goes down: the publish waits out the restart, the ledger judges, the rows land once', async () => {
    const { logger, lines } = recordingLogger();
    const proxy = await startPostgresProxy({ host: cluster.host, port: cluster.port });
    const sink = postgresSink(
      cluster,
      database,
      { table: 'lost_at_restart', writeMode: 'append' },
      { settings: { port: proxy.port, publishBudgetMs: 60_000 } },
    );
    try {
      const writer = await prepareSink(sink, runContext({ columns, runId: 'at-commit', logger }), [[[1n, 'once']]]);
      let stopping: Promise<void> | undefined;
      proxy.rule((message) => {
        // The publish's COMMIT reaches the server, its answer is dropped, and the server stops.
        if (stopping === undefined && message.text === 'COMMIT') {
          stopping = cluster.stopServer();
          return 'cut-after';
        }
        return 'pass';
      });
      const publishing = writer.publish();
      let settled = false;
      publishing.then(
        () => (settled = true),
        () => (settled = true),
      );
      try {
        await waitUntil(() => stopping !== undefined, 'the COMMIT was sent');
        await stopping;
        await waitUntil(() => lines.filter((line) => line.msg === 'PostgreSQL publish tried again').length >= 2, 'the publish tried again twice', {
          gaveUp: () => settled,
        });
      } finally {
        await stopping?.catch(() => undefined);
        await cluster.startServer();
      }
      const result = await publishing;

      // The server most likely committed before it stopped (then the ledger adopts it); a shutdown
      // faster than the COMMIT rolls it back and a later try publishes: exact either way.
      expect(result).toMatchObject({ rows: 1, details: { writeMode: 'append', sentRows: 1 } });
      expect(result.details?.tries).toBeGreaterThanOrEqual(3);
    } finally {
      await proxy.stop();
    }
    expect(await query('SELECT id::text, title FROM lost_at_restart')).toEqual([{ id: '1', title: 'once' }]);
    expect(await query("SELECT run_id, rows::text FROM _tilehouse_runs WHERE target_table = 'public.lost_at_restart'")).toEqual([
      { run_id: 'at-commit', rows: '1' },
    ]);
    expect(await query("SELECT relname FROM pg_class WHERE relname LIKE '\\_tilehouse\\_stage\\_%'")).toEqual([]);
  });

  it('verify-full against a self-signed certificate is postgres_connection_failed; with it as sslrootcert an IP connects, without DEP0123', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'tilehouse-pg-tls-'));
    try {
      const certificate = join(cluster.dataDirectory, 'server.crt');
      const key = join(cluster.dataDirectory, 'server.key');
      await run('openssl', [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '2',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
        '-keyout',
        key,
        '-out',
        certificate,
      ]);
      await chmod(key, 0o600);
      if (userInfo().uid === 0) {
        // The cluster runs as nobody (test/support/postgres-cluster.ts), which must own its key.
        const uid = Number((await run('id', ['-u', 'nobody'])).stdout.trim());
        const gid = Number((await run('id', ['-g', 'nobody'])).stdout.trim());
        await chown(key, uid, gid);
        await chown(certificate, uid, gid);
      }
      await query('ALTER SYSTEM SET ssl = on');
      await query('SELECT pg_reload_conf()');
      await waitUntil(async () => (await query<{ ssl: string }>("SELECT current_setting('ssl') AS ssl"))[0]!.ssl === 'on', 'the server takes TLS');
      const rootCertificate = join(directory, 'root.crt');
      await writeFile(rootCertificate, await readFile(certificate));
      const context = { jobName: 'open_incidents', logger: runContext({ columns }).logger };

      const warnings: string[] = [];
      const onWarning = (warning: Error & { code?: string }) => warnings.push(`${warning.code ?? ''} ${warning.message}`);
      process.on('warning', onWarning);
      try {
        const untrusted = postgresSink(cluster, database, { table: 'tls' }, { settings: { sslmode: 'verify-full' } });
        const refused = untrusted.checkAccess(context);
        await expect(refused).rejects.toMatchObject({ code: 'postgres_connection_failed', transient: false, targetKind: 'postgres' });
        await expect(refused).rejects.toThrow('self-signed certificate');

        const trusted = postgresSink(cluster, database, { table: 'tls' }, { settings: { sslmode: 'verify-full', sslrootcert: rootCertificate } });
        await expect(trusted.checkAccess(context)).resolves.toContain('PostgreSQL 15');
        await runSink(trusted, runContext({ columns, runId: 'tls' }), [[[1n, 'encrypted']]]);
        // A warning is emitted on the next tick.
        await new Promise((resolve) => setImmediate(resolve));
      } finally {
        process.off('warning', onWarning);
      }
      // Node's DEP0123 for an IP as the TLS servername: printed once per process on main, on the first connection above.
      expect(warnings.filter((warning) => warning.includes('DEP0123'))).toEqual([]);
      expect(await query('SELECT id::text, title FROM tls')).toEqual([{ id: '1', title: 'encrypted' }]);
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });
});
