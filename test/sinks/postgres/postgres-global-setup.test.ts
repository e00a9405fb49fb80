// The test harness itself: how the vitest global setup finds, starts and provides PostgreSQL and PgBouncer.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { providePostgres } from '../../support/global-setup.js';
import { postgresOrSkip, psql, usePostgresDatabase, postgresBlocker } from '../../support/postgres.js';
import { describeUnless } from '../../support/skip.js';

describe('providePostgres', () => {
  let empty: string;

  beforeAll(async () => {
    empty = await mkdtemp(join(tmpdir(), 'tilehouse-no-postgres-'));
  });

  afterAll(async () => {
    await rm(empty, { recursive: true, force: true });
  });

  it('fails the run under CI when PostgreSQL is not installed, saying what to install', async () => {
    const provided: unknown[] = [];
    const setup = providePostgres({ provide: (key, value) => provided.push([key, value]) }, { env: { PATH: empty, CI: 'true' }, debianRoot: empty });

    await expect(setup).rejects.toThrow("Debian's postgresql and pgbouncer packages");
    expect(provided).toEqual([]);
  });

  it('provides null outside CI, so the postgres tests are skipped', async () => {
    const provided: unknown[] = [];
    const teardown = await providePostgres({ provide: (key, value) => provided.push([key, value]) }, { env: { PATH: empty }, debianRoot: empty });

    expect(provided).toEqual([['postgres', null]]);
    await teardown();
  });

  it('refuses a POSTGRES_BIN_DIR without pg_ctl instead of looking elsewhere', async () => {
    const setup = providePostgres({ provide: () => undefined }, { env: { POSTGRES_BIN_DIR: empty } });

    await expect(setup).rejects.toThrow(/POSTGRES_BIN_DIR=.* holds no executable pg_ctl/);
  });
});

const server = postgresOrSkip();

describeUnless(postgresBlocker(server))('the run cluster (PostgreSQL 15 and PgBouncer)', () => {
  const database = usePostgresDatabase(server!);

  it('gives each test file its own database, reachable straight and through PgBouncer', async () => {
    const straight = await psql(server!, database.name, 'SELECT current_database()');
    const pooled = await psql(server!, database.name, 'SELECT current_database()', { port: server!.bouncerPort });

    expect(straight.trim()).toBe(database.name);
    expect(pooled.trim()).toBe(database.name);
    expect(server!.version).toBeGreaterThanOrEqual(15);
  });

  it('pools by transaction through PgBouncer: a session SET of one client reaches the next client on its server connection', async () => {
    // What the sink must never rely on: outside a transaction the server connection goes back to
    // the pool (LIFO), and the next client gets it with the setting still on. statement_timeout
    // is not one of the parameters PgBouncer tracks per client.
    await psql(server!, database.name, "SET statement_timeout = '12345ms'", { port: server!.bouncerPort });
    const pooled = await psql(server!, database.name, 'SHOW statement_timeout', { port: server!.bouncerPort });
    await psql(server!, database.name, "SET statement_timeout = '12345ms'");
    const straight = await psql(server!, database.name, 'SHOW statement_timeout');

    expect(pooled.trim()).toBe('12345ms');
    expect(straight.trim()).toBe('0');
  });
});
