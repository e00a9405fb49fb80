import { constants } from 'node:fs';
import { access, readFile } from 'node:fs/promises';
import { z } from 'zod';
import { ConfigError } from '../../config/config-error.js';
import type { PostgresDefaults } from '../../config/environment-schema.js';
import { SSL_MODES, type SslMode } from '../../config/postgres-connection-schema.js';
import { postgresIdentifierProblem } from '../../config/postgres-sink-schema.js';
import { registerSecret } from '../../secret-scrubber.js';
import type { WorkspaceProblem } from '../workspace-checks.js';
import type { LineageDatasetName } from '../lineage-dataset-name.js';

const ENV_REFERENCE = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/;

/** Where a run connects, every secret resolved: what the driver is given (see postgres-client.ts). */
export interface PostgresConnection {
  host: string;
  port: number;
  database: string;
  user: string;
  password: string;
  /** The schema of the tables, staging tables and the run ledger. */
  schema: string;
  sslmode: SslMode;
  /** The CA file's path (its bytes are read at connect). */
  sslrootcert: string | undefined;
  statementTimeoutMs: number;
  lockTimeoutMs: number;
  publishBudgetMs: number;
  /** OpenLineage's `postgres://host:port` of the server when it is not host:port (a pooler in front). */
  lineageNamespace?: string | undefined;
  /** OpenLineage's database name when it is not `database` (a pooler's alias). */
  lineageDatabase?: string | undefined;
}

/**
 * OpenLineage's naming of a PostgreSQL table: `postgres://host:port` / `database.schema.table`,
 * the server's own address and database when `lineageNamespace` / `lineageDatabase` say them
 * (a PgBouncer or a proxy in front: its address would make another node than dbt's or Airflow's).
 * The open writer and the sink's planned dataset (a run that failed before opening) both name it here.
 */
export function postgresLineageDataset(
  connection: Pick<PostgresConnection, 'host' | 'port' | 'database' | 'lineageNamespace' | 'lineageDatabase'>,
  table: { schema: string; table: string },
): LineageDatasetName {
  const { host, port, database, lineageNamespace, lineageDatabase } = connection;
  const hostPort = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  return { namespace: lineageNamespace ?? `postgres://${hostPort}`, name: `${lineageDatabase ?? database}.${table.schema}.${table.table}` };
}

/** A postgres:// URL's parts, checked once at this edge. */
const urlSchema = z.object({
  protocol: z.enum(['postgres:', 'postgresql:'], { message: 'must start with postgres:// or postgresql://' }),
  hostname: z.string().min(1, 'names no host'),
  port: z.number().int().min(1).max(65_535),
  database: z.string().min(1, 'names no database (postgres://host/<database>)'),
  user: z.string().min(1, 'names no user (postgres://<user>:<password>@host/db)'),
  password: z.string().min(1, 'holds no password (postgres://user:<password>@host/db)'),
  sslmode: z.enum(SSL_MODES).optional(),
  sslrootcert: z.string().min(1).optional(),
});

type UrlParts = z.infer<typeof urlSchema>;

/** The URL's query parameters tilehouse reads; any other is refused by name, never ignored. */
const URL_PARAMETERS = new Set(['sslmode', 'sslrootcert']);

/** A DATABASE_URL-style URL's parts, or the problem with it (never quoting the URL: it holds the password). */
export function parseDatabaseUrl(text: string): { parts: UrlParts } | { problem: string } {
  let url: URL;
  try {
    url = new URL(text.trim());
  } catch {
    return { problem: 'is not a URL (postgres://user:password@host:5432/database)' };
  }
  const unknown = [...url.searchParams.keys()].filter((key) => !URL_PARAMETERS.has(key));
  if (unknown.length > 0) return { problem: `has query parameters tilehouse does not read: ${unknown.join(', ')} (it reads sslmode and sslrootcert)` };
  const decode = (value: string) => {
    try {
      return decodeURIComponent(value);
    } catch {
      return value;
    }
  };
  const parsed = urlSchema.safeParse({
    protocol: url.protocol,
    hostname: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: url.port === '' ? 5432 : Number(url.port),
    database: decode(url.pathname.replace(/^\//, '')),
    user: decode(url.username),
    password: decode(url.password),
    ...(url.searchParams.has('sslmode') ? { sslmode: url.searchParams.get('sslmode') } : {}),
    ...(url.searchParams.has('sslrootcert') ? { sslrootcert: url.searchParams.get('sslrootcert') } : {}),
  });
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    return { problem: `${issue.path.join('.') === 'protocol' ? '' : `${issue.path.join('.')}: `}${issue.message}` };
  }
  const databaseProblem = postgresIdentifierProblem(parsed.data.database);
  if (databaseProblem !== undefined) return { problem: `database ${databaseProblem}` };
  return { parts: parsed.data };
}

type Environment = Readonly<Record<string, string | undefined>>;

async function secretFrom(
  configFile: string,
  section: string,
  field: string,
  reference: string | undefined,
  filePath: string | undefined,
  env: Environment,
): Promise<string> {
  if (filePath !== undefined) {
    try {
      // A Kubernetes Secret mount often ends with a newline that is not part of the secret.
      const value = (await readFile(filePath, 'utf8')).replace(/\r?\n$/, '');
      if (value === '') throw new Error('file is empty');
      registerSecret(value, { permanent: true });
      return value;
    } catch (error) {
      throw ConfigError.single({
        file: configFile,
        field: `${section}.${field}File`,
        value: JSON.stringify(filePath),
        message: `cannot read the secret file (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
      });
    }
  }
  const variable = ENV_REFERENCE.exec(reference ?? '')?.[1];
  if (variable === undefined)
    throw ConfigError.single({
      file: configFile,
      field: `${section}.${field}`,
      message: 'a literal secret is refused (the value is not shown); use ${ENV_NAME} or a file',
    });
  const value = env[variable];
  if (value === undefined || value === '')
    throw ConfigError.single({
      file: configFile,
      field: `${section}.${field}`,
      value: JSON.stringify(reference),
      message: `environment variable ${variable} is not set`,
    });
  registerSecret(value, { permanent: true });
  return value;
}

/** A user given literally or as `${ENV}` (user names are not secret). */
function userFrom(configFile: string, section: string, user: string, env: Environment): string {
  const variable = ENV_REFERENCE.exec(user)?.[1];
  if (variable === undefined) return user;
  const value = env[variable];
  if (value === undefined || value === '')
    throw ConfigError.single({
      file: configFile,
      field: `${section}.user`,
      value: JSON.stringify(user),
      message: `environment variable ${variable} is not set`,
    });
  return value;
}

/**
 * The environment's `sinks.postgres`, every secret read (from `${ENV}` or a mounted file, then
 * registered with the secret scrubber so no log line carries it). A URL's sslmode is its own
 * unless the section sets one; libpq's default would be `prefer`, tilehouse's is `verify-full`.
 */
export async function resolvePostgresConnection(
  settings: PostgresDefaults,
  configFile: string,
  env: Environment = process.env,
  /** Where the settings are in the environment file, for the errors (the JDBC catalog's: `sinks.iceberg.catalog`). */
  section = 'sinks.postgres',
): Promise<PostgresConnection> {
  const common = {
    schema: settings.schema,
    statementTimeoutMs: settings.statementTimeoutMs,
    lockTimeoutMs: settings.lockTimeoutMs,
    publishBudgetMs: settings.publishBudgetMs,
    lineageNamespace: settings.lineageNamespace,
    lineageDatabase: settings.lineageDatabase,
  };
  if (settings.url !== undefined || settings.urlFile !== undefined) {
    const text = await secretFrom(configFile, section, 'url', settings.url, settings.urlFile, env);
    const parsed = parseDatabaseUrl(text);
    if ('problem' in parsed) {
      throw ConfigError.single({
        file: configFile,
        field: `${section}.${settings.urlFile !== undefined ? 'urlFile' : 'url'}`,
        message: `the url ${parsed.problem} (the url is not shown: it holds the password)`,
      });
    }
    const { parts } = parsed;
    registerSecret(parts.password, { permanent: true });
    return {
      ...common,
      host: parts.hostname,
      port: parts.port,
      database: parts.database,
      user: parts.user,
      password: parts.password,
      sslmode: settings.sslmode ?? parts.sslmode ?? 'verify-full',
      sslrootcert: settings.sslrootcert ?? parts.sslrootcert,
    };
  }
  return {
    ...common,
    host: settings.host!,
    port: settings.port ?? 5432,
    database: settings.database!,
    user: userFrom(configFile, section, settings.user!, env),
    password: await secretFrom(configFile, section, 'password', settings.password, settings.passwordFile, env),
    sslmode: settings.sslmode ?? 'verify-full',
    sslrootcert: settings.sslrootcert,
  };
}

/**
 * For `tilehouse validate`, which runs where the secrets are not: each secret of `sinks.postgres`
 * that could not be resolved here (`unchecked`, as the source's), and a url that is here and would
 * not parse (`invalid`: a mistake); no secret value is read into a message. A readable file is
 * taken as resolvable (`check` finds out whether it is right).
 */
/**
 * For the commands that connect (SinkWorkspaceChecker.invalidWhenConnecting): a `urlFile` whose URL
 * does not parse, found before any job starts (config_invalid, exit 2) rather than as each job's
 * failure. The file's text is registered as a secret and never shown; an unreadable or empty file
 * is left to the run, which names it.
 */
export async function unparsableUrlFile(
  settings: Pick<PostgresDefaults, 'urlFile'>,
  configFile: string,
  section: readonly string[] = ['sinks', 'postgres'],
): Promise<WorkspaceProblem[]> {
  if (settings.urlFile === undefined) return [];
  const text = await readFile(settings.urlFile, 'utf8').then(
    (content) => content.replace(/\r?\n$/, ''),
    () => '',
  );
  if (text === '') return [];
  registerSecret(text, { permanent: true });
  const parsed = parseDatabaseUrl(text);
  if (!('problem' in parsed)) return [];
  return [{ file: configFile, path: [...section, 'urlFile'], value: settings.urlFile, message: `the url in this file ${parsed.problem}` }];
}

export async function uncheckedPostgresSecrets(
  settings: Pick<PostgresDefaults, 'url' | 'urlFile' | 'password' | 'passwordFile' | 'sslrootcert'>,
  configFile: string,
  env: Environment = process.env,
  /** Where the settings are in the environment file (the JDBC catalog's: `['sinks', 'iceberg', 'catalog']`). */
  section: readonly string[] = ['sinks', 'postgres'],
): Promise<{ unchecked: WorkspaceProblem[]; invalid: WorkspaceProblem[] }> {
  const problems: WorkspaceProblem[] = [];
  const invalid: WorkspaceProblem[] = [];
  const path = (field: string) => [...section, field];
  for (const [field, reference, file] of [
    ['url', settings.url, settings.urlFile],
    ['password', settings.password, settings.passwordFile],
  ] as const) {
    if (file !== undefined) {
      const code = await access(file, constants.R_OK).then(
        () => undefined,
        (error: NodeJS.ErrnoException) => error.code ?? error.message,
      );
      if (code !== undefined)
        problems.push({ file: configFile, path: path(`${field}File`), value: file, message: `the secret file cannot be read here (${code})` });
      continue;
    }
    const variable = reference === undefined ? undefined : ENV_REFERENCE.exec(reference)?.[1];
    if (variable === undefined) continue;
    const value = env[variable];
    if (value === undefined || value === '') {
      problems.push({ file: configFile, path: path(field), value: reference, message: `environment variable ${variable} is not set here` });
    } else if (field === 'url') {
      const parsed = parseDatabaseUrl(value);
      if ('problem' in parsed) invalid.push({ file: configFile, path: path(field), value: reference, message: `the url in ${variable} ${parsed.problem}` });
    }
  }
  if (settings.sslrootcert !== undefined) {
    const code = await access(settings.sslrootcert, constants.R_OK).then(
      () => undefined,
      (error: NodeJS.ErrnoException) => error.code ?? error.message,
    );
    if (code !== undefined)
      problems.push({ file: configFile, path: path('sslrootcert'), value: settings.sslrootcert, message: `the CA file cannot be read here (${code})` });
  }
  return { unchecked: problems, invalid };
}
