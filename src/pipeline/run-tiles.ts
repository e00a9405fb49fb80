import { tmpdir } from 'node:os';
import { Agent, type Dispatcher } from 'undici';
import type { EnvironmentConfig } from '../config/environment-schema.js';
import type { LoadedJob } from '../config/load-config.js';
import type { ClientCredentials } from '../config/secrets.js';
import type { Logger } from '../log.js';
// Not the bigquery index: that would load the BigQuery client for CSV-only runs.
import { removeStaleLoadFiles } from '../sinks/bigquery/ndjson-file.js';
import { removeStaleTempFiles } from '../sinks/csv/index.js';
import type { Sink } from '../sinks/sink.js';
import { newRunId } from './run-id.js';
import { runTile } from './run-tile.js';
import type { RetrySettings } from './source-session.js';
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
 * Runs each tile once, up to `tileConcurrency` at a time; a failed tile does not stop the others.
 * Every tile gets its own fresh token (spec: "first obtains a fresh token").
 */
export async function runTiles(jobs: readonly LoadedJob[], options: RunOptions): Promise<RunSummary> {
  const startedAt = (options.now ?? (() => new Date()))();
  const runId = options.runId ?? newRunId(startedAt);
  const ownDispatcher = options.dispatcher === undefined;
  const dispatcher = options.dispatcher ?? new Agent({ keepAliveTimeout: 10_000, connections: 16 });
  // A run killed mid-write (OOM, SIGKILL, node drain) leaves its temp files; the next run sweeps them.
  const removed = [
    ...(await removeStaleTempFiles(options.environment.sinks.csv.directory, { olderThan: startedAt })),
    ...(await removeStaleLoadFiles(options.environment.tempDirectory ?? tmpdir(), { olderThan: startedAt })),
  ];
  if (removed.length > 0) options.logger.warn({ files: removed }, `removed ${removed.length} temp file(s) left by an interrupted run`);
  const tiles: Array<TileSummary | undefined> = new Array(jobs.length);
  let next = 0;
  // A few workers take jobs in order; the summary keeps the jobs' order whatever finishes first.
  const worker = async (): Promise<void> => {
    while (next < jobs.length && !options.signal?.aborted) {
      const index = next++;
      const job = jobs[index]!;
      tiles[index] = await runTile(job, {
        environment: options.environment,
        credentials: options.credentials,
        dispatcher,
        logger: options.logger,
        sinks: options.buildSinks(job),
        runId,
        startedAt,
        retry: options.retry,
        signal: options.signal,
      });
    }
  };
  try {
    const workers = Math.min(options.environment.tileConcurrency, jobs.length);
    await Promise.all(Array.from({ length: workers }, worker));
  } finally {
    if (ownDispatcher) await dispatcher.close();
  }
  const finished = tiles.filter((tile): tile is TileSummary => tile !== undefined);
  const failed = finished.filter((tile) => tile.status === 'failed').length;
  return {
    runId,
    startedAt: startedAt.toISOString(),
    durationMs: Date.now() - startedAt.getTime(),
    tiles: finished,
    succeeded: finished.length - failed,
    failed,
  };
}
