import type { EnvironmentConfig } from '../config/environment-schema.js';
import type { LoadedJob } from '../config/load-config.js';
import type { Logger } from '../log.js';
import type { DateWindow } from '../pipeline/windows/date-windows.js';
import type { SinkFactoryOptions } from '../sinks/build-sinks.js';
import type { Sink } from '../sinks/sink.js';
import { UsageError } from './command.js';
import { sinkKinds, windowStateReaders } from '../sinks/registry.js';

/**
 * `backfill --resume`: the windows every sink of the job shows as done, to be skipped. A CSV sink
 * shows it with a manifest beside the window's file whose sha256 matches the file (so it needs
 * `manifest: true`); a BigQuery sink with its latest `_tilehouse_runs` row for the window saying
 * succeeded and published. A window any sink cannot vouch for runs again (re-running is safe:
 * each window replaces exactly its own file or partition).
 */
export async function doneWindowsOf(
  job: LoadedJob,
  sinks: readonly Sink[],
  windows: readonly DateWindow[],
  environment: EnvironmentConfig,
  options: SinkFactoryOptions,
  logger: Logger,
): Promise<Set<string>> {
  for (const kind of sinkKinds) {
    const refusal = kind.resumeRefusal(job, environment);
    if (refusal !== undefined) throw UsageError.of(refusal);
  }
  let done = new Set(windows.map((window) => window.from));
  for (const reader of await windowStateReaders(job, sinks, environment, options, logger)) {
    // An open window (published before its day ended) is not done: it runs again.
    const { done: finished } = await reader.heldWindows(windows);
    done = new Set([...done].filter((from) => finished.has(from)));
  }
  return done;
}
