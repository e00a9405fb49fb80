import { describe, expect, it } from 'vitest';
import { postgresConnectionSchema } from '../../src/config/postgres-connection-schema.js';
import { postgresSinkSchema } from '../../src/config/postgres-sink-schema.js';

const issues = (result: { success: boolean; error?: { issues: Array<{ path: PropertyKey[]; message: string }> } }) =>
  (result.error?.issues ?? []).map((issue) => `${issue.path.join('.')}: ${issue.message}`);

describe('postgresSinkSchema', () => {
  it('refuses a table name over 63 bytes, counting bytes, not characters', () => {
    // 32 two-byte characters are 64 bytes: PostgreSQL would cut the name silently.
    expect(issues(postgresSinkSchema.safeParse({ type: 'postgres', table: 'é'.repeat(32) }))).toEqual([
      'table: is 64 bytes long; PostgreSQL keeps only 63 bytes of a name (NAMEDATALEN) and would cut it silently',
    ]);
    expect(issues(postgresSinkSchema.safeParse({ type: 'postgres', postgresSchema: 'x'.repeat(64) }))).toHaveLength(1);
  });

  it('takes a 63-byte name with capitals, spaces and quotes, since every name is quoted', () => {
    const table = `${'é'.repeat(29)}A "q"`;
    expect(Buffer.byteLength(table)).toBe(63);
    expect(postgresSinkSchema.parse({ type: 'postgres', table }).table).toBe(table);
    expect(postgresSinkSchema.parse({ type: 'postgres', table: 'a'.repeat(63) }).table).toHaveLength(63);
  });

  it('needs primaryKey for merge and partitionBy for partition, and refuses them in other modes', () => {
    expect(issues(postgresSinkSchema.safeParse({ type: 'postgres', writeMode: 'merge' }))).toEqual([
      'writeMode: writeMode: merge needs primaryKey: the columns whose values identify a row',
    ]);
    expect(issues(postgresSinkSchema.safeParse({ type: 'postgres', writeMode: 'partition' }))).toEqual([
      'writeMode: writeMode: partition needs partitionBy.column: the DATE or TIMESTAMP column whose days a run replaces',
    ]);
    expect(issues(postgresSinkSchema.safeParse({ type: 'postgres', latestBy: 'updated' }))).toEqual([
      "latestBy: only with writeMode: merge (this sink's is replace)",
    ]);
    expect(issues(postgresSinkSchema.safeParse({ type: 'postgres', partitionBy: { column: 'day' } }))).toEqual([
      "partitionBy: only with writeMode: partition (this sink's is replace)",
    ]);
  });
});

describe('postgresConnectionSchema', () => {
  const base = { host: 'db.internal', database: 'analytics', user: 'tilehouse' };

  it('refuses a literal password, and takes ${ENV} or a file', () => {
    expect(issues(postgresConnectionSchema.safeParse({ ...base, password: 'hunter2' }))).toEqual([
      'password: must be a reference like ${TILEHOUSE_POSTGRES_PASSWORD}; literal secrets are refused in YAML',
    ]);
    expect(postgresConnectionSchema.parse({ ...base, password: '${PGPASS}' })).toMatchObject({ schema: 'public', lockTimeoutMs: 2000 });
    expect(postgresConnectionSchema.parse({ ...base, passwordFile: '/var/run/secrets/pg/password' }).passwordFile).toBe('/var/run/secrets/pg/password');
    expect(issues(postgresConnectionSchema.safeParse(base))).toEqual(['password: set exactly one of password (${ENV_NAME}) or passwordFile']);
  });

  it('takes a url only as ${ENV} or a file, and not together with the fields it holds', () => {
    expect(issues(postgresConnectionSchema.safeParse({ url: 'postgres://u:p@h/db' }))).toEqual([
      'url: must be a reference like ${DATABASE_URL}; literal secrets are refused in YAML',
    ]);
    expect(postgresConnectionSchema.parse({ url: '${DATABASE_URL}', sslmode: 'require' }).sslmode).toBe('require');
    expect(issues(postgresConnectionSchema.safeParse({ url: '${DATABASE_URL}', host: 'db.internal' }))).toEqual([
      'host: the url already says it: set either the url or the separate fields',
    ]);
  });

  it('refuses an sslmode libpq does not know', () => {
    expect(issues(postgresConnectionSchema.safeParse({ ...base, password: '${P}', sslmode: 'verify' }))).toHaveLength(1);
  });
});
