import { z } from 'zod';
import { publishGuardSchema } from './publish-guard-schema.js';
import { postgresIdentifierSchema } from './postgres-sink-schema.js';

const ENV_REFERENCE = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/;

/** libpq's sslmode values, with libpq's meanings (docs/postgres.md). */
export const SSL_MODES = ['disable', 'allow', 'prefer', 'require', 'verify-ca', 'verify-full'] as const;
export type SslMode = (typeof SSL_MODES)[number];

const secretReference = (example: string) => z.string().regex(ENV_REFERENCE, `must be a reference like \${${example}}; literal secrets are refused in YAML`);

/**
 * What is wrong with an OpenLineage namespace for a PostgreSQL server, or undefined. The naming
 * spec (openlineage.io/docs/spec/naming) names a server `postgres://{host}:{port}`, nothing more:
 * a user, a password, a database or a parameter would make another node than dbt's or Airflow's
 * (and a password would be printed in every event).
 */
export function lineageNamespaceProblem(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be postgres://host:port, the database server as other producers name it (e.g. postgres://db.internal:5432)';
  }
  if (url.protocol !== 'postgres:') return 'must start with postgres:// (the OpenLineage naming of a PostgreSQL server)';
  if (url.username !== '' || url.password !== '') return 'must not carry a user or password (the value is not shown)';
  if (url.hostname === '') return 'names no host: postgres://host:port';
  if (url.port === '') return 'names no port: postgres://host:port, the port included (5432 when it is the default) as the naming spec writes it';
  if ((url.pathname !== '' && url.pathname !== '/') || url.search !== '' || url.hash !== '')
    return `must be postgres://host:port only (the database, schema and table are the dataset's name), e.g. postgres://${url.hostname}:${url.port}`;
  return undefined;
}

/** Where a PostgreSQL connection goes and who it is: `sinks.postgres`'s, and the JDBC catalog's of `sinks.iceberg` (one resolution for both). */
export const postgresConnectionFields = {
  url: secretReference('DATABASE_URL')
    .optional()
    .describe(
      '${ENV_NAME} holding a postgres:// URL (user, password, host, port, database, sslmode, sslrootcert); instead of host/port/database/user/password',
    ),
  urlFile: z.string().min(1).optional().describe('File holding a postgres:// URL'),
  host: z.string().min(1).optional().describe('Server host name or address'),
  port: z.number().int().min(1).max(65_535).optional().describe('Default 5432'),
  database: postgresIdentifierSchema.optional(),
  user: z.string().min(1).optional().describe('Role name, literal or ${ENV_NAME}'),
  password: secretReference('TILEHOUSE_POSTGRES_PASSWORD').optional().describe('${ENV_NAME} holding the password'),
  passwordFile: z.string().min(1).optional().describe('File holding the password (a Kubernetes Secret mount)'),
  sslmode: z
    .enum(SSL_MODES)
    .optional()
    .describe("As libpq: disable, allow, prefer, require (encrypted, not verified), verify-ca, verify-full (default: the url's, else verify-full)"),
  sslrootcert: z.string().min(1).optional().describe("File of the CA certificates the server certificate is verified against; default: Node's CA store"),
};

type ConnectionFields = z.infer<z.ZodObject<typeof postgresConnectionFields>>;

/** The connection fields' rules: a url or the separate fields, one password source. */
export function postgresConnectionIssues(settings: ConnectionFields, ctx: z.RefinementCtx): void {
  const fromUrl = settings.url !== undefined || settings.urlFile !== undefined;
  if (settings.url !== undefined && settings.urlFile !== undefined)
    ctx.addIssue({ code: 'custom', path: ['url'], input: settings.url, message: 'set one of url or urlFile' });
  for (const field of ['host', 'port', 'database', 'user', 'password', 'passwordFile'] as const) {
    if (fromUrl && settings[field] !== undefined)
      ctx.addIssue({
        code: 'custom',
        path: [field],
        input: field.startsWith('password') ? '(not shown)' : settings[field],
        message: 'the url already says it: set either the url or the separate fields',
      });
  }
  if (fromUrl) return;
  for (const field of ['host', 'database', 'user'] as const) {
    if (settings[field] === undefined) ctx.addIssue({ code: 'custom', path: [field], input: undefined, message: `required (or a url that names it)` });
  }
  if ((settings.password === undefined) === (settings.passwordFile === undefined))
    ctx.addIssue({ code: 'custom', path: ['password'], input: undefined, message: 'set exactly one of password (${ENV_NAME}) or passwordFile' });
}

/**
 * `sinks.postgres` in the environment file: where every postgres sink connects. The password (or
 * a `DATABASE_URL`-style url, which may carry one) is never literal: `${ENV}` or a mounted file, as
 * the source's client secret.
 */
export const postgresConnectionSchema = z
  .object({
    ...postgresConnectionFields,
    schema: postgresIdentifierSchema.default('public').describe('Schema of the tables, staging tables and _tilehouse_runs; default public'),
    statementTimeoutMs: z
      .number()
      .int()
      .positive()
      .default(600_000)
      .describe(
        "SET LOCAL statement_timeout of the publishing transaction; the COPY's transaction runs without one, as long as the source's export it streams",
      ),
    lockTimeoutMs: z
      .number()
      .int()
      .positive()
      .default(2_000)
      .describe(
        "SET LOCAL lock_timeout of a publish: how long it may queue for the table's lock (and keep readers behind it) before it lets go and tries again",
      ),
    publishBudgetMs: z
      .number()
      .int()
      .positive()
      .default(120_000)
      .describe(
        'How long a publish keeps trying when its lock times out, its transaction is a serialization or deadlock victim, or its connection is lost or refused (a server restarting)',
      ),
    lineageNamespace: z
      .string()
      .superRefine((value, ctx) => {
        const problem = lineageNamespaceProblem(value);
        if (problem !== undefined) ctx.addIssue({ code: 'custom', input: value, message: problem });
      })
      .transform((value) => {
        const url = new URL(value);
        return `postgres://${url.hostname.toLowerCase()}:${url.port}`;
      })
      .optional()
      .describe(
        "OpenLineage: the database server's own postgres://host:port, when tilehouse connects through a pooler or proxy (PgBouncer, a cloud SQL proxy) whose address is not the one dbt or Airflow name; default: the connection's host and port",
      ),
    lineageDatabase: postgresIdentifierSchema
      .optional()
      .describe("OpenLineage: the database's own name, when the pooler's database alias differs from it; default: the connection's database"),
    guard: publishGuardSchema,
  })
  .strict()
  .superRefine(postgresConnectionIssues);
