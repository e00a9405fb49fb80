import { Agent, type Dispatcher } from 'undici';
import type { EnvironmentConfig } from '../config/environment-schema.js';
import type { LoadedJob } from '../config/load-config.js';
import { audienceOf, type ClientCredentials } from '../config/secrets.js';
import type { Logger } from '../log.js';
import { ExportClient } from '../source/export-client.js';
import { RetryBudget } from '../retry.js';
import type { RetryPolicy } from '../source/retry-policy.js';
import { SessionToken } from '../source/session-token.js';
import { fetchToken, type TokenRequest } from '../source/token-client.js';

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

function timeoutsOf(source: EnvironmentConfig['source']) {
  return { headersMs: source.requestTimeoutMs, bodyMs: source.bodyTimeoutMs ?? source.requestTimeoutMs, totalMs: source.requestDeadlineMs };
}

function policyOf(retry: RetrySettings, budget: RetryBudget): RetryPolicy {
  return { maxAttempts: retry.maxAttempts, baseDelayMs: retry.baseDelayMs, maxDelayMs: retry.maxDelayMs, budget };
}

/** The client-credentials request of this environment, on behalf of `job` (named in errors). */
export function tokenRequestFor(job: LoadedJob, options: SourceSessionOptions, policy: RetryPolicy): TokenRequest {
  const { source } = options.environment;
  return {
    authUrl: source.authUrl,
    clientId: options.credentials.clientId,
    clientSecret: options.credentials.clientSecret,
    audience: audienceOf(source),
    jobName: job.name,
    dispatcher: options.dispatcher,
    timeouts: timeoutsOf(source),
    retry: policy,
    signal: options.signal,
    onRetry: (event) => options.logger.warn({ attempt: event.attempt, delayMs: event.delayMs, reason: event.reason }, 'token request failed; retrying'),
  };
}

/** Wires token client, retry policy and export client for one tile run; fetches nothing yet. */
export function openSourceSession(job: LoadedJob, options: SourceSessionOptions): SourceSession {
  const { source } = options.environment;
  const { logger } = options;
  const budget = new RetryBudget((options.retry ?? DEFAULT_RETRY).budget);
  const policy = policyOf(options.retry ?? DEFAULT_RETRY, budget);
  let reauthentications = 0;
  const token = new SessionToken(() => fetchToken(tokenRequestFor(job, options, policy)));
  const client = new ExportClient({
    baseUrl: source.baseUrl,
    tileParam: source.tileParam,
    tileId: job.tile,
    query: job.query,
    itemsPerPage: source.itemsPerPage,
    jobName: job.name,
    dispatcher: options.dispatcher,
    timeouts: timeoutsOf(source),
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

/**
 * How far the source's clock is ahead of ours (negative: behind), read from the HTTP `Date` of a
 * token response; undefined when the issuer sends none. Its resolution is one second.
 */
export async function measureServerClockOffset(job: LoadedJob, options: SourceSessionOptions): Promise<number | undefined> {
  const retry = options.retry ?? DEFAULT_RETRY;
  const sent = Date.now();
  const token = await fetchToken(tokenRequestFor(job, options, policyOf(retry, new RetryBudget(retry.budget))));
  if (token.serverDate === undefined) return undefined;
  // The Date header is stamped somewhere between sending and receiving: take the middle.
  return token.serverDate - (sent + Date.now()) / 2;
}
