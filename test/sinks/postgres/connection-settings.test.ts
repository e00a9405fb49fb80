import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresConnectionSchema } from '../../../src/config/postgres-connection-schema.js';
import { parseDatabaseUrl, resolvePostgresConnection, uncheckedPostgresSecrets } from '../../../src/sinks/postgres/connection-settings.js';
import { applicationName } from '../../../src/sinks/postgres/postgres-client.js';

describe('parseDatabaseUrl', () => {
  it('reads user, percent-encoded password, host, port, database and sslmode', () => {
    expect(parseDatabaseUrl('postgresql://load%40er:p%2Fa%3As@db.example.com:6432/analytics?sslmode=verify-ca&sslrootcert=/ca.pem')).toEqual({
      parts: {
        protocol: 'postgresql:',
        hostname: 'db.example.com',
        port: 6432,
        database: 'analytics',
        user: 'load@er',
        password: 'p/a:s',
        sslmode: 'verify-ca',
        sslrootcert: '/ca.pem',
      },
    });
    expect(parseDatabaseUrl('postgres://u:p@[::1]/db')).toMatchObject({ parts: { hostname: '::1', port: 5432 } });
  });

  it('names what is wrong without quoting the url, which holds the password', () => {
    const problems = [
      parseDatabaseUrl('mysql://u:secret@h/db'),
      parseDatabaseUrl('postgres://u@h/db'),
      parseDatabaseUrl('postgres://u:secret@h/db?options=-csearch_path%3Dx'),
      parseDatabaseUrl('postgres://u:secret@h/db?sslmode=verify'),
    ].map((parsed) => ('problem' in parsed ? parsed.problem : 'parsed'));
    expect(problems).toEqual([
      'must start with postgres:// or postgresql://',
      'password: holds no password (postgres://user:<password>@host/db)',
      'has query parameters tilehouse does not read: options (it reads sslmode and sslrootcert)',
      expect.stringMatching(/^sslmode: /),
    ]);
    for (const problem of problems) expect(String(problem)).not.toContain('secret');
  });
});

describe('resolvePostgresConnection', () => {
  let directory: string;
  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'tilehouse-pg-settings-'));
  });
  afterAll(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  it('reads the password from a mounted file without its trailing newline, and defaults to verify-full', async () => {
    const file = join(directory, 'password');
    await writeFile(file, 'from-the-file\n');
    const settings = postgresConnectionSchema.parse({ host: 'db', database: 'd', user: 'u', passwordFile: file });
    expect(await resolvePostgresConnection(settings, 'config/prod.yaml', {})).toMatchObject({ password: 'from-the-file', port: 5432, sslmode: 'verify-full' });
  });

  it('names the variable that is not set, never a value', async () => {
    const settings = postgresConnectionSchema.parse({ host: 'db', database: 'd', user: 'u', password: '${PG_PASSWORD}' });
    await expect(resolvePostgresConnection(settings, 'config/prod.yaml', {})).rejects.toThrow(
      'config/prod.yaml: sinks.postgres.password = "${PG_PASSWORD}": environment variable PG_PASSWORD is not set',
    );
  });

  it("takes a url's parts, the section's sslmode over the url's", async () => {
    const settings = postgresConnectionSchema.parse({ url: '${DATABASE_URL}', sslmode: 'require', schema: 'tiles' });
    const resolved = await resolvePostgresConnection(settings, 'c.yaml', { DATABASE_URL: 'postgres://loader:pw@db:6432/wh?sslmode=disable' });
    expect(resolved).toMatchObject({ host: 'db', port: 6432, database: 'wh', user: 'loader', password: 'pw', sslmode: 'require', schema: 'tiles' });
  });

  it('tells validate which secrets cannot be resolved here, reading none', async () => {
    const settings = postgresConnectionSchema.parse({ url: '${DATABASE_URL}' });
    expect(await uncheckedPostgresSecrets(settings, 'c.yaml', {})).toEqual({
      unchecked: [
        { file: 'c.yaml', path: ['sinks', 'postgres', 'url'], value: '${DATABASE_URL}', message: 'environment variable DATABASE_URL is not set here' },
      ],
      invalid: [],
    });
    expect(await uncheckedPostgresSecrets(settings, 'c.yaml', { DATABASE_URL: 'postgres://u@h/db' })).toEqual({
      unchecked: [],
      invalid: [expect.objectContaining({ message: 'the url in DATABASE_URL password: holds no password (postgres://user:<password>@host/db)' })],
    });
    const fromFile = postgresConnectionSchema.parse({ host: 'h', database: 'd', user: 'u', passwordFile: join(directory, 'absent') });
    expect((await uncheckedPostgresSecrets(fromFile, 'c.yaml', {})).unchecked).toEqual([
      expect.objectContaining({ path: ['sinks', 'postgres', 'passwordFile'], message: 'the secret file cannot be read here (ENOENT)' }),
    ]);
  });
});

describe('applicationName', () => {
  it('is tilehouse and the job, cut to the 63 bytes the server keeps', () => {
    expect(applicationName('daily')).toBe('tilehouse daily');
    expect(Buffer.byteLength(applicationName('ü'.repeat(60)))).toBeLessThanOrEqual(63);
  });
});
