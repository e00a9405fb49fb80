import { readFile } from 'node:fs/promises';
import { awsSigningScopeOf } from '../../config/aws-signing-scope.js';
import { ConfigError } from '../../config/config-error.js';
import { TilehouseError } from '../../errors.js';
import type { IcebergDefaults, PostgresDefaults } from '../../config/environment-schema.js';
import { registerSecret } from '../../secret-scrubber.js';
import { resolvePostgresConnection } from '../postgres/connection-settings.js';
import { connectPostgres } from '../postgres/postgres-client.js';
import type { IcebergCatalog } from './catalog.js';
import { openJdbcCatalog } from './jdbc-catalog.js';
import type { RestCatalogAuth } from './rest-auth.js';
import { openRestCatalog } from './rest-catalog.js';
import { warehouseUri } from './iceberg-names.js';
import type { Logger } from '../../log.js';
import { VendedCredentialBook } from './vended-credentials.js';

/**
 * `sinks.iceberg.catalog` opened: the REST catalog with its bearer token or its OAuth2 client
 * secret (each `${ENV}` or a mounted file, registered with the scrubber), AWS SigV4 (the signing
 * name and region given, or the uri's, or the region of the AWS environment) or Google
 * credentials, or the JDBC catalog on PostgreSQL, connected as the
 * postgres sink connects (sinks.postgres's resolution and libpq's sslmode meanings).
 */
type Environment = Readonly<Record<string, string | undefined>>;

const ENV_REFERENCE = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/;

const SECTION = 'sinks.iceberg.catalog';

/** A secret of `sinks.iceberg.catalog` from the file or the `${ENV}` reference given (the field names whichever is set), registered with the scrubber; undefined when neither is. */
async function secretOf(
  given: { file: string | undefined; reference: string | undefined },
  fields: { file: string; reference: string; what: string },
  configFile: string,
  env: Environment,
): Promise<string | undefined> {
  if (given.file !== undefined) {
    let value: string;
    try {
      value = (await readFile(given.file, 'utf8')).replace(/\r?\n$/, '');
    } catch (error) {
      throw ConfigError.single({
        file: configFile,
        field: `${SECTION}.${fields.file}`,
        value: JSON.stringify(given.file),
        message: `cannot read the ${fields.what} file (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
      });
    }
    if (value === '')
      throw ConfigError.single({
        file: configFile,
        field: `${SECTION}.${fields.file}`,
        value: JSON.stringify(given.file),
        message: `the ${fields.what} file is empty`,
      });
    registerSecret(value, { permanent: true });
    return value;
  }
  if (given.reference === undefined) return undefined;
  const variable = ENV_REFERENCE.exec(given.reference)?.[1];
  const value = variable === undefined ? undefined : env[variable];
  if (value === undefined || value === '')
    throw ConfigError.single({
      file: configFile,
      field: `${SECTION}.${fields.reference}`,
      value: JSON.stringify(given.reference),
      message: `environment variable ${variable} is not set`,
    });
  registerSecret(value, { permanent: true });
  return value;
}

/** How the REST catalog is authenticated: `auth` (OAuth2 client credentials, AWS SigV4, Google), a bearer token (`token` / `tokenFile`), or none. */
async function restAuth(
  settings: Extract<IcebergDefaults['catalog'], { type: 'rest' }>,
  configFile: string,
  env: Environment,
  options: CatalogOptions,
): Promise<RestCatalogAuth | undefined> {
  const { auth } = settings;
  if (auth?.type === 'sigv4') {
    const fromUri = awsSigningScopeOf(settings.uri);
    const signingRegion = auth.signingRegion ?? fromUri.signingRegion ?? (env.AWS_REGION || env.AWS_DEFAULT_REGION || undefined);
    if (signingRegion === undefined)
      throw ConfigError.single({
        file: configFile,
        field: `${SECTION}.auth.signingRegion`,
        message: `the uri ${settings.uri} names no AWS region and neither AWS_REGION nor AWS_DEFAULT_REGION is set: set signingRegion`,
      });
    // The schema refuses a sigv4 catalog whose signing name is neither given nor in its uri.
    return { type: 'sigv4', signingName: auth.signingName ?? fromUri.signingName!, signingRegion };
  }
  if (auth?.type === 'google')
    return {
      type: 'google',
      ...(auth.userProject === undefined ? {} : { userProject: auth.userProject }),
      ...(options.googleCredentialsWaitMs === undefined ? {} : { credentialsWaitMs: options.googleCredentialsWaitMs }),
    };
  if (auth !== undefined) {
    const clientSecret = await secretOf(
      { file: auth.clientSecretFile, reference: auth.clientSecret },
      { file: 'auth.clientSecretFile', reference: 'auth.clientSecret', what: 'client secret' },
      configFile,
      env,
    );
    return {
      type: 'oauth2',
      clientId: auth.clientId,
      // The schema requires one of the two.
      clientSecret: clientSecret!,
      ...(auth.scope === undefined ? {} : { scope: auth.scope }),
      ...(auth.serverUri === undefined ? {} : { serverUri: auth.serverUri }),
    };
  }
  const token = await secretOf(
    { file: settings.tokenFile, reference: settings.token },
    { file: 'tokenFile', reference: 'token', what: 'token' },
    configFile,
    env,
  );
  return token === undefined ? undefined : { type: 'bearer', token };
}

/** The JDBC catalog's connection as the postgres sink resolves one (the settings it does not use filled with theirs). */
function asPostgresSettings(catalog: Extract<IcebergDefaults['catalog'], { type: 'jdbc' }>): PostgresDefaults {
  const { type: _type, catalogName: _name, ...connection } = catalog;
  return { ...connection, schema: 'public', statementTimeoutMs: 600_000, lockTimeoutMs: 2_000, publishBudgetMs: 120_000 };
}

/** What the rest of the environment and the sink say of a catalog's credentials. */
export interface CatalogOptions {
  /** `googleCredentialsWaitMs`, for a catalog with `auth: { type: google }`. */
  googleCredentialsWaitMs?: number | undefined;
  /** The sink's book of vended credentials (`accessDelegation`). */
  book?: VendedCredentialBook | undefined;
  /** Where a catalog that vends none is told. */
  logger?: Logger | undefined;
}

/**
 * Where a sink keeps the storage credentials its catalog vends (`accessDelegation`), for its whole
 * life; undefined when the catalog is not asked for any (the table's files go with the environment's).
 */
export function vendedCredentialBookFor(settings: IcebergDefaults): VendedCredentialBook | undefined {
  return settings.catalog.type === 'rest' && settings.catalog.accessDelegation !== undefined ? new VendedCredentialBook() : undefined;
}

export async function openConfiguredCatalog(
  settings: IcebergDefaults,
  configFile: string,
  at: { jobName: string; target: string },
  env: Environment = process.env,
  options: CatalogOptions = {},
): Promise<IcebergCatalog> {
  const { catalog } = settings;
  if (catalog.type === 'rest') {
    const auth = await restAuth(catalog, configFile, env, options);
    return openRestCatalog({
      uri: catalog.uri,
      requestTimeoutMs: catalog.requestTimeoutMs,
      // Where a table created without a location goes: a run creates its table as it opens when credentials are vended for it.
      location: warehouseUri(settings.location),
      ...(catalog.warehouse === undefined ? {} : { warehouse: catalog.warehouse }),
      ...(catalog.tableProperties === undefined ? {} : { tableProperties: catalog.tableProperties }),
      ...(auth === undefined ? {} : { auth }),
      ...(catalog.accessDelegation === undefined ? {} : { accessDelegation: catalog.accessDelegation }),
      ...(options.book === undefined ? {} : { vendedCredentials: options.book }),
      ...(options.logger === undefined ? {} : { logger: options.logger }),
    });
  }
  const connection = await resolvePostgresConnection(asPostgresSettings(catalog), configFile, env, SECTION);
  return openJdbcCatalog({
    catalogName: catalog.catalogName,
    warehouse: warehouseUri(settings.location),
    connection: { host: connection.host, port: connection.port, database: connection.database, user: connection.user },
    // The catalog judges the server's answer itself (by SQLSTATE): the driver's error, without the
    // sink's wording (a connection error's "nothing was published" is not the catalog's to say).
    connect: () =>
      connectPostgres(connection, at).catch((error: unknown) => {
        throw error instanceof TilehouseError && error.cause !== undefined ? error.cause : error;
      }),
  });
}
