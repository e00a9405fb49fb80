import { readFile } from 'node:fs/promises';
import { ConfigError } from '../../config/config-error.js';
import type { IcebergDefaults, PostgresDefaults } from '../../config/environment-schema.js';
import { registerSecret } from '../../secret-scrubber.js';
import { resolvePostgresConnection } from '../postgres/connection-settings.js';
import { connectPostgres } from '../postgres/postgres-client.js';
import type { IcebergCatalog } from './catalog.js';
import { openJdbcCatalog } from './jdbc-catalog.js';
import { openRestCatalog } from './rest-catalog.js';
import { warehouseUri } from './iceberg-names.js';

/**
 * `sinks.iceberg.catalog` opened: the REST catalog with its bearer token (`${ENV}` or a mounted
 * file, registered with the scrubber), or the JDBC catalog on PostgreSQL, connected as the
 * postgres sink connects (sinks.postgres's resolution and libpq's sslmode meanings).
 */
type Environment = Readonly<Record<string, string | undefined>>;

const ENV_REFERENCE = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/;

const SECTION = 'sinks.iceberg.catalog';

/** The REST catalog's token, or undefined when none is set. */
async function restToken(settings: Extract<IcebergDefaults['catalog'], { type: 'rest' }>, configFile: string, env: Environment): Promise<string | undefined> {
  if (settings.tokenFile !== undefined) {
    let value: string;
    try {
      value = (await readFile(settings.tokenFile, 'utf8')).replace(/\r?\n$/, '');
    } catch (error) {
      throw ConfigError.single({
        file: configFile,
        field: `${SECTION}.tokenFile`,
        value: JSON.stringify(settings.tokenFile),
        message: `cannot read the token file (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
      });
    }
    if (value === '')
      throw ConfigError.single({
        file: configFile,
        field: `${SECTION}.tokenFile`,
        value: JSON.stringify(settings.tokenFile),
        message: 'the token file is empty',
      });
    registerSecret(value, { permanent: true });
    return value;
  }
  if (settings.token === undefined) return undefined;
  const variable = ENV_REFERENCE.exec(settings.token)?.[1];
  const value = variable === undefined ? undefined : env[variable];
  if (value === undefined || value === '')
    throw ConfigError.single({
      file: configFile,
      field: `${SECTION}.token`,
      value: JSON.stringify(settings.token),
      message: `environment variable ${variable} is not set`,
    });
  registerSecret(value, { permanent: true });
  return value;
}

/** The JDBC catalog's connection as the postgres sink resolves one (the settings it does not use filled with theirs). */
function asPostgresSettings(catalog: Extract<IcebergDefaults['catalog'], { type: 'jdbc' }>): PostgresDefaults {
  const { type: _type, catalogName: _name, ...connection } = catalog;
  return { ...connection, schema: 'public', statementTimeoutMs: 600_000, lockTimeoutMs: 2_000, publishBudgetMs: 120_000 };
}

export async function openConfiguredCatalog(
  settings: IcebergDefaults,
  configFile: string,
  at: { jobName: string; target: string },
  env: Environment = process.env,
): Promise<IcebergCatalog> {
  const { catalog } = settings;
  if (catalog.type === 'rest') {
    const token = await restToken(catalog, configFile, env);
    return openRestCatalog({
      uri: catalog.uri,
      requestTimeoutMs: catalog.requestTimeoutMs,
      ...(catalog.warehouse === undefined ? {} : { warehouse: catalog.warehouse }),
      ...(token === undefined ? {} : { token }),
    });
  }
  const connection = await resolvePostgresConnection(asPostgresSettings(catalog), configFile, env, SECTION);
  return openJdbcCatalog({
    catalogName: catalog.catalogName,
    warehouse: warehouseUri(settings.location),
    connection: { host: connection.host, port: connection.port, database: connection.database, user: connection.user },
    connect: () => connectPostgres(connection, at),
  });
}
