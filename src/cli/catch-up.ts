import type { RunToken } from '../source/session-token.js';
import type { LoadedJob } from '../config/load-config.js';
import { isTilehouseError, type TilehouseError } from '../errors.js';
import { addDays, catchUpPlan, splitWindows, type CatchUpPlan, type DateWindow } from '../pipeline/windows/date-windows.js';
import type { JobRunSummary } from '../pipeline/job-summary.js';
import type { IncrementalPlan } from '../pipeline/plan-job.js';
import { openWindowSession, skippedWindowSummary, type WindowClock, type WindowSession } from '../pipeline/windows/run-windows.js';
import { calendarDateIn } from '../transform/index.js';
import type { Sink } from '../sinks/sink.js';
import { jobForIncremental } from './backfill-command.js';
import type { CliIo, CliSeams } from './command.js';
import type { RunnableWorkspace } from './load-workspace.js';
import type { CommandOutput } from './output.js';
import { windowStateReaders } from '../sinks/registry.js';
import { backfillRunMetrics, metricsPusherFor } from '../metrics/push-metrics.js';
import { runWindowsReported } from './window-runs.js';
import { LOCAL_CLOCK_NOTE, OPEN_WINDOW_NOTE } from '../presentation/window-lines.js';

/** What an incremental run covered, for the summary: the plan, then what became of its windows. */
export interface CatchUpReport {
  job: string;
  today: string | null;
  firstUnpublished: string | null;
  firstRun: boolean;
  lookbackDays: number;
  maxWindows: number;
  reason: string;
  /** The windows this run exported (tried), oldest first. */
  windows: DateWindow[];
  /** Of `windows`, those that did not succeed. */
  failed: DateWindow[];
  /** Windows past maxWindows, left for the next run. */
  left: DateWindow[];
  /** Of `windows`, those exported before they ended on the source's clock (today's): recorded as open, exported again by the next run. */
  open: DateWindow[];
  /** What looked wrong although a window succeeded (an empty window), as `backfill` prints it. */
  warnings: string[];
  /** Whose clock placed the windows (absent: the run stopped before it knew). */
  clock?: WindowClock;
  /** The state could not be read or the targets disagree: nothing was run. */
  error?: { code: string; message: string };
}

export interface CatchUpContext {
  workspace: RunnableWorkspace;
  output: CommandOutput;
  io: CliIo;
  seams: CliSeams;
  /** Flags a printed command needs for the same workspace (--config, --jobs). */
  fixFlags: readonly string[];
  /** The run's shared token (`plan` fetches one for all its jobs unless tokenScope is 'job'). */
  runToken?: RunToken;
  /** `run --strict`: an empty window fails (backfill_window_empty, nothing published) instead of warning. */
  strict?: boolean;
}

/** Reads what every target holds and plans the next run; the session gives the source's today. */
export async function planCatchUp(job: LoadedJob, sinks: readonly Sink[], session: WindowSession, context: CatchUpContext): Promise<CatchUpPlan> {
  const settings = job.incremental!;
  const today = calendarDateIn(session.now(), job.timezone);
  const readers = await windowStateReaders(job, sinks, context.workspace.environment, context.seams.sinkOptions ?? {}, context.output.logger);
  const days = settings.startFrom <= today ? splitWindows(settings.startFrom, addDays(today, 1), 'day') : [];
  const states = [];
  for (const reader of readers) {
    const { done, open } = await reader.heldWindows(days);
    states.push({ target: reader.target, done, open });
  }
  return catchUpPlan(job.name, settings, today, states, context.fixFlags);
}

/**
 * One run of an incremental job: plan from what the targets hold, then the planned windows
 * through the backfill's runner, oldest first, one at a time (so a run stopped half way leaves
 * every day before the first unpublished one published, and the next run starts there). A state
 * that cannot be read, or targets that disagree, fail the job before any export.
 */
export async function runCatchUp(job: LoadedJob, sinks: readonly Sink[], runId: string, context: CatchUpContext): Promise<{ tiles: JobRunSummary[]; report: CatchUpReport }> {
  const started = Date.now();
  const outcome = await catchUp(job, sinks, runId, context);
  // One push per run to the scheduled runs' group (not the backfills'): the freshness alerts watch
  // it, and a run that found every day published is a success too.
  const metrics = metricsPusherFor(context.workspace.environment.metrics, context.output.logger);
  if (metrics !== undefined) {
    const tokenFetches = outcome.tiles.reduce((sum, tile) => sum + tile.tokenFetches, 0);
    await metrics.pushTileRun(backfillRunMetrics(job.name, outcome.tiles, { durationMs: Date.now() - started, tokenFetches }), job.schedule);
  }
  return outcome;
}

/** The job's window session (token, source clock) with the context's settings and run token, if any. */
function windowSessionOf(job: LoadedJob, { workspace, output, seams, io, runToken }: CatchUpContext): Promise<WindowSession> {
  return openWindowSession(job, {
    environment: workspace.environment,
    credentials: workspace.credentials,
    logger: output.logger,
    retry: seams.retry,
    signal: io.signal,
    configFile: workspace.configFile,
    ...(runToken === undefined ? {} : { runToken }),
  });
}

async function catchUp(job: LoadedJob, sinks: readonly Sink[], runId: string, context: CatchUpContext): Promise<{ tiles: JobRunSummary[]; report: CatchUpReport }> {
  const settings = job.incremental!;
  const { workspace, output, seams, io } = context;
  const base = { job: job.name, lookbackDays: settings.lookbackDays, maxWindows: settings.maxWindows };
  let session: WindowSession;
  try {
    session = await windowSessionOf(job, context);
  } catch (error) {
    return refused(job, runId, base, error);
  }
  try {
    let plan: CatchUpPlan;
    try {
      plan = await planCatchUp(job, sinks, session, context);
    } catch (error) {
      return refused(job, runId, base, error);
    }
    output.logger[plan.left.length > 0 ? 'warn' : 'info']({ job: job.name, today: plan.today, windows: plan.windows.length, left: plan.left.length }, `${job.name}: ${plan.reason}`);
    const report: CatchUpReport = {
      ...base,
      today: plan.today,
      firstUnpublished: plan.firstUnpublished,
      firstRun: plan.firstRun,
      reason: plan.reason,
      windows: plan.windows,
      failed: [],
      left: plan.left,
      open: [],
      warnings: [],
      clock: session.clock,
    };
    if (plan.windows.length === 0) return { tiles: [], report };
    const strict = context.strict === true;
    const { summary } = await runWindowsReported({ job, sinks, windows: plan.windows, workspace, output, io, seams, runId, concurrency: 1, strict, label: 'catch-up', session, pushMetrics: false });
    const open = summary.windows.filter((result) => result.open && result.summary.status === 'succeeded').map((result) => result.window);
    const warnings = summary.windows.flatMap((result) => result.warnings);
    return { tiles: summary.windows.map((result) => result.summary), report: { ...report, failed: summary.failed, open, warnings } };
  } finally {
    await session.close();
  }
}

/** Nothing run: the job counts as one failed tile carrying the reason. */
function refused(job: LoadedJob, runId: string, base: Pick<CatchUpReport, 'job' | 'lookbackDays' | 'maxWindows'>, error: unknown): { tiles: JobRunSummary[]; report: CatchUpReport } {
  if (!isTilehouseError(error) || error.exitCode === 2) throw error;
  const tile = skippedWindowSummary(job, runId, error as TilehouseError);
  return {
    tiles: [tile],
    report: {
      ...base,
      today: null,
      firstUnpublished: null,
      firstRun: false,
      reason: `nothing run: ${error.message}`,
      windows: [],
      failed: [],
      left: [],
      open: [],
      warnings: [],
      error: { code: error.code, message: error.message },
    },
  };
}

/** The lines `run` prints for an incremental job after its tiles: the windows, why, and what is left. */
export function catchUpLines(report: CatchUpReport): string {
  const lines = [`  incremental ${report.job}: ${report.reason}`];
  if (report.clock?.basis === 'local') lines.push(`       note: ${LOCAL_CLOCK_NOTE}`);
  // The same line as backfill prints for the same window (windowLines).
  for (const warning of report.warnings) lines.push(`       warning: ${warning}`);
  if (report.open.length > 0) lines.push(`       open: ${report.open.map((window) => window.from).join(', ')}: ${OPEN_WINDOW_NOTE}`);
  if (report.failed.length > 0) lines.push(`       ${report.failed.length} window${report.failed.length === 1 ? '' : 's'} failed; the next run starts again at ${report.failed[0]!.from}`);
  if (report.left.length > 0) lines.push(`       warning: ${report.left.length} day windows (${report.left[0]!.from}..${report.left.at(-1)!.to}) left for the next run (maxWindows ${report.maxWindows})`);
  return `${lines.join('\n')}\n`;
}

/** What `plan` shows of an incremental job: the next run's windows, or why it would run none. */
export async function incrementalPlanOf(job: LoadedJob, sinks: readonly Sink[], context: CatchUpContext): Promise<IncrementalPlan> {
  let session: WindowSession | undefined;
  try {
    session = await windowSessionOf(job, context);
    const plan = await planCatchUp(job, sinks, session, context);
    return { today: plan.today, reason: plan.reason, windows: plan.windows, lookback: plan.lookback, left: plan.left, open: plan.open, reopened: plan.reopened, clock: session.clock };
  } catch (error) {
    if (!isTilehouseError(error) || error.exitCode === 2) throw error;
    return { today: null, reason: 'nothing: the state could not be planned', windows: [], lookback: [], left: [], open: [], reopened: [], error: { code: error.code, message: error.message } };
  } finally {
    await session?.close();
  }
}
