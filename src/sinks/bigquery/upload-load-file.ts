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
  tileId: string,
): Promise<JobMetadata> {
  let handle;
  try {
    handle = await open(filePath, 'r');
  } catch (error) {
    throw new BigQueryLoadFileError(tileId, filePath, { cause: error });
  }
  const source = handle.createReadStream();
  // A fresh copy per call: the client deletes keys (jobId, ...) from the object it is given.
  // `createWriteStream_` (what createLoadJob uses), not `createWriteStream`: the latter also polls
  // the job to its end and turns a failed job into a stream error; polling is runJob's business.
  const upload = table.createWriteStream_(structuredClone(configuration));
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
