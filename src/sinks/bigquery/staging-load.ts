import type { BigQuery, JobMetadata } from '@google-cloud/bigquery';
import type { BigQueryPlan } from './bigquery-plan.js';
import { BigQueryRowCountMismatchError } from './bigquery-errors.js';
import type { RetryContext } from './retry.js';
import { runJob, type JobOutcome, type JobPolling } from './run-job.js';
import { nullableFields, type StagingTable } from './staging-table.js';
import { stagingTableOptions } from './table-layout.js';
import { uploadLoadFile } from './upload-load-file.js';
import { tableName } from './table-name.js';

export interface StagingLoadRequest {
  client: BigQuery;
  plan: BigQueryPlan;
  staging: StagingTable;
  /** The run's NDJSON file, closed. */
  filePath: string;
  /** The rows the run wrote into the file. */
  rows: number;
  /** When BigQuery created the staging table (its clock), if it said. */
  stagingCreatedAt: number | undefined;
  location: string | undefined;
  /** Told the load's id as soon as it exists, so an abort can cancel it. */
  onJob(job: { jobId: string; location: string | undefined }): void;
  retry: RetryContext;
  polling: JobPolling;
}

/**
 * Loads the run's file into its (already created) staging table with one load job, and checks
 * BigQuery's own count of what it loaded against the rows written before anything is published:
 * a row lost or doubled on the way (a truncated upload, a bug in the encoder) fails the run here.
 */
export async function loadIntoStaging(request: StagingLoadRequest): Promise<{ load: JobOutcome; bigqueryRows: number | undefined }> {
  const { client, plan, staging, rows } = request;
  const stagingName = tableName({ ...plan, tableId: staging.tableId });
  const stagingTable = client.dataset(plan.datasetId, { projectId: plan.projectId }).table(staging.tableId);
  const load = await runJob({
    client,
    projectId: plan.projectId,
    stage: 'load',
    identity: plan.identity,
    location: request.location,
    insert: (jobId) =>
      uploadLoadFile(
        stagingTable,
        request.filePath,
        {
          jobId,
          // Set explicitly: BigQuery's own default is CSV.
          sourceFormat: 'NEWLINE_DELIMITED_JSON',
          // Never autodetect: the tile's typed columns are the schema (lineage included).
          schema: { fields: nullableFields(plan.fields) },
          // The staging table was created before, with its expiration; a load that outlives an
          // abort must not create it again without one.
          createDisposition: 'CREATE_NEVER',
          // A retried prepare of the same run replaces what an earlier try loaded.
          writeDisposition: 'WRITE_TRUNCATE',
          // The staging table's own partitioning and clustering, stated again: a truncating
          // load with another (or no) spec could be refused as incompatible.
          ...stagingTableOptions(plan.layout),
        },
        staging.jobName,
        plan.labels,
      ),
    // A load adopted after a 409 counts only if it ran into this staging table: one from an
    // earlier process of the same run id may have filled a staging table deleted since (by
    // its publish or abort), and the table created before would then be empty. Unknown times
    // (never from BigQuery) load again, which is safe: the load truncates.
    // Nor does one that loaded another number of rows than this run wrote (an earlier
    // extraction of the same run id): the next attempt loads this run's file.
    isAdoptable: (job) =>
      request.stagingCreatedAt !== undefined &&
      Number(job.statistics?.creationTime ?? Number.NaN) > request.stagingCreatedAt &&
      [undefined, rows].includes(outputRowsOf(job)),
    onJob: request.onJob,
    jobName: staging.jobName,
    target: stagingName,
    retry: request.retry,
    polling: request.polling,
  });
  const bigqueryRows = outputRowsOf(load.metadata);
  if (bigqueryRows !== undefined && bigqueryRows !== rows) {
    throw new BigQueryRowCountMismatchError(staging.jobName, stagingName, load.jobId, rows, bigqueryRows);
  }
  return { load, bigqueryRows };
}

function outputRowsOf(job: JobMetadata): number | undefined {
  const rows = Number(job.statistics?.load?.outputRows ?? Number.NaN);
  return Number.isFinite(rows) ? rows : undefined;
}
