import { z } from 'zod';
import { lineageSchema } from './lineage-schema.js';
import { googleApiEndpointSchema } from './google-api-endpoint.js';
import { looksLikeUrl, objectStoreUrlsOf, supportedUrls } from './object-store-urls.js';
import { publishGuardSchema } from './publish-guard-schema.js';
import { icebergEnvironmentSchema } from './iceberg-sink-schema.js';
import { postgresConnectionSchema } from './postgres-connection-schema.js';
import { refusingUrlPassword } from './url-credentials.js';

/**
 * The schema of `config/*.yaml`: settings shared by every tile of one environment.
 * Secrets are never literal here: a field holds `${ENV_NAME}` or a sibling `...File` names a
 * file (a Kubernetes secret mount).
 */

export const ENV_REFERENCE = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/;

const envReference = z.string().regex(ENV_REFERENCE, 'must be a reference like ${TILEHOUSE_CLIENT_SECRET}; literal secrets are refused in YAML');

const sourceSchema = z
  .object({
    baseUrl: z
      .url()
      .superRefine(refusingUrlPassword('the client secret goes in source.clientSecret (${ENV_NAME}) or source.clientSecretFile'))
      .describe('The tenant host, e.g. https://acme.example-incidents.com'),
    authUrl: z
      .url()
      .superRefine(refusingUrlPassword('the client secret goes in source.clientSecret (${ENV_NAME}) or source.clientSecretFile'))
      .describe('The token issuer; POST {authUrl}/oauth/token'),
    audience: z.string().min(1).optional().describe('Token audience; default: the host of baseUrl'),
    clientId: z.string().min(1).optional().describe('Client id, literal or ${ENV_NAME}'),
    clientIdFile: z.string().min(1).optional().describe('File holding the client id'),
    clientSecret: envReference.optional().describe('${ENV_NAME} holding the client secret'),
    clientSecretFile: z.string().min(1).optional().describe('File holding the client secret'),
    tileParam: z.string().min(1).default('tileId').describe('Query-string item that carries the tile id'),
    itemsPerPage: z.number().int().positive().max(10_000).default(50),
    requestTimeoutMs: z.number().int().positive().default(30_000).describe('Limit for the response headers of each request'),
    tokenScope: z
      .enum(['run', 'job'])
      .default('run')
      .describe(
        "run: one token, fetched at the start of the run, serves all its jobs (and a backfill's windows), replaced before expires_in; job: every job (and window) fetches its own (issuers that meter machine-to-machine tokens count each one)",
      ),
    clock: z
      .enum(['source', 'local'])
      .default('source')
      .describe(
        "Whose clock places the day windows of backfill, incremental runs and plan: source (the HTTP Date of the token answer; a token answer without a parseable Date fails windowed work with source_clock_unknown) or local (this machine's clock, for a source that sends no Date and keeps the same time as this machine; every windowed run then says so)",
      ),
    requestDeadlineMs: z
      .number()
      .int()
      .positive()
      .default(120_000)
      .describe('Limit for one whole request: response headers and the complete body, however slowly it arrives'),
    bodyTimeoutMs: z.number().int().positive().optional().describe('Limit for each gap while a response body arrives; default: requestTimeoutMs'),
    concurrency: z.number().int().min(1).max(64).default(4).describe('Parallel page requests per tile; lowered automatically while the source answers 429'),
    allowInsecureHttp: z.boolean().default(false).describe('Permit http:// for non-loopback hosts (never for production)'),
  })
  .strict()
  .refine((s) => (s.clientId === undefined) !== (s.clientIdFile === undefined), {
    message: 'set exactly one of clientId or clientIdFile',
    path: ['clientId'],
  })
  .refine((s) => (s.clientSecret === undefined) !== (s.clientSecretFile === undefined), {
    message: 'set exactly one of clientSecret (${ENV_NAME}) or clientSecretFile',
    path: ['clientSecret'],
  });

/** A file sink kind's `directory` (csv, parquet): where its relative paths go, a local directory or a bucket's prefix. */
function fileDirectorySchema(label: string) {
  return z
    .string()
    .min(1)
    .superRefine((directory, ctx) => {
      if (!looksLikeUrl(directory)) return;
      const urls = objectStoreUrlsOf(directory);
      const problem =
        urls === undefined ? `only ${supportedUrls()} URLs are supported, written in lowercase` : urls.urlProblem(directory, { object: 'optional' });
      if (problem !== undefined) ctx.addIssue({ code: 'custom', input: directory, message: problem });
    })
    .default('out')
    .describe(
      `Where relative ${label} paths go: a local directory, a Cloud Storage prefix gs://bucket[/prefix], or an S3 prefix s3://bucket[/prefix]. Default out`,
    );
}

const sinkDefaultsSchema = z
  .object({
    csv: z
      .object({ directory: fileDirectorySchema('CSV'), guard: publishGuardSchema })
      .strict()
      .default({ directory: 'out' }),
    parquet: z
      .object({ directory: fileDirectorySchema('Parquet'), guard: publishGuardSchema })
      .strict()
      .default({ directory: 'out' }),
    bigquery: z
      .object({
        projectId: z.string().min(1).optional().describe('Default: from Application Default Credentials'),
        dataset: z.string().regex(/^[A-Za-z0-9_]{1,1024}$/),
        location: z.string().min(1).default('US'),
        runLedger: z
          .boolean()
          .optional()
          .describe("Default true: append one row per tile run and target to _tilehouse_runs in the target's dataset, after the publish"),
        requestTimeoutMs: z
          .number()
          .int()
          .positive()
          .optional()
          .describe(
            'Default 60000: limit for each BigQuery API request, retried as a lost answer when it passes (jobs are polled with short requests, never awaited in one)',
          ),
        apiEndpoint: googleApiEndpointSchema('BigQuery', 'https://bigquery.europe-west3.rep.googleapis.com').optional(),
        guard: publishGuardSchema,
      })
      .strict()
      .optional(),
    postgres: postgresConnectionSchema.optional().describe('Where every postgres sink connects (docs/postgres.md)'),
    iceberg: icebergEnvironmentSchema.optional().describe('The catalog every iceberg sink commits through, and where new tables go (docs/iceberg.md)'),
    gcs: z
      .object({
        apiEndpoint: googleApiEndpointSchema('Cloud Storage (every gs:// target)', 'https://storage.europe-west3.rep.googleapis.com').optional(),
      })
      .strict()
      .optional()
      .describe('Settings of every gs:// target (CSV and Parquet directories and paths)'),
    s3: z
      .object({
        region: z
          .string()
          .regex(/^[a-z0-9-]{2,32}$/, 'an AWS region name such as eu-west-1')
          .optional()
          .describe("The buckets' region; default: from the AWS chain (AWS_REGION, the shared config file), else us-east-1"),
        endpoint: z
          .url({ protocol: /^https?$/ })
          .superRefine(
            refusingUrlPassword(
              'S3 credentials come from the AWS chain (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY from a Secret, a web identity, EKS Pod Identity)',
            ),
          )
          .optional()
          .describe(
            'An S3-compatible store (MinIO, Cloudflare R2, Ceph...): its origin, e.g. https://minio.example.internal:9000; default: Amazon S3. Credentials never go here: they come from the AWS chain',
          ),
        forcePathStyle: z
          .boolean()
          .optional()
          .describe('Address buckets as <endpoint>/<bucket> instead of <bucket>.<endpoint>; default: true with an endpoint, false for Amazon S3'),
        requestTimeoutMs: z
          .number()
          .int()
          .positive()
          .optional()
          .describe('Default 60000: limit for each S3 request, retried (after the target is read, for a publish) when it passes'),
        allowInsecureHttp: z
          .boolean()
          .default(false)
          .describe('Permit an http:// endpoint on a non-loopback host (the data, and a session token in its header, cross the wire in clear)'),
      })
      .strict()
      .superRefine((s3, ctx) => {
        // As for the source (load-config.ts): plain http only to loopback unless opted in. SigV4
        // keeps the secret key off the wire, but not the objects nor a session token's header.
        if (s3.endpoint === undefined || s3.allowInsecureHttp) return;
        const url = new URL(s3.endpoint);
        const loopback = ['localhost', '[::1]'].includes(url.hostname) || /^127\.\d+\.\d+\.\d+$/.test(url.hostname);
        if (url.protocol === 'http:' && !loopback) {
          ctx.addIssue({
            code: 'custom',
            path: ['endpoint'],
            input: s3.endpoint,
            message:
              'http:// is refused for non-loopback hosts (objects and session tokens would cross the wire in clear); use https:// or set sinks.s3.allowInsecureHttp: true',
          });
        }
      })
      .optional()
      .describe(
        'Settings of s3:// CSV and Parquet targets (credentials come from the standard AWS chain: environment, shared files, web identity / IRSA, EKS Pod Identity)',
      ),
  })
  .strict()
  .default({ csv: { directory: 'out' }, parquet: { directory: 'out' } });

const PROMETHEUS_LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

const metricsSchema = z
  .object({
    pushgatewayUrl: z
      .url()
      .superRefine(
        refusingUrlPassword('tilehouse sends no credentials to a Pushgateway: reach one that requires them through a proxy or sidecar that adds them'),
      )
      .optional()
      .describe("Prometheus Pushgateway to push each tile run's metrics to (grouping key: job); none: no metrics are pushed"),
    timeoutMs: z.number().int().positive().default(5000).describe('Limit for one push; a failed push is logged and never fails the run'),
    labels: z
      .record(
        z
          .string()
          .regex(PROMETHEUS_LABEL, 'must be a Prometheus label name')
          .refine((name) => !name.startsWith('__') && name !== 'job', 'job and names starting with __ are reserved'),
        z.string().min(1),
      )
      .default({})
      .describe('Extra grouping labels, e.g. {environment: production}'),
  })
  .strict();

/**
 * Where every run leaves its record (src/history/): one place per workspace, read by `status`
 * without the source's credentials. A local directory (relative to the environment file's) or a
 * gs:// / s3:// prefix, written through the stores' seam with the settings of `sinks.gcs` / `sinks.s3`.
 */
const historySchema = z
  .object({
    location: z
      .string()
      .min(1)
      .default('.tilehouse/history')
      .describe(
        "Where run records are kept: a local directory (default .tilehouse/history, relative to this file's directory), gs://bucket/prefix or s3://bucket/prefix. On Kubernetes, a bucket or a mounted volume: the pod's own file system is gone with it",
      ),
    keepPerJob: z
      .number()
      .int()
      .min(1)
      .max(10_000)
      .default(100)
      .describe('Records kept per job, newest first (default 100); older ones are removed by the run that writes the newest'),
  })
  .strict();

export const environmentSchema = z
  .object({
    source: sourceSchema,
    sinks: sinkDefaultsSchema,
    metrics: metricsSchema.optional().describe('Off unless metrics.pushgatewayUrl is set'),
    lineage: lineageSchema
      .optional()
      .describe('OpenLineage run events of every tile run (docs/lineage.md); off unless a transport is set here or by OPENLINEAGE_* variables'),
    history: historySchema
      .default({ location: '.tilehouse/history', keepPerJob: 100 })
      .describe('The run history every run writes and `status` reads (docs/configuration.md#history)'),
    tileConcurrency: z.number().int().min(1).max(32).default(1).describe('Tiles exported at the same time'),
    tempDirectory: z.string().min(1).optional().describe('Where temp files go; default: beside each target / OS temp'),
    stopDeadlineMs: z
      .number()
      .int()
      .min(1_000)
      .default(20_000)
      .describe(
        "After SIGTERM/SIGINT: how long the cleanup (aborting requests, removing staging tables and temp objects, the summary) may take before the process exits 143/130 anyway. Keep it below the pod's terminationGracePeriodSeconds (30 s by default)",
      ),
    googleCredentialsWaitMs: z
      .number()
      .int()
      .min(1_000)
      .max(300_000)
      .default(30_000)
      .describe(
        "How long a run waits for Google credentials (the metadata server of Workload Identity, a token endpoint) before it fails with google_credentials_unavailable: GKE's metadata server can take a few seconds to answer in a new pod. Default 30000",
      ),
  })
  .strict();

export type EnvironmentConfig = z.infer<typeof environmentSchema>;
export type SourceConfig = EnvironmentConfig['source'];
export type BigQueryDefaults = NonNullable<EnvironmentConfig['sinks']['bigquery']>;
export type PostgresDefaults = NonNullable<EnvironmentConfig['sinks']['postgres']>;
export type { IcebergDefaults } from './iceberg-sink-schema.js';
