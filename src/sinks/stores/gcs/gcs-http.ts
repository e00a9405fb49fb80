import type { Storage } from '@google-cloud/storage';
import type { Logger } from 'pino';
import { request, type Dispatcher } from 'undici';
import { withRetries, RetryBudget, type RetryLimits } from '../../../retry.js';
import { excerpt } from '../../../secret-scrubber.js';
import { unauthorizedVerdict } from '../../google/google-credentials.js';

/**
 * The Cloud Storage requests of a gs:// CSV run's write path (the temp object's resumable upload,
 * the manifest, the rewrite onto the target, the metadata reads that check it, the temp deletes),
 * sent by tilehouse itself (undici) with the client's credentials, and retried by tilehouse's
 * one retry loop (src/retry.ts) with the run's budget.
 *
 * Why not the client's own retry: @google-cloud/storage 8.x retries a write only when it carries
 * a precondition, and cannot resend the bytes of a streamed upload it did not keep (it fails with
 * "The offset is lower than the number of bytes written ... Initiate a new upload"); and when it
 * retries a rewrite whose answer was lost, it meets 412 from its own first attempt and reports a
 * conflict that never happened. A retry of those requests needs to know what the request meant
 * (query the persisted offset, read the target's metadata), so the code that knows owns it. The
 * client (and its default retry, which retries reads) keeps the read-only calls made at open and
 * by `check`/the sweep: listing the bucket, the target's generation, a header read.
 */

/** A failed request: `status` is the HTTP status, undefined for a reset, refused or timed-out request. */
export class GcsHttpError extends Error {
  constructor(
    message: string,
    readonly status: number | undefined,
    /** Whether another try may succeed (408, 429, 5xx, network failure, timeout). */
    readonly transient: boolean,
    cause?: unknown,
  ) {
    super(message, cause === undefined ? undefined : { cause });
  }
}

/** Cloud Storage documents these as retryable on every request, uploads included. */
export function isTransientStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

// A request that has not answered in this long is treated as lost (and retried after its effect is
// checked): a chunk of 2 MiB takes well under a second on any link a CronJob pod has.
export const DEFAULT_REQUEST_TIMEOUT_MS = 60_000;
// Cloud Storage asks for exponential backoff, starting around a second and capped at a minute;
// six tries ride out a short incident without holding a scheduled run for long.
export const DEFAULT_GCS_RETRY_LIMITS: RetryLimits = { maxAttempts: 6, baseDelayMs: 500, maxDelayMs: 16_000 };
export const DEFAULT_GCS_RETRY_BUDGET = 30;

export interface GcsHttpOptions {
  storage: Storage;
  logger: Logger;
  /** The word of the format written (`csv`, `parquet`) that opens its log lines; absent, `gs://`. */
  format?: string;
  limits?: RetryLimits;
  /** The tile run's budget (shared with its source requests); a writer's own one without it. */
  budget?: RetryBudget;
  requestTimeoutMs?: number;
  /** The run's stop: aborts a request in flight and any wait between retries. */
  signal?: AbortSignal;
}

interface StorageInternals {
  apiEndpoint: string;
  customEndpoint?: boolean;
  useAuthWithCustomEndpoint?: boolean;
  authClient: { getRequestHeaders(url?: string): Promise<Headers | Record<string, string>> };
}

export interface GcsAnswer {
  status: number;
  headers: Headers;
  text: string;
}

/** One writer's authenticated requests and their retries. */
export class GcsHttp {
  readonly limits: RetryLimits;
  readonly budget: RetryBudget;
  readonly requestTimeoutMs: number;
  private readonly internals: StorageInternals;
  /** Retries spent by this writer (for the summary and the tests). */
  retries = 0;

  constructor(readonly options: GcsHttpOptions) {
    this.limits = options.limits ?? DEFAULT_GCS_RETRY_LIMITS;
    this.budget = options.budget ?? new RetryBudget(DEFAULT_GCS_RETRY_BUDGET);
    this.requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.internals = options.storage as unknown as StorageInternals;
  }

  get signal(): AbortSignal | undefined {
    return this.options.signal;
  }

  /** `https://storage.googleapis.com/storage/v1` (or the emulator's origin). */
  get jsonBase(): string {
    return `${this.internals.apiEndpoint}/storage/v1`;
  }

  get uploadBase(): string {
    return `${this.internals.apiEndpoint}/upload/storage/v1`;
  }

  objectUrl(bucket: string, object: string): string {
    return `${this.jsonBase}/b/${encodeURIComponent(bucket)}/o/${encodeURIComponent(object)}`;
  }

  /**
   * One request, no retry. Answers with any status (the caller decides what a 308 or 412 means);
   * throws GcsHttpError (transient) for a network failure or a timeout, and the run's abort as is.
   */
  async send(method: string, url: string, init: { headers?: Record<string, string>; body?: Buffer | string; signal?: AbortSignal } = {}): Promise<GcsAnswer> {
    const headers: Record<string, string> = { ...init.headers };
    // An emulator endpoint gets no credentials, as the client does (customEndpoint without useAuthWithCustomEndpoint).
    if (!(this.internals.customEndpoint === true && this.internals.useAuthWithCustomEndpoint !== true)) {
      const auth = await this.internals.authClient.getRequestHeaders(url);
      new Headers(auth as ConstructorParameters<typeof Headers>[0]).forEach((value, key) => {
        headers[key] = value;
      });
    }
    const timeout = AbortSignal.timeout(this.requestTimeoutMs);
    const signal = AbortSignal.any([timeout, ...(this.signal ? [this.signal] : []), ...(init.signal ? [init.signal] : [])]);
    try {
      // undici's request, not fetch: fetch copies a Buffer body before sending it, a chunk's
      // worth of garbage per request (measured by the bench's gs:// peak RSS).
      const answer = await request(url, { method: method as Dispatcher.HttpMethod, headers, ...(init.body === undefined ? {} : { body: init.body }), signal });
      const text = await answer.body.text();
      const answerHeaders = new Headers();
      for (const [key, value] of Object.entries(answer.headers)) {
        if (value !== undefined) answerHeaders.set(key, Array.isArray(value) ? value.join(', ') : value);
      }
      return { status: answer.statusCode, headers: answerHeaders, text };
    } catch (error) {
      this.signal?.throwIfAborted();
      init.signal?.throwIfAborted();
      const detail = timeout.aborted ? `no answer within ${this.requestTimeoutMs} ms` : causeText(error);
      throw new GcsHttpError(`${method} ${redacted(url)}: ${detail}`, undefined, true, error);
    }
  }

  /** A failed answer as an error (Cloud Storage's own message when its body has one). */
  failure(method: string, url: string, answer: GcsAnswer): GcsHttpError {
    let message = excerpt(answer.text, 300);
    try {
      message = (JSON.parse(answer.text) as { error?: { message?: string } }).error?.message ?? message;
    } catch {
      // not JSON: keep the text
    }
    return new GcsHttpError(`${method} ${redacted(url)} answered ${answer.status}: ${message}`, answer.status, isTransientStatus(answer.status));
  }

  /**
   * Runs `attempt` with the one retry loop: a GcsHttpError marked transient is tried again, within
   * the attempts, the writer's budget and the run's signal; anything else ends it.
   */
  retrying<T>(operation: string, attempt: (attempt: number) => Promise<T>): Promise<T> {
    let refreshed = false;
    return withRetries(attempt, {
      limits: this.limits,
      budget: this.budget,
      ...(this.signal ? { signal: this.signal } : {}),
      classify: (error) => {
        // 401 on a request with a token: once more with a fresh token, then the identity's failure.
        const unauthorized = this.signal?.aborted === true ? undefined : unauthorizedVerdict(error, refreshed, `Cloud Storage ${operation}`);
        if (unauthorized !== undefined) {
          refreshed = true;
          return unauthorized;
        }
        return { retry: error instanceof GcsHttpError && error.transient && this.signal?.aborted !== true };
      },
      onRetry: ({ attempt: n, delayMs, reason }) => {
        this.retries += 1;
        this.options.logger.warn(
          { operation, attempt: n, delayMs, reason },
          `${this.options.format ?? 'gs://'}: Cloud Storage ${operation} failed transiently; retrying`,
        );
      },
    });
  }
}

/** A network failure with its code (undici's UND_ERR_SOCKET, ECONNRESET, ...), which names what happened. */
function causeText(error: unknown): string {
  const own = error as { code?: unknown; message?: unknown; cause?: { code?: unknown } } | null;
  const message = error instanceof Error ? error.message : String(error);
  const code = typeof own?.code === 'string' ? own.code : typeof own?.cause?.code === 'string' ? own.cause.code : undefined;
  return code === undefined ? message : `${message} (${code})`;
}

/** A URL for messages: a resumable session's `upload_id` is a bearer capability, so it is cut. */
export function redacted(url: string): string {
  return url.replace(/([?&]upload_id=)[^&]*/g, '$1…');
}
