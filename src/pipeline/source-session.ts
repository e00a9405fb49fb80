import { Agent, type Dispatcher } from 'undici';
import type { EnvironmentConfig } from '../config/environment-schema.js';
import type { LoadedJob } from '../config/load-config.js';
import { audienceOf, type ClientCredentials } from '../config/secrets.js';
import type { Logger } from '../log.js';
import { ExportClient } from '../source/export-client.js';
import { RetryBudget, type RetryPolicy } from '../source/retry-policy.js';
import { SessionToken } from '../source/session-token.js';
import { fetchToken } from '../source/token-client.js';

export interface RetrySettings {
  maxAttempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
  /** Retries allowed across all requests of one tile run. */
  budget: number;
}

export const DEFAULT_RETRY: RetrySettings = { maxAttempts: 6, baseDelayMs: 250, maxDelayMs: 30_000, budget: 50 };

/**
 * The connection pool every command uses towards the source: keep-alive between pages, enough
 * connections for the page concurrency of a few tiles at once.
 */
export function createSourceDispatcher(): Agent {
  return new Agent({ keepAliveTimeout: 10_000, connections: 16 });
}

export interface SourceSessionOptions {
  environment: EnvironmentConfig;
  credentials: ClientCredentials;
  dispatcher: Dispatcher;
  logger: Logger;
  retry?: RetrySettings;
  signal?: AbortSignal;
}

/** One tile's connection to the source: a fresh token, the export client, the shared retry budget. */
export interface SourceSession {
  client: ExportClient;
  token: SessionToken;
  budget: RetryBudget;
  reauthentications: () => number;
}

/** Wires token client, retry policy and export client for one tile run; fetches nothing yet. */
export function openSourceSession(job: LoadedJob, options: SourceSessionOptions): SourceSession {
  const { source } = options.environment;
  const { logger } = options;
  const retry = options.retry ?? DEFAULT_RETRY;
  const budget = new RetryBudget(retry.budget);
  const policy: RetryPolicy = { maxAttempts: retry.maxAttempts, baseDelayMs: retry.baseDelayMs, maxDelayMs: retry.maxDelayMs, budget };
  let reauthentications = 0;
  const timeouts = { headersMs: source.requestTimeoutMs, bodyMs: source.bodyTimeoutMs ?? source.requestTimeoutMs };
  const token = new SessionToken(() =>
    fetchToken({
      authUrl: source.authUrl,
      clientId: options.credentials.clientId,
      clientSecret: options.credentials.clientSecret,
      audience: audienceOf(source),
      jobName: job.name,
      dispatcher: options.dispatcher,
      timeouts,
      retry: policy,
      signal: options.signal,
      onRetry: (event) => logger.warn({ attempt: event.attempt, delayMs: event.delayMs, reason: event.reason }, 'token request failed; retrying'),
    }),
  );
  const client = new ExportClient({
    baseUrl: source.baseUrl,
    tileParam: source.tileParam,
    tileId: job.tile,
    query: job.query,
    itemsPerPage: source.itemsPerPage,
    jobName: job.name,
    dispatcher: options.dispatcher,
    timeouts,
    retry: policy,
    token,
    signal: options.signal,
    onRetry: (event) => logger.warn({ page: event.pageNumber, attempt: event.attempt, delayMs: event.delayMs, reason: event.reason }, 'page request failed; retrying'),
    onReauthenticate: (pageNumber) => {
      reauthentications += 1;
      logger.info({ page: pageNumber }, 'token refused (401); fetching a new token once');
    },
  });
  return { client, token, budget, reauthentications: () => reauthentications };
}
