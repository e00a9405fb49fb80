import { pino } from 'pino';
import { postgresConnectionSchema } from '../../../src/config/postgres-connection-schema.js';
import { postgresSinkSchema, type PostgresSinkConfig } from '../../../src/config/postgres-sink-schema.js';
import { PostgresSink } from '../../../src/sinks/postgres/postgres-sink.js';
import type { SinkResult, SinkRunContext } from '../../../src/sinks/sink.js';
import type { TypedRow } from '../../../src/transform/column.js';
import type { PostgresServer } from '../../support/postgres-cluster.js';

export const silentLogger = pino({ level: 'silent' });

import { prepareSink } from '../../support/sink-run-context.js';

export { column, prepareSink, runContext } from '../../support/sink-run-context.js';

/** The variable the test environments name for the password (never literal, as in production). */
export const PASSWORD_VARIABLE = 'TILEHOUSE_TEST_PG_PASSWORD';

/** `sinks.postgres` for the test database, straight to the server or through PgBouncer, parsed by the real schema. */
export function settingsFor(server: PostgresServer, database: string, overrides: Record<string, unknown> = {}, options: { bouncer?: boolean } = {}) {
  return postgresConnectionSchema.parse({
    host: server.host,
    port: options.bouncer ? server.bouncerPort : server.port,
    database,
    user: server.user,
    password: `\${${PASSWORD_VARIABLE}}`,
    sslmode: 'disable',
    ...overrides,
  });
}

export function postgresSink(
  server: PostgresServer,
  database: string,
  config: Partial<PostgresSinkConfig> = {},
  options: { settings?: Record<string, unknown>; bouncer?: boolean; timezone?: string; env?: Record<string, string> } = {},
): PostgresSink {
  return new PostgresSink({
    config: postgresSinkSchema.parse({ type: 'postgres', ...config }),
    settings: settingsFor(server, database, options.settings, options),
    environmentFile: 'config/test.yaml',
    timezone: options.timezone ?? 'UTC',
    guard: undefined,
    env: options.env ?? { [PASSWORD_VARIABLE]: server.password },
  });
}

/** Opens a writer, writes the pages, prepares, publishes; aborts on failure as the pipeline does. */
export async function runSink(sink: PostgresSink, context: SinkRunContext, pages: readonly (readonly TypedRow[])[]): Promise<SinkResult> {
  const writer = await prepareSink(sink, context, pages);
  try {
    return await writer.publish();
  } catch (error) {
    await writer.abort();
    throw error;
  }
}
