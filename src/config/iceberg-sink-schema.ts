import { z } from 'zod';
import { keyedIncrementalIssues, keyedWriteFields, keyedWriteIssues } from './merge-key-options.js';
import { looksLikeUrl, objectStoreUrlsOf, supportedUrls } from './object-store-urls.js';
import { postgresConnectionFields, postgresConnectionIssues } from './postgres-connection-schema.js';
import { publishGuardSchema } from './publish-guard-schema.js';
import type { SinkIssue } from './sink-issue.js';
import { awsSigningScopeOf } from './aws-signing-scope.js';
import { refusingUrlPassword } from './url-credentials.js';

/**
 * An Iceberg table in a job file (the sink itself: src/sinks/iceberg/) and `sinks.iceberg` in the
 * environment file: the catalog every iceberg sink commits through and where new tables go.
 */

/** A namespace or table name: one level, letters, digits and `_` (every catalog and reader takes it unquoted). */
const ICEBERG_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export const icebergSinkSchema = z
  .object({
    type: z.literal('iceberg'),
    table: z
      .string()
      .refine((value) => value.split('.').length === 2 && value.split('.').every((part) => ICEBERG_NAME.test(part)), {
        message: 'must be <namespace>.<table>, each of letters, digits and _ (e.g. tiles.incidents)',
      })
      .describe('The table as <namespace>.<table> in the catalog of sinks.iceberg; created on the first run'),
    writeMode: z
      .enum(['replace', 'append', 'partition', 'merge'])
      .default('replace')
      .describe(
        "replace: each run is the whole table (an overwrite snapshot); append: each run adds its rows with the lineage columns _run_id and _extracted_at; partition: the table is partitioned by day on partitionBy.column and a run replaces the days it covers (its window's every day, else its rows' days); merge: rows update the table by primaryKey (copy-on-write, with the lineage columns)",
      ),
    ...keyedWriteFields("Output column name or header of a DATE or TIMESTAMP column (a TIMESTAMP's days are UTC days)"),
    // No default written into the config: a job that never set it keeps the definition (and fingerprint) it had.
    schema: z
      .enum(['freeze', 'add'])
      .optional()
      .describe(
        "freeze (default): any change of the tile's columns fails; add: new columns become new optional fields (fresh field ids) in the run's commit. A removed or retyped column fails either way",
      ),
    guard: publishGuardSchema,
  })
  .strict()
  .superRefine((sink, ctx) => keyedWriteIssues(sink, ctx, (name) => name));

export type IcebergSinkConfig = z.infer<typeof icebergSinkSchema>;

/** What an incremental job requires of an Iceberg sink: a write mode that takes a day exported twice as once. */
export const icebergIncrementalIssues: (sink: IcebergSinkConfig, index: number) => SinkIssue[] = keyedIncrementalIssues;

const ENV_REFERENCE = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/;

const secretReference = (example: string) => z.string().regex(ENV_REFERENCE, `must be a reference like \${${example}}; literal secrets are refused in YAML`);

/** OAuth2 client credentials (Apache Polaris, Snowflake Open Catalog): the secret only by reference or in a file. */
const oauth2AuthSchema = z
  .object({
    type: z.literal('oauth2'),
    clientId: z.string().min(1).describe("The principal's client id (not a secret)"),
    clientSecret: secretReference('TILEHOUSE_ICEBERG_CLIENT_SECRET').optional().describe('${ENV_NAME} holding the client secret'),
    clientSecretFile: z.string().min(1).optional().describe('File holding the client secret (a Kubernetes Secret mount)'),
    scope: z.string().min(1).optional().describe('The scope asked for; default PRINCIPAL_ROLE:ALL (all roles of a Polaris principal)'),
    serverUri: z
      .url({ protocol: /^https?$/ })
      .superRefine(refusingUrlPassword('the client secret goes in auth.clientSecret (${ENV_NAME}) or auth.clientSecretFile'))
      .optional()
      .describe("The token endpoint; default <uri>/v1/oauth/tokens (the REST specification's), or an identity provider's"),
  })
  .strict()
  .superRefine((auth, ctx) => {
    if ((auth.clientSecret === undefined) === (auth.clientSecretFile === undefined))
      ctx.addIssue({
        code: 'custom',
        path: ['clientSecret'],
        input: auth.clientSecret,
        message: 'set exactly one of clientSecret (${ENV_NAME}) or clientSecretFile',
      });
  });

/**
 * AWS Signature Version 4 (AWS Glue's and Amazon S3 Tables' Iceberg REST endpoints): every request
 * signed with the AWS credential chain the s3:// store uses (environment, shared files and profiles,
 * web identity / IRSA, container and instance metadata); no secret in the file.
 */
const sigv4AuthSchema = z
  .object({
    type: z.literal('sigv4'),
    signingName: z
      .string()
      .regex(/^[a-z0-9-]+$/, 'must be an AWS signing name such as glue or s3tables')
      .optional()
      .describe('The service the signature is for: glue (AWS Glue), s3tables (Amazon S3 Tables); default: the first label of an amazonaws.com uri'),
    signingRegion: z
      .string()
      .regex(/^[a-z]{2}(-[a-z]+)+-\d+$/, 'must be an AWS region such as eu-west-1')
      .optional()
      .describe('The region the signature is for; default: the region of an amazonaws.com uri, else AWS_REGION / AWS_DEFAULT_REGION'),
  })
  .strict();

/**
 * Google Application Default Credentials (BigLake metastore's Iceberg REST catalog): the access
 * tokens the BigQuery sink uses (a key file, gcloud's credentials, the metadata server of Workload
 * Identity), renewed before they expire; no secret in the file.
 */
const googleAuthSchema = z
  .object({
    type: z.literal('google'),
    userProject: z
      .string()
      .regex(/^[a-z][a-z0-9-]{4,28}[a-z0-9]$/, 'must be a Google Cloud project id')
      .optional()
      .describe("The project billed and asked for quota (the x-goog-user-project header BigLake asks for); default: the credentials' quota project"),
  })
  .strict();

const restCatalogSchema = z
  .object({
    type: z.literal('rest'),
    uri: z
      .url({ protocol: /^https?$/ })
      .superRefine(
        refusingUrlPassword(
          'credentials go in sinks.iceberg.catalog.token / tokenFile (a bearer token) or auth (OAuth2 client credentials, AWS SigV4, Google)',
        ),
      )
      .describe("The REST catalog's base URI (the one before /v1/config), e.g. https://polaris.example.internal/api/catalog"),
    warehouse: z
      .string()
      .min(1)
      .optional()
      .describe('The warehouse the catalog is asked for (GET /v1/config?warehouse=…): Polaris and Snowflake Open Catalog name the catalog here'),
    token: secretReference('TILEHOUSE_ICEBERG_TOKEN').optional().describe('${ENV_NAME} holding a bearer token'),
    tokenFile: z.string().min(1).optional().describe('File holding a bearer token (a Kubernetes Secret mount)'),
    auth: z
      .discriminatedUnion('type', [oauth2AuthSchema, sigv4AuthSchema, googleAuthSchema])
      .optional()
      .describe(
        "How requests to the catalog are authenticated instead of token / tokenFile: oauth2 (client credentials exchanged at the catalog's token endpoint), sigv4 (AWS Signature Version 4 with the AWS credential chain: AWS Glue, Amazon S3 Tables) or google (Application Default Credentials: BigLake metastore); tokens renewed before they expire",
      ),
    requestTimeoutMs: z.number().int().positive().default(30_000).describe('Limit for each request to the catalog'),
    tableProperties: z
      .record(z.string().min(1), z.string())
      .optional()
      .describe(
        'Properties of the tables a run creates through this catalog, beside format-version (e.g. write.metadata.path, for a catalog server that writes its metadata files elsewhere than the location)',
      ),
    accessDelegation: z
      .literal('vended-credentials')
      .optional()
      .describe(
        "Ask the catalog for the table's storage credentials (X-Iceberg-Access-Delegation: vended-credentials) and write its files with them, renewed before they expire; the environment's only when the catalog vends none (docs/iceberg.md)",
      ),
  })
  .strict()
  .superRefine((catalog, ctx) => {
    if (catalog.token !== undefined && catalog.tokenFile !== undefined)
      ctx.addIssue({ code: 'custom', path: ['token'], input: catalog.token, message: 'set one of token or tokenFile' });
    if (catalog.auth !== undefined && (catalog.token !== undefined || catalog.tokenFile !== undefined))
      ctx.addIssue({
        code: 'custom',
        path: ['auth'],
        input: catalog.auth.type,
        message: `set one of auth or ${catalog.token !== undefined ? 'token' : 'tokenFile'}: the catalog takes one kind of credentials`,
      });
    if (catalog.auth?.type === 'sigv4' && catalog.auth.signingName === undefined && awsSigningScopeOf(catalog.uri).signingName === undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['auth', 'signingName'],
        input: catalog.uri,
        message: `set signingName (glue for AWS Glue, s3tables for Amazon S3 Tables): the uri's host is not <service>.<region>.amazonaws.com`,
      });
  });

const jdbcCatalogSchema = z
  .object({
    type: z.literal('jdbc'),
    catalogName: z.string().min(1).max(255).describe("The catalog's name: the catalog_name of its rows in iceberg_tables (readers are given the same name)"),
    ...postgresConnectionFields,
  })
  .strict()
  .superRefine(postgresConnectionIssues);

/**
 * An absolute local directory, a file: URI, or a bucket's prefix in the stores' URL grammar
 * (`gs://bucket/prefix`, `s3://bucket/prefix`: config/object-store-urls.ts, as a file sink's directory).
 */
function locationProblem(location: string): string | undefined {
  if (location.startsWith('/')) return undefined;
  if (location.startsWith('file:')) {
    try {
      new URL(location);
      return undefined;
    } catch {
      return 'is not a file: URI';
    }
  }
  if (looksLikeUrl(location)) {
    const urls = objectStoreUrlsOf(location);
    if (urls === undefined) return `must be an absolute directory, a file: URI, or a prefix in ${supportedUrls()}, written in lowercase`;
    return urls.urlProblem(location, { object: 'optional' });
  }
  return `must be an absolute directory, a file: URI, or a prefix in ${supportedUrls()} (e.g. /var/lib/tilehouse/warehouse or s3://bucket/warehouse)`;
}

/**
 * How the writer keeps a table tidy (src/sinks/iceberg/expire-snapshots.ts, orphan-files.ts): every
 * value optional, the writer's defaults where absent. None changes what a run's snapshot holds.
 */
const icebergHousekeepingSchema = z
  .object({
    keepSnapshots: z
      .number()
      .int()
      .min(1, 'must be at least 1 (the current snapshot)')
      .optional()
      .describe("The newest snapshots of the table's main branch always kept (time travel, and the run ids a re-run is recognised by). Default 10"),
    maxSnapshotAgeDays: z.number().min(0).optional().describe('Snapshots younger than this many days are kept whatever their number. Default 5'),
    previousMetadataVersions: z
      .number()
      .int()
      .min(0)
      .optional()
      .describe("Previous metadata files kept in the table's metadata log (write.metadata.previous-versions-max). Default 10"),
    orphanMinAgeHours: z
      .number()
      .min(0)
      .optional()
      .describe(
        "A file in the table's data/ or metadata/ that nothing references (a failed or killed run's) is deleted once older than this many hours: longer than any run. Default 72",
      ),
  })
  .strict();

export const icebergEnvironmentSchema = z
  .object({
    catalog: z
      .discriminatedUnion('type', [restCatalogSchema, jdbcCatalogSchema])
      .describe('Where every iceberg sink commits: a REST catalog or the JDBC catalog on PostgreSQL'),
    location: z
      .string()
      .superRefine((value, ctx) => {
        const problem = locationProblem(value);
        if (problem !== undefined) ctx.addIssue({ code: 'custom', input: value, message: problem });
      })
      .describe(
        'The warehouse root, a local directory or a bucket prefix (gs://bucket/prefix, s3://bucket/prefix, with sinks.gcs / sinks.s3 settings as the file sinks): a new table <namespace>.<table> is created at <location>/<namespace>/<table>',
      ),
    housekeeping: icebergHousekeepingSchema
      .optional()
      .describe(
        'Snapshot expiry and the cleanup of unreferenced files after each commit (keepSnapshots, maxSnapshotAgeDays, previousMetadataVersions, orphanMinAgeHours)',
      ),
    guard: publishGuardSchema,
  })
  .strict();

export type IcebergDefaults = z.infer<typeof icebergEnvironmentSchema>;
