import { z } from 'zod';
import { gcsUrlProblem, looksLikeUrl } from './gcs-url.js';
import { publishGuardSchema } from './publish-guard-schema.js';

/**
 * The schema of `config/*.yaml`: settings shared by every tile of one environment.
 * Secrets are never literal here: a field holds `${ENV_NAME}` or a sibling `...File` names a
 * file (a Kubernetes secret mount).
 */

export const ENV_REFERENCE = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/;

const envReference = z
  .string()
  .regex(ENV_REFERENCE, 'must be a reference like ${TILEHOUSE_CLIENT_SECRET}; literal secrets are refused in YAML');

const sourceSchema = z
  .object({
    baseUrl: z.url().describe('The tenant host, e.g. https://acme.example-incidents.com'),
    authUrl: z.url().describe('The token issuer; POST {authUrl}/oauth/token'),
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
        'run: one token, fetched at the start of the run, serves all its jobs (and a backfill\'s windows), replaced before expires_in; job: every job (and window) fetches its own (issuers that meter machine-to-machine tokens count each one)',
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
    bodyTimeoutMs: z
      .number()
      .int()
      .positive()
      .optional()
      .describe('Limit for each gap while a response body arrives; default: requestTimeoutMs'),
    concurrency: z
      .number()
      .int()
      .min(1)
      .max(64)
      .default(4)
      .describe('Parallel page requests per tile; lowered automatically while the source answers 429'),
    allowInsecureHttp: z
      .boolean()
      .default(false)
      .describe('Permit http:// for non-loopback hosts (never for production)'),
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

/** A file sink kind's `directory` (csv, parquet): where its relative paths go, local or gs://. */
function fileDirectorySchema(label: string) {
  return z
    .string()
    .min(1)
    .superRefine((directory, ctx) => {
      const problem = looksLikeUrl(directory) ? gcsUrlProblem(directory, { object: 'optional' }) : undefined;
      if (problem !== undefined) ctx.addIssue({ code: 'custom', input: directory, message: problem });
    })
    .default('out')
    .describe(`Where relative ${label} paths go: a local directory, or a Cloud Storage prefix gs://bucket[/prefix]. Default out`);
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
          .describe('Default true: append one row per tile run and target to _tilehouse_runs in the target\'s dataset, after the publish'),
        requestTimeoutMs: z
          .number()
          .int()
          .positive()
          .optional()
          .describe('Default 60000: limit for each BigQuery API request, retried as a lost answer when it passes (jobs are polled with short requests, never awaited in one)'),
        guard: publishGuardSchema,
      })
      .strict()
      .optional(),
  })
  .strict()
  .default({ csv: { directory: 'out' }, parquet: { directory: 'out' } });

const PROMETHEUS_LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

const metricsSchema = z
  .object({
    pushgatewayUrl: z
      .url()
      .optional()
      .describe('Prometheus Pushgateway to push each tile run\'s metrics to (grouping key: job); none: no metrics are pushed'),
    timeoutMs: z.number().int().positive().default(5000).describe('Limit for one push; a failed push is logged and never fails the run'),
    labels: z
      .record(z.string().regex(PROMETHEUS_LABEL, 'must be a Prometheus label name').refine((name) => !name.startsWith('__') && name !== 'job', 'job and names starting with __ are reserved'), z.string().min(1))
      .default({})
      .describe('Extra grouping labels, e.g. {environment: production}'),
  })
  .strict();

export const environmentSchema = z
  .object({
    source: sourceSchema,
    sinks: sinkDefaultsSchema,
    metrics: metricsSchema.optional().describe('Off unless metrics.pushgatewayUrl is set'),
    tileConcurrency: z.number().int().min(1).max(32).default(1).describe('Tiles exported at the same time'),
    tempDirectory: z.string().min(1).optional().describe('Where temp files go; default: beside each target / OS temp'),
    stopDeadlineMs: z
      .number()
      .int()
      .min(1_000)
      .default(20_000)
      .describe(
        'After SIGTERM/SIGINT: how long the cleanup (aborting requests, removing staging tables and temp objects, the summary) may take before the process exits 143/130 anyway. Keep it below the pod\'s terminationGracePeriodSeconds (30 s by default)',
      ),
  })
  .strict();

export type EnvironmentConfig = z.infer<typeof environmentSchema>;
export type SourceConfig = EnvironmentConfig['source'];
export type MetricsConfig = NonNullable<EnvironmentConfig['metrics']>;
export type BigQueryDefaults = NonNullable<EnvironmentConfig['sinks']['bigquery']>;
