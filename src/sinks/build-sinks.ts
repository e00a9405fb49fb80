import type { EnvironmentConfig } from '../config/environment-schema.js';
import type { LoadedJob } from '../config/load-config.js';
import { sinkKindOf } from './registry.js';
import type { Sink } from './sink.js';
import type { SinkFactoryOptions } from './sink-kind.js';

// Its home is the contract every kind imports (sink-kind.ts); named here too for the callers that build sinks.
export type { SinkFactoryOptions } from './sink-kind.js';

/**
 * Builds the sinks a job asks for, each by its kind's descriptor (registry.ts), merging the environment's defaults. Invalid combinations (a
 * BigQuery sink with no dataset anywhere, a bad path template) are configuration errors, found
 * by `tilehouse validate` before anything runs.
 */
export async function buildSinks(job: LoadedJob, environment: EnvironmentConfig, options: SinkFactoryOptions = {}): Promise<Sink[]> {
  const sinks: Sink[] = [];
  // One at a time, in the job's order: the first invalid sink is the error reported.
  for (const [index, config] of job.sinks.entries()) sinks.push(await sinkKindOf(config).build(config, index, job, environment, options));
  return sinks;
}
