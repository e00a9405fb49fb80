import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';
import type { EnvironmentConfig } from '../config/environment-schema.js';
import type { LoadedJob } from '../config/load-config.js';
import { audienceOf, type ClientCredentials } from '../config/secrets.js';
import type { Logger } from '../log.js';
import { pagesOfQuery, type QueryPages } from '../source/export-endpoint/index.js';
import { RetryBudget, type RetryLimits } from '../retry.js';
import { Agent, DecoratorHandler } from '../source/undici-parts.js';
import type { RetryPolicy } from '../source/retry-policy.js';
import { RunToken, SessionToken } from '../source/session-token.js';
import { fetchToken, tokenUrl, type TokenRequest } from '../source/token-client.js';
import { numberTextColumns } from '../transform/index.js';
import { sortKeyOf } from '../transform/values/sort-key.js';
import { ATTR, EVENTS, SPANS, telemetry } from '../telemetry/telemetry.js';

/** The source's retry limits (the one loop's, src/retry.ts) and the retries one tile run may spend. */
export interface RetrySettings extends Pick<RetryLimits, 'maxAttempts' | 'baseDelayMs' | 'maxDelayMs'> {
  /** Retries allowed across all requests of one tile run. */
  budget: number;
}

export const DEFAULT_RETRY: RetrySettings = { maxAttempts: 6, baseDelayMs: 250, maxDelayMs: 30_000, budget: 50 };

/**
 * The connection pool every command uses towards the source: keep-alive between pages, enough
 * connections for the page concurrency of a few tiles at once.
 *
 * HTTP/1.1 only: undici 8 negotiates HTTP/2 by default when a TLS server offers it, which would
 * multiplex every page of every tile over one connection, so `connections` would no longer bound
 * anything and the page-concurrency, timeout and dropped-connection behaviour the fault tests
 * prove (all over HTTP/1.1) would be untested. Turning HTTP/2 on is a decision to make with tests.
 */
export function createSourceDispatcher(): Agent {
  return new Agent({ keepAliveTimeout: 10_000, connections: 16, allowH2: false });
}

export interface SourceSessionOptions {
  environment: EnvironmentConfig;
  credentials: ClientCredentials;
  dispatcher: Dispatcher;
  logger: Logger;
  retry?: RetrySettings;
  signal?: AbortSignal;
  /** The run's token, shared by its tiles (default: one of this session's own). */
  runToken?: RunToken;
}

/** One tile's connection to the source: the run's token, the export client, the tile's retry budget. */
export interface SourceSession {
  /** The job's query, asked of the export endpoint. */
  client: QueryPages;
  token: SessionToken;
  budget: RetryBudget;
  reauthentications: () => number;
  /** What this tile's requests got back: 429 answers (retried, requeued or final) and body bytes, token endpoint included. */
  traffic: WireCounts;
}

export interface WireCounts {
  throttled: number;
  /** Response body bytes as they arrived (before decompression). */
  bytes: number;
}

/**
 * Counts answers on their way through the dispatcher: the only place that sees every 429, whether
 * the retry loop retried it, requeued it for concurrency (no retry event) or gave up, and every
 * body byte, whatever reads it.
 */
// undici's types declare DecoratorHandler without the methods it has (it forwards every callback
// of the handler it wraps, old style or new); this names the two we extend.
interface ForwardingHandler extends Dispatcher.DispatchHandler {
  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders, statusMessage?: string): void;
  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void;
}
const Forwarding = DecoratorHandler as unknown as new (handler: Dispatcher.DispatchHandler) => ForwardingHandler;

class WireCounter extends Forwarding {
  constructor(
    handler: Dispatcher.DispatchHandler,
    private readonly counts: WireCounts,
  ) {
    super(handler);
  }

  override onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders, statusMessage?: string): void {
    if (statusCode === 429) this.counts.throttled += 1;
    super.onResponseStart(controller, statusCode, headers, statusMessage);
  }

  override onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.counts.bytes += chunk.length;
    super.onResponseData(controller, chunk);
  }
}

/** `dispatcher` (the same connection pool) with its answers counted into `counts`. */
export function countingDispatcher(dispatcher: Dispatcher, counts: WireCounts): Dispatcher {
  return dispatcher.compose((dispatch) => (options, handler) => dispatch(options, new WireCounter(handler, counts)));
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
    onRetry: (event) => {
      telemetry()
        .current()
        .addEvent(EVENTS.retry, { [ATTR.attempts]: event.attempt, 'tilehouse.delay_ms': event.delayMs, 'tilehouse.reason': event.reason });
      options.logger.warn({ attempt: event.attempt, delayMs: event.delayMs, reason: event.reason }, 'token request failed; retrying');
    },
  };
}

/** Wires token client, retry policy and export client for one tile run; fetches nothing yet. */
export function openSourceSession(job: LoadedJob, sessionOptions: SourceSessionOptions): SourceSession {
  const traffic: WireCounts = { throttled: 0, bytes: 0 };
  const options = { ...sessionOptions, dispatcher: countingDispatcher(sessionOptions.dispatcher, traffic) };
  const { source } = options.environment;
  const { logger } = options;
  const budget = new RetryBudget((options.retry ?? DEFAULT_RETRY).budget);
  const policy = policyOf(options.retry ?? DEFAULT_RETRY, budget);
  let reauthentications = 0;
  const fetchTraced = () =>
    telemetry().inSpan(SPANS.token, { [ATTR.job]: job.name, [ATTR.urlFull]: tokenUrl(source.authUrl) }, () =>
      fetchToken(tokenRequestFor(job, options, policy)),
    );
  const token = new SessionToken(fetchTraced, options.runToken);
  const client = pagesOfQuery(job.query, {
    baseUrl: source.baseUrl,
    tileParam: source.tileParam,
    tileId: job.tile,
    itemsPerPage: source.itemsPerPage,
    jobName: job.name,
    dispatcher: options.dispatcher,
    timeouts: timeoutsOf(source),
    retry: policy,
    token,
    signal: options.signal,
    onRetry: (event) =>
      logger.warn({ page: event.pageNumber, attempt: event.attempt, delayMs: event.delayMs, reason: event.reason }, 'page request failed; retrying'),
    numberTextColumns: (headers, dataTypes) => numberTextColumns(headers, dataTypes, job.columns),
    sortKey: sortKeyOf,
    onReauthenticate: (pageNumber) => {
      reauthentications += 1;
      logger.info({ page: pageNumber }, 'token refused (401); fetching a new token once');
    },
  });
  return { client, token, budget, reauthentications: () => reauthentications, traffic };
}

/** What the run's token answer said of the source's clock. */
export type ServerClockReading =
  | { offsetMs: number }
  /** No `Date`, or one that does not parse (`unparsed`, as sent): the source's clock is unknown. */
  | { offsetMs: undefined; unparsed: string | undefined; tokenUrl: string };

/**
 * How far the source's clock is ahead of ours (negative: behind), read from the HTTP `Date` of the
 * run's token response (the first token of the run: no extra request to the issuer); no offset
 * when the issuer sends none, or one that does not parse. Its resolution is one second.
 */
export async function measureServerClockOffset(job: LoadedJob, options: SourceSessionOptions & { runToken: RunToken }): Promise<ServerClockReading> {
  const session = openSourceSession(job, options);
  const token = await session.token.issued();
  if (token.serverDate === undefined) return { offsetMs: undefined, unparsed: token.unparsedDate, tokenUrl: tokenUrl(options.environment.source.authUrl) };
  // The Date header is stamped somewhere between sending and receiving: take the middle.
  return { offsetMs: token.serverDate - (token.requestedAt + token.receivedAt) / 2 };
}
