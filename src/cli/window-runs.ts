import type { LoadedJob } from '../config/load-config.js';
import { backfillRunMetrics, metricsPusherFor } from '../metrics/push-metrics.js';
import { windowProgressText } from '../presentation/progress-text.js';
import type { DateWindow } from '../pipeline/windows/date-windows.js';
import { runBackfill, type BackfillSummary, type WindowSession } from '../pipeline/windows/run-windows.js';
import type { Sink } from '../sinks/sink.js';
import { EXIT, type CliIo, type CliSeams } from './command.js';
import type { RunnableWorkspace } from './load-workspace.js';
import type { CommandOutput } from './output.js';
import { runRecorderFor } from '../sinks/registry.js';

/**
 * What `backfill` and an incremental `run` share once they know their windows: run them through
 * runBackfill with the run ledger appended after each window, a progress line, the metrics pushed
 * at the end; and the lines and exit code that report them. The commands only parse, pick windows
 * and print.
 */
export interface WindowRunRequest {
  job: LoadedJob;
  sinks: readonly Sink[];
  windows: readonly DateWindow[];
  workspace: RunnableWorkspace;
  output: CommandOutput;
  io: CliIo;
  seams: CliSeams;
  runId: string;
  concurrency: number;
  strict: boolean;
  /** Screen label of the progress line ('backfill', 'catch-up'). */
  label: string;
  session?: WindowSession;
  /** False: the caller pushes the metrics itself (an incremental run pushes to the schedule's group). Default true. */
  pushMetrics?: boolean;
}

export interface WindowRunOutcome {
  summary: BackfillSummary;
  rows: number;
  startedAt: Date;
  durationMs: number;
}

export async function runWindowsReported(request: WindowRunRequest): Promise<WindowRunOutcome> {
  const { job, windows, workspace, output, seams } = request;
  const { logger, screen } = output;
  const ledger = await runRecorderFor([job], workspace.environment, seams.sinkOptions ?? {}, logger, request.io.signal);
  const startedAt = new Date();
  const started = startedAt.getTime();
  let rows = 0;
  let summary: BackfillSummary;
  try {
    summary = await runBackfill(job, {
      environment: workspace.environment,
      credentials: workspace.credentials,
      logger,
      sinks: request.sinks,
      windows,
      concurrency: request.concurrency,
      runId: request.runId,
      retry: seams.retry,
      signal: request.io.signal,
      strict: request.strict,
      configFile: workspace.configFile,
      ...(request.session === undefined ? {} : { session: request.session }),
      ...(ledger === undefined ? {} : { afterWindow: (result) => ledger(result.summary, { ...result.window, open: result.open }) }),
      onWindowDone: (result, done) => {
        rows += result.summary.rows;
        const eta = ((Date.now() - started) / done) * (windows.length - done);
        screen?.set(request.label, windowProgressText(job.name, done, windows.length, rows, eta));
      },
    });
  } finally {
    screen?.close();
  }
  const metrics = request.pushMetrics === false ? undefined : metricsPusherFor(workspace.environment.metrics, logger);
  if (metrics !== undefined && summary.windows.length > 0) {
    await metrics.pushTileRun(backfillRunMetrics(job.name, summary.windows.map((result) => result.summary), { durationMs: Date.now() - started, tokenFetches: summary.tokenFetches }), undefined, { mode: 'backfill' });
  }
  return { summary, rows, startedAt, durationMs: Date.now() - started };
}

/** 3 when a window was partially published, 1 when one failed, else 0. */
export function windowsExitCode(summary: BackfillSummary): number {
  if (summary.windows.some((result) => result.summary.status === 'partially_published')) return EXIT.partiallyPublished;
  return summary.failed.length > 0 ? EXIT.tileFailed : EXIT.ok;
}

/** The --config/--jobs flags a printed command needs to act on the same workspace. */
export function workspaceFlags(values: { config?: string; jobs?: string }): string[] {
  return [...(values.config ? ['--config', values.config] : []), ...(values.jobs ? ['--jobs', values.jobs] : [])];
}
