import { Agent, type Dispatcher } from 'undici';
import type { EnvironmentConfig } from '../config/environment-schema.js';
import type { LoadedJob } from '../config/load-config.js';
import type { ClientCredentials } from '../config/secrets.js';
import type { Logger } from '../log.js';
import type { Sink } from '../sinks/sink.js';
import { newRunId } from './run-id.js';
import { runTile, type RetrySettings } from './run-tile.js';
import type { RunSummary, TileSummary } from './tile-summary.js';

export interface RunOptions {
  environment: EnvironmentConfig;
  credentials: ClientCredentials;
  logger: Logger;
  buildSinks: (job: LoadedJob) => Sink[];
  dispatcher?: Dispatcher;
  retry?: RetrySettings;
  signal?: AbortSignal;
  runId?: string;
  now?: () => Date;
}

/**
 * Runs each tile once, one after another; a failed tile does not stop the others.
 * Every tile gets its own fresh token (spec: "first obtains a fresh token").
 */
export async function runTiles(jobs: readonly LoadedJob[], options: RunOptions): Promise<RunSummary> {
  const startedAt = (options.now ?? (() => new Date()))();
  const runId = options.runId ?? newRunId(startedAt);
  const ownDispatcher = options.dispatcher === undefined;
  const dispatcher = options.dispatcher ?? new Agent({ keepAliveTimeout: 10_000, connections: 16 });
  const tiles: TileSummary[] = [];
  try {
    for (const job of jobs) {
      if (options.signal?.aborted) break;
      tiles.push(
        await runTile(job, {
          environment: options.environment,
          credentials: options.credentials,
          dispatcher,
          logger: options.logger,
          sinks: options.buildSinks(job),
          runId,
          startedAt,
          retry: options.retry,
          signal: options.signal,
        }),
      );
    }
  } finally {
    if (ownDispatcher) await dispatcher.close();
  }
  const failed = tiles.filter((tile) => tile.status === 'failed').length;
  return {
    runId,
    startedAt: startedAt.toISOString(),
    durationMs: Date.now() - startedAt.getTime(),
    tiles,
    succeeded: tiles.length - failed,
    failed,
  };
}
