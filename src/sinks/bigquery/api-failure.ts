import { messageOf } from '../../errors.js';

/**
 * What a failed BigQuery call or job said, read from either shape it comes in: a client ApiError
 * (`code` = HTTP status, `errors[]` = {reason, message}) or a job's `status.errorResult`/`errors[]`.
 */
export interface ApiFailure {
  /** HTTP status, when the failure was an HTTP response. */
  status?: number;
  reasons: string[];
  messages: string[];
}

export interface ErrorProtoLike {
  reason?: string | null;
  message?: string | null;
  location?: string | null;
}

export function apiFailureOf(error: unknown): ApiFailure {
  const record = (typeof error === 'object' && error !== null ? error : {}) as {
    code?: unknown;
    errors?: unknown;
  };
  const status = typeof record.code === 'number' ? record.code : undefined;
  const protos = Array.isArray(record.errors) ? (record.errors as ErrorProtoLike[]) : [];
  const failure = fromErrorProtos(protos);
  // A network failure (ECONNRESET, ...) carries its name as a string `code`.
  if (typeof record.code === 'string') failure.reasons.push(record.code);
  if (failure.messages.length === 0) failure.messages.push(messageOf(error));
  return status === undefined ? failure : { ...failure, status };
}

/** A finished job's failure: `errorResult` first (the one that failed the job), then `errors`. */
export function jobFailureOf(status: { errorResult?: ErrorProtoLike | null; errors?: ErrorProtoLike[] | null }): ApiFailure {
  const protos = [...(status.errorResult ? [status.errorResult] : []), ...(status.errors ?? [])];
  return fromErrorProtos(protos);
}

function fromErrorProtos(protos: readonly ErrorProtoLike[]): ApiFailure {
  const reasons: string[] = [];
  const messages: string[] = [];
  for (const proto of protos) {
    if (proto.reason && !reasons.includes(proto.reason)) reasons.push(proto.reason);
    const message = proto.location ? `${proto.message ?? proto.reason} (at ${proto.location})` : (proto.message ?? proto.reason);
    if (message && !messages.includes(message)) messages.push(message);
  }
  return { reasons, messages };
}

// The reasons BigQuery documents as "retry with backoff": https://cloud.google.com/bigquery/docs/error-messages
const TRANSIENT_REASONS = new Set(['rateLimitExceeded', 'backendError', 'internalError']);
// The connection dropped before an answer came: safe to retry because every load carries a fixed
// job id (a second insert of the same job is refused as a duplicate, never loaded twice).
const TRANSIENT_NETWORK_CODES = new Set(['ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EAI_AGAIN', 'ECONNREFUSED']);

export function isTransient(failure: ApiFailure): boolean {
  if (failure.status !== undefined && failure.status >= 500) return true;
  return failure.reasons.some((reason) => TRANSIENT_REASONS.has(reason) || TRANSIENT_NETWORK_CODES.has(reason));
}

/** jobs.insert answers 409 with reason `duplicate` when the job id is taken. */
export function isDuplicate(failure: ApiFailure): boolean {
  return failure.status === 409 || failure.reasons.includes('duplicate');
}

export function isNotFound(failure: ApiFailure): boolean {
  return failure.status === 404 || failure.reasons.includes('notFound');
}

// BigQuery's text when it aborts one of two mutating DML statements that touched the same data
// (https://cloud.google.com/bigquery/docs/data-manipulation-language#dml_statement_conflicts): the
// aborted statement changed nothing, and the documentation says to retry it.
const CONCURRENT_UPDATE = /could not serialize access to table .* due to concurrent update/i;

/** A DML job (MERGE) aborted because another statement changed the same table or partitions. */
export function isConcurrentUpdate(failure: ApiFailure): boolean {
  return failure.messages.some((message) => CONCURRENT_UPDATE.test(message));
}
