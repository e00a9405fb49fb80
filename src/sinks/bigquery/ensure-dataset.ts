import type { BigQuery } from '@google-cloud/bigquery';
import { activeGoogleCredentials } from '../google/google-credentials.js';
import { apiFailureOf, isDuplicate, isNotFound, type ApiFailure } from './api-failure.js';
import { BigQueryPermissionDeniedError, BigQueryRequestError } from './bigquery-errors.js';
import { withRetry, type RetryContext } from './retry.js';
import { datasetName } from './table-name.js';

export interface DatasetState {
  /** Where the dataset lives (and so where its load jobs run). */
  location: string | undefined;
  created: boolean;
}

/**
 * Makes sure the dataset exists, creating it in the configured location if not. A dataset that
 * exists elsewhere is used as it is: its location is where the load will run.
 */
export async function ensureDataset(
  client: BigQuery,
  target: { projectId: string; datasetId: string; location: string; jobName: string },
  retry: RetryContext,
): Promise<DatasetState> {
  const dataset = client.dataset(target.datasetId, { projectId: target.projectId });
  const name = datasetName(target);
  try {
    const [metadata] = await withRetry('datasets.get', () => dataset.getMetadata(), retry);
    return { location: (metadata as { location?: string }).location, created: false };
  } catch (error) {
    const failure = apiFailureOf(error);
    if (failure.status === 403) throw await datasetAccessDenied(target.jobName, name, 'bigquery.datasets.get', failure, error);
    if (!isNotFound(failure)) {
      throw new BigQueryRequestError(target.jobName, `reading dataset ${name}`, failure.messages, { cause: error });
    }
  }
  try {
    await withRetry('datasets.insert', () => dataset.create({ location: target.location }), retry);
    retry.logger.info({ dataset: name, location: target.location }, 'BigQuery dataset created');
    return { location: target.location, created: true };
  } catch (error) {
    const failure = apiFailureOf(error);
    // Another tile of the same run created it between our get and insert.
    if (isDuplicate(failure)) return { location: target.location, created: false };
    if (failure.status === 403) throw await datasetAccessDenied(target.jobName, name, 'bigquery.datasets.create', failure, error);
    throw new BigQueryRequestError(target.jobName, `creating dataset ${name} in ${target.location}`, failure.messages, { cause: error });
  }
}

/**
 * A 403 on the dataset, before the first page: the permission the call needed and the principal
 * it was refused to (the metadata server's or the key file's service account), so the grant can
 * be written from the message alone.
 */
export async function datasetAccessDenied(
  jobName: string,
  dataset: string,
  permission: string,
  failure: ApiFailure,
  cause: unknown,
): Promise<BigQueryPermissionDeniedError> {
  const credentials = activeGoogleCredentials();
  const principal = credentials === undefined ? "the run's identity" : await credentials.principal();
  return new BigQueryPermissionDeniedError(jobName, dataset, permission, principal, failure.messages, { cause });
}
