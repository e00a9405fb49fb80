import { describeOutputs } from '../pipeline/format-summary.js';
import type { LoadedJob } from '../config/load-config.js';
import { backfillRunMetrics, metricsPusherFor } from '../metrics/push-metrics.js';
import { shortDuration } from '../pipeline/progress.js';
import type { DateWindow, WindowStep } from '../pipeline/backfill-windows.js';
import { runBackfill, type BackfillSummary, type WindowSession } from '../pipeline/run-backfill.js';
import type { Sink } from '../sinks/sink.js';
import { EXIT, type CliIo, type CliSeams } from './command.js';
import type { RunnableWorkspace } from './load-workspace.js';
import type { CommandOutput } from './output.js';
import { runRecorderFor } from '../sinks/registry.js';
import { countNoun } from '../count-noun.js';

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
        screen?.set(request.label, `${job.name}  ${done}/${countNoun(windows.length, 'window')}, ${countNoun(rows, 'row')}, ETA ${shortDuration(eta)}`);
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

/** One line per window (rows and targets, or the error), its warnings, and the commands that re-run the failed ones. */
export function windowLines(summary: BackfillSummary, rerun: readonly string[]): string[] {
  const lines: string[] = [];
  if (!summary.exact) lines.push('  note: the job names no backfill.bucketColumn, so each window is exact only to within one day');
  if (summary.clock.basis === 'local') lines.push(`  note: ${LOCAL_CLOCK_NOTE}`);
  for (const { window, open, summary: tile, warnings } of summary.windows) {
    const detail =
      tile.status === 'succeeded'
        ? describeOutputs(tile, { pages: false })
        : `${tile.status === 'failed' ? 'FAILED' : 'PARTIALLY PUBLISHED'} ${tile.error?.code}: ${tile.error?.message}`;
    lines.push(`  ${window.from}..${window.to}: ${detail}${open && tile.status === 'succeeded' ? ` (open: ${OPEN_WINDOW_NOTE})` : ''}`);
    for (const warning of warnings) lines.push(`    warning: ${warning}`);
  }
  if (rerun.length > 0) {
    lines.push(`failed windows: ${summary.failed.length}; re-run only them with:`);
    for (const command of rerun) lines.push(`  ${command}`);
  }
  return lines;
}

/** What a run on `source.clock: local` says of its windows, in its lines. */
export const LOCAL_CLOCK_NOTE = "windows follow this machine's clock (source.clock: local), not the source's";

/** What a window published before it ended is, in the lines that report it. */
export const OPEN_WINDOW_NOTE = "the day had not ended on the source's clock: recorded as open, exported again by the next incremental run or backfill --resume";

/** 3 when a window was partially published, 1 when one failed, else 0. */
export function windowsExitCode(summary: BackfillSummary): number {
  if (summary.windows.some((result) => result.summary.status === 'partially_published')) return EXIT.partiallyPublished;
  return summary.failed.length > 0 ? EXIT.tileFailed : EXIT.ok;
}

/** Contiguous failed windows, merged, as the commands that re-run only them. */
export function rerunCommands(failed: readonly DateWindow[], job: string, step: WindowStep, passThrough: readonly string[]): string[] {
  const ranges: DateWindow[] = [];
  for (const window of failed) {
    const last = ranges.at(-1);
    if (last !== undefined && last.to === window.from) last.to = window.to;
    else ranges.push({ ...window });
  }
  return ranges.map((range) => ['tilehouse backfill', '--job', job, '--from', range.from, '--to', range.to, '--step', step, ...passThrough].join(' '));
}

/** The --config/--jobs flags a printed command needs to act on the same workspace. */
export function workspaceFlags(values: { config?: string; jobs?: string }): string[] {
  return [...(values.config ? ['--config', values.config] : []), ...(values.jobs ? ['--jobs', values.jobs] : [])];
}
