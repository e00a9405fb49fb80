import type { BigQuery } from '@google-cloud/bigquery';
import type { Storage } from '@google-cloud/storage';
import type { EnvironmentConfig } from '../config/environment-schema.js';
import type { LoadedJob } from '../config/load-config.js';
import { sinkKindOf } from './registry.js';
import type { Sink } from './sink.js';
import type { GcsWriteSettings } from './files/object-writer.js';
import type { S3Client } from '@aws-sdk/client-s3';
import type { S3WriteSettings } from './s3/s3-object-writer.js';

export interface SinkFactoryOptions {
  /** Injected in tests and the benchmark (emulator); production uses Application Default Credentials. */
  bigqueryClient?: BigQuery;
  /** Injected in tests (fake-gcs-server); production creates one on first use by a gs:// CSV target. */
  storageClient?: Storage;
  /** Injected in tests: the retry limits, request timeout and chunk size of gs:// uploads. */
  gcsWrite?: GcsWriteSettings;
  /** Injected in tests: an S3 client (production makes one from `sinks.s3` on first use by an s3:// target) and the retry limits and part size of s3:// uploads. */
  s3Client?: S3Client;
  s3Write?: S3WriteSettings;
}

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
