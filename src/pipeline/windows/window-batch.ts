import type { EnvironmentConfig } from '../../config/environment-schema.js';
import type { LoadedJob } from '../../config/load-config.js';
import type { ClientCredentials } from '../../config/secrets.js';
import type { Logger } from '../../log.js';
import type { SinkFactoryOptions } from '../../sinks/build-sinks.js';
import { runRecorderFor } from '../../sinks/registry.js';
import type { Sink } from '../../sinks/sink.js';
import type { JobRunSummary } from '../job-summary.js';
import type { RetrySettings } from '../source-session.js';
import type { DateWindow } from './date-windows.js';
import { runBackfill, type BackfillSummary } from './run-windows.js';
import type { WindowSession } from './window-session.js';

/** What a run of day windows needs of its workspace and process. */
export interface WindowRunContext {
  environment: EnvironmentConfig;
  credentials: ClientCredentials;
  /** The environment file, named by the message of a source whose clock is unknown. */
  configFile: string;
  logger: Logger;
  signal?: AbortSignal;
  retry?: RetrySettings;
  sinkOptions?: SinkFactoryOptions;
  /** Where a run of windows pushes its metrics; absent when metrics are off. */
  metrics?: WindowMetrics;
}

/**
 * Pushes a run of windows as one run of its job. `metrics/` lies above `pipeline/`, so the pusher
 * is handed in (workspace/run-context.ts makes it) rather than imported here.
 */
export interface WindowMetrics {
  pushWindowRun(
    job: string,
    tiles: readonly JobRunSummary[],
    totals: { durationMs: number; tokenFetches: number },
    schedule?: { cron: string; timezone: string },
    grouping?: Record<string, string>,
  ): Promise<unknown>;
}

/** How far a run of windows has got, for a progress line. */
export interface WindowProgress {
  job: string;
  done: number;
  total: number;
  rows: number;
  elapsedMs: number;
}

export interface WindowBatch {
  job: LoadedJob;
  sinks: readonly Sink[];
  windows: readonly DateWindow[];
  runId: string;
  concurrency: number;
  strict: boolean;
  /** --allow-shrink: a tripped publish guard is reported, the window publishes. */
  allowShrink?: boolean;
  session?: WindowSession;
  /** After each window. */
  onProgress?: (progress: WindowProgress) => void;
  /** Once the windows have run (or stopped), before the metrics are pushed: a progress line closes here. */
  onWindowsRun?: () => void;
  /** False: the caller pushes the metrics itself (an incremental run pushes to the schedule's group). Default true. */
  pushMetrics?: boolean;
}

export interface WindowBatchOutcome {
  summary: BackfillSummary;
  rows: number;
  startedAt: Date;
  durationMs: number;
}

/**
 * What `backfill` and an incremental run share once they know their windows: run them through
 * runBackfill with the run ledger appended after each window, progress after each, and the
 * metrics pushed at the end to the backfills' group.
 */
export async function runWindowBatch(batch: WindowBatch, context: WindowRunContext): Promise<WindowBatchOutcome> {
  const { job, windows } = batch;
  const { logger } = context;
  const ledger = await runRecorderFor([job], context.environment, context.sinkOptions ?? {}, logger, context.signal);
  const startedAt = new Date();
  const started = startedAt.getTime();
  let rows = 0;
  let summary: BackfillSummary;
  try {
    summary = await runBackfill(job, {
      environment: context.environment,
      credentials: context.credentials,
      logger,
      sinks: batch.sinks,
      windows,
      concurrency: batch.concurrency,
      runId: batch.runId,
      retry: context.retry,
      signal: context.signal,
      strict: batch.strict,
      ...(batch.allowShrink === true ? { allowShrink: true } : {}),
      configFile: context.configFile,
      ...(batch.session === undefined ? {} : { session: batch.session }),
      ...(ledger === undefined ? {} : { afterWindow: (result) => ledger(result.summary, { ...result.window, open: result.open }) }),
      onWindowDone: (result, done) => {
        rows += result.summary.rows;
        batch.onProgress?.({ job: job.name, done, total: windows.length, rows, elapsedMs: Date.now() - started });
      },
    });
  } finally {
    batch.onWindowsRun?.();
  }
  const metrics = batch.pushMetrics === false ? undefined : context.metrics;
  if (metrics !== undefined && summary.windows.length > 0) {
    await metrics.pushWindowRun(
      job.name,
      summary.windows.map((result) => result.summary),
      { durationMs: Date.now() - started, tokenFetches: summary.tokenFetches },
      undefined,
      { mode: 'backfill' },
    );
  }
  return { summary, rows, startedAt, durationMs: Date.now() - started };
}
