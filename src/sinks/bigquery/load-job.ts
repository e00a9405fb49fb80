import { setTimeout as sleep } from 'node:timers/promises';
import type { BigQuery, JobLoadMetadata, JobMetadata } from '@google-cloud/bigquery';
import { apiFailureOf, isDuplicate, isTransient, jobFailureOf, type ApiFailure } from './api-failure.js';
import { BigQueryLoadError, BigQueryRequestError } from './bigquery-errors.js';
import { loadJobId, type LoadIdentity } from './job-id.js';
import { withRetry, type RetryContext } from './retry.js';

/** How often a running job is looked at: starts quick (small loads take seconds), backs off. */
export interface JobPolling {
  initialIntervalMs: number;
  maxIntervalMs: number;
  /** Load jobs tried in total when a job fails transiently or a failed job holds the id. */
  jobAttempts: number;
}

export const DEFAULT_JOB_POLLING: JobPolling = { initialIntervalMs: 500, maxIntervalMs: 5_000, jobAttempts: 3 };

export interface LoadJobRequest {
  client: BigQuery;
  projectId: string;
  datasetId: string;
  /** The destination as BigQuery addresses it, partition decorator included. */
  destinationTableId: string;
  /** Where the job runs; jobs.get needs it outside the US and EU multi-regions. */
  location: string | undefined;
  filePath: string;
  /** `configuration.load` without destination and job id, which are set here. */
  configuration: JobLoadMetadata;
  identity: LoadIdentity;
  tileId: string;
  /** `project.dataset.table[$YYYYMMDD]`, for messages. */
  target: string;
  retry: RetryContext;
  polling: JobPolling;
}

export interface LoadJobOutcome {
  jobId: string;
  metadata: JobMetadata;
}

/**
 * Runs one load job to completion, exactly once per load identity.
 *
 * The job id is derived from the load (see `loadJobId`), so when a request is retried after its
 * answer was lost, BigQuery answers 409 duplicate instead of loading again. A taken id is looked
 * up: a job that is still running is awaited, one that succeeded is this load's success, one that
 * failed is superseded by a new attempt with the next id (`_attempt2`, ...). A job this call
 * started that fails for good raises BigQueryLoadError; BigQuery applies a failed load not at all,
 * so the table keeps its previous content.
 */
export async function runLoadJob(request: LoadJobRequest): Promise<LoadJobOutcome> {
  const { retry } = request;
  let lastFailure: { jobId: string; failure: ApiFailure } | undefined;

  for (let attempt = 1; attempt <= request.polling.jobAttempts; attempt++) {
    const jobId = loadJobId(request.identity, attempt);
    let metadata: JobMetadata;
    let adopted = false;
    try {
      metadata = await withRetry('jobs.insert (load)', () => insertLoadJob(request, jobId), retry);
      retry.logger.info({ jobId, target: request.target }, 'BigQuery load job started');
    } catch (error) {
      const failure = apiFailureOf(error);
      if (!isDuplicate(failure)) {
        throw new BigQueryLoadError(request.tileId, request.target, jobId, failure.messages, { cause: error });
      }
      retry.logger.info({ jobId }, 'BigQuery load job id already taken (an earlier try reached BigQuery); looking it up');
      metadata = await getJob(request, jobId, request.location);
      adopted = true;
    }

    metadata = await awaitDone(request, jobId, metadata);
    const status = metadata.status ?? {};
    if (!status.errorResult) return { jobId, metadata };

    const failure = jobFailureOf(status);
    lastFailure = { jobId, failure };
    // A failed job we adopted may be a previous run's, with other data; a transient failure may
    // pass on a second try. Either way the id is spent, so the next attempt gets a new one.
    if (!adopted && !isTransient(failure)) {
      throw new BigQueryLoadError(request.tileId, request.target, jobId, failure.messages);
    }
    retry.logger.warn({ jobId, reasons: failure.reasons, adopted }, 'BigQuery load job failed; trying again with a new job id');
  }

  const jobId = lastFailure?.jobId ?? loadJobId(request.identity, request.polling.jobAttempts);
  const messages = lastFailure?.failure.messages ?? [];
  throw new BigQueryLoadError(request.tileId, request.target, jobId, [
    `gave up after ${request.polling.jobAttempts} load jobs`,
    ...messages,
  ]);
}

async function insertLoadJob(request: LoadJobRequest, jobId: string): Promise<JobMetadata> {
  const table = request.client.dataset(request.datasetId, { projectId: request.projectId }).table(request.destinationTableId);
  // A fresh copy per try: the client deletes keys (jobId, ...) from the object it is given.
  const [job] = await table.createLoadJob(request.filePath, { ...structuredClone(request.configuration), jobId });
  return job.metadata as JobMetadata;
}

async function getJob(request: LoadJobRequest, jobId: string, location: string | undefined): Promise<JobMetadata> {
  const job = request.client.job(jobId, { projectId: request.projectId, ...(location ? { location } : {}) });
  try {
    const [metadata] = await withRetry('jobs.get', () => job.getMetadata(), request.retry);
    return metadata as JobMetadata;
  } catch (error) {
    throw new BigQueryRequestError(request.tileId, `looking up load job ${jobId} for ${request.target}`, apiFailureOf(error).messages, {
      cause: error,
    });
  }
}

async function awaitDone(request: LoadJobRequest, jobId: string, initial: JobMetadata): Promise<JobMetadata> {
  let metadata = initial;
  let intervalMs = request.polling.initialIntervalMs;
  // BigQuery names the job's real location in its answer; the dataset's is the fallback.
  const location = initial.jobReference?.location ?? request.location;
  while (metadata.status?.state !== 'DONE') {
    await sleep(intervalMs, undefined, request.retry.signal ? { signal: request.retry.signal } : undefined);
    intervalMs = Math.min(request.polling.maxIntervalMs, intervalMs * 2);
    metadata = await getJob(request, jobId, location);
  }
  return metadata;
}
