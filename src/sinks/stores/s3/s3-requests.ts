import type { S3Client } from '@aws-sdk/client-s3';
import type { Logger } from 'pino';
import { RetryBudget, withRetries, type RetryLimits } from '../../../retry.js';
import { s3CodeOf, s3StatusOf } from './s3-errors.js';

// S3 asks for exponential backoff on 503 SlowDown and 500 InternalError; six tries ride out a
// short incident without holding a scheduled run for long (the gs:// writer's limits).
export const DEFAULT_S3_RETRY_LIMITS: RetryLimits = { maxAttempts: 6, baseDelayMs: 500, maxDelayMs: 16_000 };
export const DEFAULT_S3_RETRY_BUDGET = 30;
// A part of 5 MiB takes well under a minute on any link a CronJob pod has.
export const DEFAULT_S3_REQUEST_TIMEOUT_MS = 60_000;

/** A request that got no answer: the connection failed, or the request's own timeout passed. */
export class S3NoAnswerError extends Error {
  readonly transient = true;
  constructor(operation: string, cause: unknown, timedOut: boolean, timeoutMs: number) {
    super(`${operation}: ${timedOut ? `no answer within ${timeoutMs} ms` : cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}

/** A connection that failed or was cut (reset, refused, a socket closed before the answer), or a timeout. */
function isNetworkFailure(error: unknown): boolean {
  const shape = error as { name?: unknown; code?: unknown; message?: unknown; cause?: { code?: unknown } } | null;
  const code = typeof shape?.code === 'string' ? shape.code : typeof shape?.cause?.code === 'string' ? shape.cause.code : '';
  if (shape?.name === 'TimeoutError' || shape?.name === 'AbortError') return true;
  if (/^(E[A-Z]+|UND_ERR_\w+)$/.test(code)) return true;
  return /socket hang up|ECONNRESET|ECONNREFUSED|EPIPE|ETIMEDOUT|EAI_AGAIN|other side closed/i.test(String(shape?.message ?? ''));
}

/**
 * Whether another try may succeed: 5xx (S3's `InternalError`, `SlowDown`, `ServiceUnavailable`),
 * 429, 408 `RequestTimeout`, 409 `ConditionalRequestConflict` (S3: "a conflicting operation
 * occurred during the upload ... retry"), and a request that got no answer.
 */
export function isTransientS3Failure(error: unknown): boolean {
  if (error instanceof S3NoAnswerError) return true;
  const status = s3StatusOf(error);
  const code = s3CodeOf(error);
  if (status === undefined)
    return (
      code === 'TimeoutError' ||
      code === 'RequestTimeout' ||
      /ECONNRESET|ECONNREFUSED|EPIPE|socket hang up|ETIMEDOUT/.test(String((error as Error | null)?.message))
    );
  return status >= 500 || status === 429 || status === 408 || code === 'SlowDown' || code === 'RequestTimeout' || code === 'ConditionalRequestConflict';
}

export interface S3RequestsOptions {
  client: S3Client;
  logger: Logger;
  limits?: RetryLimits;
  /** The tile run's budget (shared with its source requests); a writer's own without it. */
  budget?: RetryBudget;
  requestTimeoutMs?: number;
  /** Ends a request in flight and any wait between retries (the run's stop, or the cleanup deadline). */
  signal?: AbortSignal;
}

// Any command of the client (its overloads do not unify across commands).
type Sendable = { readonly input: unknown };

/** One writer's S3 requests, each with its timeout, retried by tilehouse's one loop (src/retry.ts). */
export class S3Requests {
  readonly limits: RetryLimits;
  readonly budget: RetryBudget;
  readonly requestTimeoutMs: number;
  /** Retries spent (for the summary and the tests). */
  retries = 0;

  constructor(readonly options: S3RequestsOptions) {
    this.limits = options.limits ?? DEFAULT_S3_RETRY_LIMITS;
    this.budget = options.budget ?? new RetryBudget(DEFAULT_S3_RETRY_BUDGET);
    this.requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_S3_REQUEST_TIMEOUT_MS;
  }

  /** The same requests under another signal (a publish or cleanup that the run's stop must not cut short), sharing the budget. */
  withSignal(signal: AbortSignal | undefined, overrides: Partial<Pick<S3RequestsOptions, 'limits' | 'requestTimeoutMs'>> = {}): S3Requests {
    const { signal: _ignored, ...rest } = this.options;
    return new S3Requests({
      ...rest,
      budget: this.budget,
      limits: this.limits,
      requestTimeoutMs: this.requestTimeoutMs,
      ...overrides,
      ...(signal ? { signal } : {}),
    });
  }

  get signal(): AbortSignal | undefined {
    return this.options.signal;
  }

  /** One request, no retry; a lost or timed-out answer becomes S3NoAnswerError, the run's abort stays itself. */
  async once<T>(operation: string, command: Sendable): Promise<T> {
    const timeout = AbortSignal.timeout(this.requestTimeoutMs);
    const abortSignal = this.signal === undefined ? timeout : AbortSignal.any([timeout, this.signal]);
    try {
      return (await this.options.client.send(command as never, { abortSignal })) as T;
    } catch (error) {
      this.signal?.throwIfAborted();
      if (s3StatusOf(error) !== undefined) throw error;
      // A request that got no answer is worth another try; a client-side failure (no region, no
      // credentials in the chain) is not, and keeps its own message.
      if (!timeout.aborted && !isNetworkFailure(error)) throw error;
      throw new S3NoAnswerError(operation, error, timeout.aborted, this.requestTimeoutMs);
    }
  }

  /** Runs `attempt` until it succeeds or a failure is not transient, within the limits, the budget and the signal. */
  retrying<T>(operation: string, attempt: (attempt: number) => Promise<T>): Promise<T> {
    return withRetries(attempt, {
      limits: this.limits,
      budget: this.budget,
      ...(this.signal ? { signal: this.signal } : {}),
      classify: (error) => ({ retry: isTransientS3Failure(error) && this.signal?.aborted !== true }),
      onRetry: ({ attempt: n, delayMs, reason }) => {
        this.retries += 1;
        this.options.logger.warn({ operation, attempt: n, delayMs, reason }, `S3 ${operation} failed transiently; retrying`);
      },
    });
  }

  /** One command, retried as a whole (for requests whose repetition is harmless). */
  send<T>(operation: string, command: Sendable): Promise<T> {
    return this.retrying(operation, () => this.once<T>(operation, command));
  }
}
