import type { BigQuery } from '@google-cloud/bigquery';
import type { Storage } from '@google-cloud/storage';
import { ConfigError } from '../config/config-error.js';
import type { EnvironmentConfig } from '../config/environment-schema.js';
import type { LoadedJob } from '../config/load-config.js';
import { CsvSink } from './csv/index.js';
import type { Sink } from './sink.js';
import type { GcsWriteSettings } from './csv/csv-object-writer.js';

export interface SinkFactoryOptions {
  /** Injected in tests and the benchmark (emulator); production uses Application Default Credentials. */
  bigqueryClient?: BigQuery;
  /** Injected in tests (fake-gcs-server); production creates one on first use by a gs:// CSV target. */
  storageClient?: Storage;
  /** Injected in tests: the retry limits, request timeout and chunk size of gs:// uploads. */
  gcsWrite?: GcsWriteSettings;
}

/**
 * Builds the sinks a job asks for, merging the environment's defaults. Invalid combinations (a
 * BigQuery sink with no dataset anywhere, a bad path template) are configuration errors, found
 * by `tilehouse validate` before anything runs.
 */
export async function buildSinks(job: LoadedJob, environment: EnvironmentConfig, options: SinkFactoryOptions = {}): Promise<Sink[]> {
  const sinks: Sink[] = [];
  for (const [index, config] of job.sinks.entries()) {
    if (config.type === 'csv') {
      try {
        sinks.push(new CsvSink({ config, directory: environment.sinks.csv.directory, timezone: job.timezone, stopDeadlineMs: environment.stopDeadlineMs, ...(options.storageClient ? { storageClient: options.storageClient } : {}), ...(options.gcsWrite ? { gcsWrite: options.gcsWrite } : {}) }));
      } catch (error) {
        throw ConfigError.single({ file: job.file, field: `sinks[${index}].path`, value: JSON.stringify(config.path), message: (error as Error).message });
      }
      continue;
    }
    const defaults = environment.sinks.bigquery;
    const dataset = config.dataset ?? defaults?.dataset;
    if (dataset === undefined) {
      throw ConfigError.single({
        file: job.file,
        field: `sinks[${index}].dataset`,
        message: 'no dataset: set it here or as sinks.bigquery.dataset in the environment config',
      });
    }
    // Loaded on demand: the BigQuery client adds ~80 ms to every start, which CSV-only
    // deployments should not pay (cold start is measured by the benchmark).
    const { BigQuerySink } = await import('./bigquery/index.js');
    sinks.push(
      new BigQuerySink({
        config,
        defaults: { location: 'US', ...defaults, dataset },
        client: options.bigqueryClient,
        tempDirectory: environment.tempDirectory,
        timezone: job.timezone,
        stopDeadlineMs: environment.stopDeadlineMs,
      }),
    );
  }
  return sinks;
}
