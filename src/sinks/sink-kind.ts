import type { EnvironmentConfig } from '../config/environment-schema.js';
import type { SinkConfig } from '../config/job-schema.js';
import type { LoadedJob } from '../config/load-config.js';
import type { Logger } from '../log.js';
import type { SinkFactoryOptions } from './build-sinks.js';
import type { Sink } from './sink.js';
import type { WindowStateReader } from './window-state.js';

/**
 * Everything the rest of tilehouse asks of one kind of sink, given by the kind's folder
 * (`csv/descriptor.ts`, `bigquery/descriptor.ts`) and found through `registry.ts`: callers ask the
 * descriptors instead of importing a kind or branching on its name. What a descriptor needs that
 * is heavy (a Cloud client) it loads on demand, so a run that does not use the kind never pays for it.
 */
export interface SinkKind {
  /** The `type` of the kind's sink configs in a job file. */
  readonly type: SinkConfig['type'];
  /** What the targets of the job's sinks of this kind hold, window by window, in the job's sink order. */
  windowStateReaders(job: LoadedJob, sinks: readonly Sink[], environment: EnvironmentConfig, options: SinkFactoryOptions, logger: Logger): Promise<WindowStateReader[]>;
}
