import { describe, expect, it } from 'vitest';
import { postgresConnectionSchema } from '../../../src/config/postgres-connection-schema.js';
import { postgresSinkSchema } from '../../../src/config/postgres-sink-schema.js';
import { postgresTargetOf } from '../../../src/sinks/postgres/descriptor.js';

describe('postgresTargetOf', () => {
  const settings = postgresConnectionSchema.parse({ host: 'db.internal', port: 6432, database: 'wh', user: 'u', password: '${P}', schema: 'tiles' });

  it("gives a target's host, port, database, schema and table, the sink's own schema and table first", () => {
    expect(postgresTargetOf(postgresSinkSchema.parse({ type: 'postgres' }), settings, 'daily')).toEqual({
      host: 'db.internal',
      port: 6432,
      database: 'wh',
      schema: 'tiles',
      table: 'daily',
    });
    expect(
      postgresTargetOf(postgresSinkSchema.parse({ type: 'postgres', table: 'Daily Counts', postgresSchema: 'reporting' }), settings, 'daily'),
    ).toMatchObject({
      schema: 'reporting',
      table: 'Daily Counts',
    });
  });

  it('is undefined when the server is named only by a url, a secret read at run time', () => {
    expect(
      postgresTargetOf(postgresSinkSchema.parse({ type: 'postgres' }), postgresConnectionSchema.parse({ url: '${DATABASE_URL}' }), 'daily'),
    ).toBeUndefined();
  });
});
