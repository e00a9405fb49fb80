import { setTimeout as sleep } from 'node:timers/promises';
import type { BigQuery, JobMetadata } from '@google-cloud/bigquery';
import { TilehouseError } from '../../errors.js';
import { backoffDelay } from '../../retry.js';
import { apiFailureOf, isConcurrentUpdate, isDuplicate, isNotFound, isTransient, jobFailureOf, type ApiFailure } from './api-failure.js';
import { BigQueryJobTimeoutError, BigQueryLoadError, BigQueryPublishError, BigQueryQuotaExceededError, BigQueryRequestError } from './bigquery-errors.js';
import { jobId as jobIdFor, type JobStage, type LoadIdentity } from './job-id.js';
import { withRetry, type RetryContext } from './retry.js';

/** How often a running job is looked at: starts quick (small jobs take seconds), backs off. */
export interface JobPolling {
  initialIntervalMs: number;
  maxIntervalMs: number;
  /** Jobs tried in total when a job fails transiently or a failed job holds the id. */
  jobAttempts: number;
  /** How long one job is waited for before the run gives up on knowing its outcome. */
  maxWaitMs: number;
}

// A tile's load or copy takes seconds; half an hour means something is stuck, and a scheduled run
// should say so rather than hang until its next tick.
export const DEFAULT_JOB_POLLING: JobPolling = { initialIntervalMs: 500, maxIntervalMs: 5_000, jobAttempts: 3, maxWaitMs: 30 * 60_000 };

export interface JobRequest {
  client: BigQuery;
  projectId: string;
  stage: JobStage;
  /** What the job does, for messages; default: `load` for the load stage, else `copy`. */
  kind?: 'load' | 'copy' | 'query';
  identity: LoadIdentity;
  /** Where the job runs; jobs.get and jobs.cancel need it outside the US and EU multi-regions. */
  location: string | undefined;
  /** Sends jobs.insert with this id; resolves with the job resource BigQuery answered. */
  insert(jobId: string): Promise<JobMetadata>;
  /**
   * For a job adopted after a 409 that succeeded: whether what it wrote is still there to build
   * on. When not, the id is spent like a failed one and the next attempt runs. Default: yes.
   */
  isAdoptable?(metadata: JobMetadata): boolean;
  /** Told the id and location of each job as soon as it exists, so an abort can cancel it. */
  onJob?(job: { jobId: string; location: string | undefined }): void;
  /** The job's `name`, for messages (`job <name>: ...`). */
  jobName: string;
  /** `project.dataset.table[$YYYYMMDD]`, for messages. */
  target: string;
  /** Its signal (if any) stops waits; publish passes none, so a started copy is seen to its end. */
  retry: RetryContext;
  polling: JobPolling;
}

export interface JobOutcome {
  jobId: string;
  metadata: JobMetadata;
  /** The job was already there (409): an earlier try, or an earlier process of the same run id. */
  adopted: boolean;
}

/**
 * Runs one job of a run to completion, exactly once per run identity and stage.
 *
 * The job id is derived from the run (see `jobId`), so when a request is retried after its answer
 * was lost, or a run is repeated with the same run id, BigQuery answers 409 duplicate instead of
 * running it again. A taken id is looked up: a job that is still running is awaited, one that
 * succeeded is this job's success, one that failed is superseded by a new attempt with the next
 * id (`_attempt2`, ...). A job this call started that fails for good raises BigQueryLoadError
 * (load) or BigQueryPublishError (copy); BigQuery applies a failed job not at all.
 *
 * A DML job (the MERGE of `merge` mode) that BigQuery aborted for a concurrent update (another
 * MERGE onto the same table: a backfill's shards, overlapping runs) changed nothing, and BigQuery
 * says to retry it: it is tried again under the next id after a backoff (full jitter, so shards
 * that collided do not collide again in step), within the retry limits and the run's retry budget,
 * and outside `jobAttempts` (a busy table is no sign of a broken job).
 */
export async function runJob(request: JobRequest): Promise<JobOutcome> {
  const { retry } = request;
  const operation = kindOf(request);
  let lastFailure: { jobId: string; failure: ApiFailure } | undefined;
  let concurrentRetries = 0;
  /** Counts one retry of a job aborted by a concurrent update and waits its backoff; throws when none is left. */
  const waitToRetryConcurrentUpdate = async (jobId: string, failure: ApiFailure): Promise<void> => {
    if (concurrentRetries + 1 >= retry.limits.maxAttempts || (retry.budget !== undefined && !retry.budget.tryConsume())) {
      throw jobError(request, jobId, [
        `aborted by concurrent updates ${concurrentRetries + 1} times; retry limits or the run's retry budget spent`,
        ...failure.messages,
      ]);
    }
    concurrentRetries += 1;
    const delayMs = backoffDelay(concurrentRetries, retry.limits);
    retry.logger.warn(
      { jobId, delayMs, attempt: concurrentRetries },
      `BigQuery ${operation} job aborted by a concurrent update of ${request.target} (nothing applied); retrying`,
    );
    await sleep(delayMs, undefined, retry.signal ? { signal: retry.signal } : undefined);
  };

  for (let attempt = 1; attempt <= request.polling.jobAttempts + concurrentRetries; attempt++) {
    retry.signal?.throwIfAborted();
    const jobId = jobIdFor(request.identity, request.stage, attempt);
    const inserted = await insertJob(request, jobId, operation);
    if ('concurrentUpdate' in inserted) {
      lastFailure = { jobId, failure: inserted.concurrentUpdate };
      await waitToRetryConcurrentUpdate(jobId, inserted.concurrentUpdate);
      continue;
    }
    let { metadata } = inserted;
    const { adopted } = inserted;
    request.onJob?.({ jobId, location: metadata.jobReference?.location ?? request.location });

    metadata = await awaitDone(request, jobId, metadata);
    const status = metadata.status ?? {};
    if (!status.errorResult) {
      if (!adopted || !request.isAdoptable || request.isAdoptable(metadata)) return { jobId, metadata, adopted };
      retry.logger.warn({ jobId }, `adopted BigQuery ${operation} job succeeded, but what it wrote is gone; trying again with a new job id`);
      lastFailure = { jobId, failure: { reasons: ['adoptedResultGone'], messages: [`the result of the earlier job ${jobId} is gone`] } };
      continue;
    }

    const failure = jobFailureOf(status);
    lastFailure = { jobId, failure };
    if (!adopted && isConcurrentUpdate(failure)) {
      await waitToRetryConcurrentUpdate(jobId, failure);
      continue;
    }
    if (!adopted && isQuotaExceeded(failure)) throw new BigQueryQuotaExceededError(request.jobName, operation, jobId, request.target, failure.messages);
    // A failed job we adopted may be a previous run's, with other data; a transient failure may
    // pass on a second try. Either way the id is spent, so the next attempt gets a new one.
    if (!adopted && !isTransient(failure)) throw jobError(request, jobId, failure.messages);
    retry.logger.warn({ jobId, reasons: failure.reasons, adopted }, `BigQuery ${operation} job failed; trying again with a new job id`);
  }

  const jobId = lastFailure?.jobId ?? jobIdFor(request.identity, request.stage, request.polling.jobAttempts);
  throw jobError(request, jobId, [`gave up after ${request.polling.jobAttempts} ${operation} jobs`, ...(lastFailure?.failure.messages ?? [])]);
}

/**
 * Inserts an attempt's job. An id already taken (an earlier try or run reached BigQuery) or an
 * insert whose every answer was lost is looked up by the id instead: that job is adopted. A job
 * aborted by a concurrent update at insert is handed back for the caller's retry.
 */
async function insertJob(
  request: JobRequest,
  jobId: string,
  operation: ReturnType<typeof kindOf>,
): Promise<{ metadata: JobMetadata; adopted: boolean } | { concurrentUpdate: ApiFailure }> {
  const { retry } = request;
  try {
    // A load's insert carries the whole file: its deadline is the job wait's, not one request's.
    const insertRetry = request.stage === 'load' ? { ...retry, requestTimeoutMs: Math.max(retry.requestTimeoutMs ?? 0, request.polling.maxWaitMs) } : retry;
    const metadata = await withRetry(`jobs.insert (${operation})`, () => request.insert(jobId), insertRetry);
    retry.logger.info({ jobId, target: request.target }, `BigQuery ${operation} job started`);
    return { metadata, adopted: false };
  } catch (error) {
    // Our own refusals (a load file that cannot be read) keep their code.
    if (error instanceof TilehouseError) throw error;
    const failure = apiFailureOf(error);
    // The client turns an insert answer that already says DONE with errors into a thrown error.
    if (isConcurrentUpdate(failure)) return { concurrentUpdate: failure };
    if (isQuotaExceeded(failure)) throw new BigQueryQuotaExceededError(request.jobName, operation, jobId, request.target, failure.messages);
    if (isDuplicate(failure)) {
      retry.logger.info({ jobId }, `BigQuery ${operation} job id already taken (an earlier try or run reached BigQuery); looking it up`);
      return { metadata: await getJob(request, jobId, request.location), adopted: true };
    }
    if (isTransient(failure) && !retry.signal?.aborted) {
      // Every try's answer was lost (5xx, reset, timeout): the insert may still have reached
      // BigQuery and run. "Failed" is said only once the id is seen to be free.
      retry.logger.warn({ jobId, reasons: failure.reasons }, `no answer to BigQuery ${operation} job insert; looking the job up by its id`);
      const found = await findJob(request, jobId, request.location);
      if (found === undefined) throw jobError(request, jobId, ['BigQuery never answered the insert, and no job has its id', ...failure.messages], error);
      return { metadata: found, adopted: true };
    }
    throw jobError(request, jobId, failure.messages, error);
  }
}

/** Asks BigQuery to cancel a job; best effort (a job that already finished ignores it). */
export async function cancelJob(client: BigQuery, job: { projectId: string; jobId: string; location: string | undefined }, retry: RetryContext): Promise<void> {
  await withRetry(
    'jobs.cancel',
    () => client.job(job.jobId, { projectId: job.projectId, ...(job.location ? { location: job.location } : {}) }).cancel(),
    retry,
  );
}

function kindOf(request: JobRequest): 'load' | 'copy' | 'query' {
  return request.kind ?? (request.stage === 'load' ? 'load' : 'copy');
}

/**
 * quotaExceeded is BigQuery's long-term limit (table operations per day, ...): unlike
 * rateLimitExceeded (retried with backoff), another try within this run would fail the same way
 * and count against the same quota once more.
 */
function isQuotaExceeded(failure: ApiFailure): boolean {
  return failure.reasons.includes('quotaExceeded');
}

function jobError(request: JobRequest, jobId: string, messages: readonly string[], cause?: unknown): TilehouseError {
  const options = cause === undefined ? undefined : { cause };
  return request.stage === 'load'
    ? new BigQueryLoadError(request.jobName, request.target, jobId, messages, options)
    : new BigQueryPublishError(request.jobName, request.target, jobId, messages, options, kindOf(request) === 'query' ? 'query' : 'copy');
}

/**
 * The job of that id. `missing: 'undefined'` answers a 404 with undefined (a job whose insert got no
 * answer may never have been created); otherwise every failure is a BigQueryRequestError naming `doing`.
 */
async function lookUpJob(
  request: JobRequest,
  jobId: string,
  location: string | undefined,
  doing: string,
  missing: 'undefined',
): Promise<JobMetadata | undefined>;
async function lookUpJob(request: JobRequest, jobId: string, location: string | undefined, doing: string): Promise<JobMetadata>;
async function lookUpJob(
  request: JobRequest,
  jobId: string,
  location: string | undefined,
  doing: string,
  missing?: 'undefined',
): Promise<JobMetadata | undefined> {
  const job = request.client.job(jobId, { projectId: request.projectId, ...(location ? { location } : {}) });
  try {
    const [metadata] = await withRetry('jobs.get', () => job.getMetadata(), request.retry);
    return metadata as JobMetadata;
  } catch (error) {
    if (request.retry.signal?.aborted) throw error;
    const failure = apiFailureOf(error);
    if (missing === 'undefined' && isNotFound(failure)) return undefined;
    throw new BigQueryRequestError(request.jobName, doing, failure.messages, { cause: error });
  }
}

/**
 * The job of a run's stage that ran, looked up by its ids without inserting one (attempt 1, then
 * the next while the one before failed): undefined when BigQuery has no job of these ids that did
 * not fail. One still running counts as run: an earlier try's publish is under way.
 */
export async function ranJobOf(request: Omit<JobRequest, 'insert'>): Promise<{ jobId: string; metadata: JobMetadata } | undefined> {
  const lookup = { ...request, insert: () => Promise.reject(new Error('a lookup inserts no job')) };
  for (let attempt = 1; attempt <= request.polling.jobAttempts; attempt++) {
    const jobId = jobIdFor(request.identity, request.stage, attempt);
    const metadata = await lookUpJob(
      lookup,
      jobId,
      request.location,
      `looking up job ${jobId} for ${request.target} (did an earlier try of this run id publish?)`,
      'undefined',
    );
    if (metadata === undefined) return undefined;
    if (!metadata.status?.errorResult) return { jobId, metadata };
  }
  return undefined;
}

function getJob(request: JobRequest, jobId: string, location: string | undefined): Promise<JobMetadata> {
  return lookUpJob(request, jobId, location, `looking up job ${jobId} for ${request.target}`);
}

/** The job of that id, or undefined when BigQuery says there is none (404). */
function findJob(request: JobRequest, jobId: string, location: string | undefined): Promise<JobMetadata | undefined> {
  return lookUpJob(
    request,
    jobId,
    location,
    `looking up job ${jobId} for ${request.target} after its insert got no answer (it may have run: look before re-running)`,
    'undefined',
  );
}

async function awaitDone(request: JobRequest, jobId: string, initial: JobMetadata): Promise<JobMetadata> {
  let metadata = initial;
  let intervalMs = request.polling.initialIntervalMs;
  const deadline = Date.now() + request.polling.maxWaitMs;
  // BigQuery names the job's real location in its answer; the dataset's is the fallback.
  const location = initial.jobReference?.location ?? request.location;
  const signal = request.retry.signal;
  while (metadata.status?.state !== 'DONE') {
    if (Date.now() >= deadline) {
      throw new BigQueryJobTimeoutError(request.jobName, kindOf(request), jobId, request.target, request.polling.maxWaitMs);
    }
    await sleep(Math.min(intervalMs, Math.max(0, deadline - Date.now())), undefined, signal ? { signal } : undefined);
    intervalMs = Math.min(request.polling.maxIntervalMs, intervalMs * 2);
    metadata = await getJob(request, jobId, location);
  }
  return metadata;
}
