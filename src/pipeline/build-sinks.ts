import type { BigQuery } from '@google-cloud/bigquery';
import { ConfigError } from '../config/config-error.js';
import type { EnvironmentConfig } from '../config/environment-schema.js';
import type { LoadedJob } from '../config/load-config.js';
import { BigQuerySink } from '../sinks/bigquery/bigquery-sink.js';
import { CsvSink } from '../sinks/csv/csv-sink.js';
import type { Sink } from '../sinks/sink.js';

export interface SinkFactoryOptions {
  /** Injected in tests and the benchmark (emulator); production uses Application Default Credentials. */
  bigqueryClient?: BigQuery;
}

/**
 * Builds the sinks a job asks for, merging the environment's defaults. Invalid combinations (a
 * BigQuery sink with no dataset anywhere, a bad path template) are configuration errors, found
 * by `tilehouse validate` before anything runs.
 */
export function buildSinks(job: LoadedJob, environment: EnvironmentConfig, options: SinkFactoryOptions = {}): Sink[] {
  return job.sinks.map((config, index) => {
    if (config.type === 'csv') {
      try {
        const csv: ConstructorParameters<typeof CsvSink>[0] = {
          config,
          directory: environment.sinks.csv.directory,
          timezone: job.timezone,
        };
        if (environment.tempDirectory !== undefined) csv.tempDirectory = environment.tempDirectory;
        return new CsvSink(csv);
      } catch (error) {
        throw ConfigError.single({ file: job.file, field: `sinks[${index}].path`, value: JSON.stringify(config.path), message: (error as Error).message });
      }
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
    return new BigQuerySink({
      config,
      defaults: { location: 'US', ...defaults, dataset },
      client: options.bigqueryClient,
      tempDirectory: environment.tempDirectory,
      timezone: job.timezone,
    });
  });
}
