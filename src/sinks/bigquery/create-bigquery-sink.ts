import type { BigQuery } from '@google-cloud/bigquery';
import type { EnvironmentConfig } from '../../config/environment-schema.js';
import type { BigQuerySinkConfig, JobConfig } from '../../config/job-schema.js';
import { BigQueryConfigError } from './bigquery-errors.js';
import { BigQuerySink } from './bigquery-sink.js';

/**
 * Builds the BigQuery sink of one job from validated configuration: dataset and location from the
 * environment unless the sink overrides them, the job's time zone for partition days.
 */
export function createBigQuerySink(
  job: Pick<JobConfig, 'name' | 'timezone' | 'schedule'>,
  sink: BigQuerySinkConfig,
  environment: Pick<EnvironmentConfig, 'sinks' | 'tempDirectory'>,
  overrides: { client?: BigQuery } = {},
): BigQuerySink {
  const defaults = environment.sinks.bigquery;
  if (defaults === undefined) {
    throw new BigQueryConfigError(
      `job ${job.name}: has a bigquery sink, but the environment config has no sinks.bigquery (projectId, dataset, location)`,
    );
  }
  return new BigQuerySink({
    config: sink,
    defaults,
    timezone: job.timezone ?? job.schedule?.timezone ?? 'UTC',
    ...(environment.tempDirectory ? { tempDirectory: environment.tempDirectory } : {}),
    ...(overrides.client ? { client: overrides.client } : {}),
  });
}
