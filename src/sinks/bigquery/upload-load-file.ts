import { once } from 'node:events';
import { open } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import type { Job, JobLoadMetadata, JobMetadata, Table } from '@google-cloud/bigquery';
import { BigQueryLoadFileError } from './bigquery-errors.js';

/**
 * Uploads a local file as one load job (a multipart jobs.insert) and resolves with the job
 * resource BigQuery answered.
 *
 * Not `table.createLoadJob(path)`: that pipes `fs.createReadStream(path)` without an error
 * listener, so a missing or unreadable file emits an unhandled 'error' event that kills the
 * process. Here the file is opened first (a missing file is a tile failure with a code) and
 * `pipeline` owns both streams' errors.
 */
export async function uploadLoadFile(
  table: Table,
  filePath: string,
  configuration: JobLoadMetadata & { jobId: string },
  jobName: string,
  labels?: Record<string, string>,
): Promise<JobMetadata> {
  let handle;
  try {
    handle = await open(filePath, 'r');
  } catch (error) {
    throw new BigQueryLoadFileError(jobName, filePath, { cause: error });
  }
  const source = handle.createReadStream();
  // A fresh copy per call: the client deletes keys (jobId, ...) from the object it is given.
  // `createWriteStream_` (what createLoadJob uses), not `createWriteStream`: the latter also polls
  // the job to its end and turns a failed job into a stream error; polling is runJob's business.
  const upload = (labels ? withJobLabels(table, labels) : table).createWriteStream_(structuredClone(configuration));
  // Listened to before any byte flows, so neither the answer nor an error can be missed.
  const answered = once(upload, 'job') as Promise<[Job]>;
  // Errors reach us through `answered` and `pipeline`; this keeps one that comes after both
  // settled (a late socket error) from being an unhandled 'error' event.
  upload.on('error', () => undefined);
  try {
    const [, [job]] = await Promise.all([pipeline(source, upload), answered]);
    return job.metadata as JobMetadata;
  } finally {
    source.destroy();
  }
}

type AuthenticatedRequest = (requestOptions: { multipart?: Array<{ body?: unknown }> }, config: unknown) => unknown;

/**
 * The table, seen through a client whose upload request carries `labels` on the job.
 *
 * `createWriteStream_` puts everything it is given under `configuration.load`, but BigQuery reads
 * job labels from `configuration.labels` (a `labels` key inside `load` would be refused). So the
 * job resource it builds (the multipart request's first, JSON, part) gets the labels added just
 * before it is sent. Only this one upload's view of the client is changed: the shared client is not.
 */
function withJobLabels(table: Table, labels: Record<string, string>): Table {
  const client = table.bigQuery as unknown as { makeAuthenticatedRequest: AuthenticatedRequest };
  const makeAuthenticatedRequest: AuthenticatedRequest = (requestOptions, config) => {
    const metadata = requestOptions.multipart?.[0];
    if (metadata && typeof metadata.body === 'string') {
      const job = JSON.parse(metadata.body) as { configuration?: Record<string, unknown> };
      job.configuration = { ...job.configuration, labels };
      metadata.body = JSON.stringify(job);
    }
    return client.makeAuthenticatedRequest(requestOptions, config);
  };
  const labelledClient = Object.create(client, { makeAuthenticatedRequest: { value: makeAuthenticatedRequest } }) as unknown;
  return Object.create(table, { bigQuery: { value: labelledClient } }) as Table;
}
