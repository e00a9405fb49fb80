import type { RunToken } from '../../source/session-token.js';
import type { LoadedJob } from '../../config/load-config.js';
import { isTilehouseError, type TilehouseError } from '../../errors.js';
import { addDays, catchUpPlan, splitWindows, type CatchUpPlan, type DateWindow } from './date-windows.js';
import { skippedWindowSummary, type JobRunSummary } from '../job-summary.js';
import type { IncrementalPlan } from '../plan-job.js';
import { openWindowSession, type WindowClock, type WindowSession } from './window-session.js';
import { calendarDateIn } from '../../transform/index.js';
import type { Sink } from '../../sinks/sink.js';
import { windowStateReaders, type WindowStateReader } from '../../sinks/registry.js';
import { targetStatesOf } from './held-windows.js';
import { runWindowBatch, type WindowRunContext } from './window-batch.js';

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

export interface CatchUpContext extends WindowRunContext {
  /** Flags a printed command needs for the same workspace (--config, --jobs). */
  fixFlags: readonly string[];
  /** The run's shared token (`plan` fetches one for all its jobs unless tokenScope is 'job'). */
  runToken?: RunToken;
  /** `run --strict`: an empty window fails (backfill_window_empty, nothing published) instead of warning. */
  strict?: boolean;
  /** --allow-shrink: a tripped publish guard is reported, the window publishes. */
  allowShrink?: boolean;
  /** What reads the targets' state; default: each sink kind's readers, from the sink registry. Tests hand in fakes. */
  stateReaders?: (job: LoadedJob, sinks: readonly Sink[]) => Promise<WindowStateReader[]>;
}

/** Reads what every target holds and plans the next run; the session gives the source's today. */
export async function planCatchUp(job: LoadedJob, sinks: readonly Sink[], session: WindowSession, context: CatchUpContext): Promise<CatchUpPlan> {
  const settings = job.incremental!;
  const today = calendarDateIn(session.now(), job.timezone);
  const readers = await (context.stateReaders?.(job, sinks) ?? windowStateReaders(job, sinks, context.environment, context.sinkOptions ?? {}, context.logger));
  const days = settings.startFrom <= today ? splitWindows(settings.startFrom, addDays(today, 1), 'day') : [];
  const states = await targetStatesOf(readers, days);
  return catchUpPlan(job.name, settings, today, states, context.fixFlags);
}

/**
 * One run of an incremental job: plan from what the targets hold, then the planned windows
 * through the backfill's runner, oldest first, one at a time (so a run stopped half way leaves
 * every day before the first unpublished one published, and the next run starts there). A state
 * that cannot be read, or targets that disagree, fail the job before any export.
 */
export async function runCatchUp(
  job: LoadedJob,
  sinks: readonly Sink[],
  runId: string,
  context: CatchUpContext,
): Promise<{ tiles: JobRunSummary[]; report: CatchUpReport }> {
  const started = Date.now();
  const outcome = await catchUp(job, sinks, runId, context);
  // One push per run to the scheduled runs' group (not the backfills'): the freshness alerts watch
  // it, and a run that found every day published is a success too.
  if (context.metrics !== undefined) {
    const tokenFetches = outcome.tiles.reduce((sum, tile) => sum + tile.tokenFetches, 0);
    await context.metrics.pushWindowRun(job.name, outcome.tiles, { durationMs: Date.now() - started, tokenFetches }, job.schedule);
  }
  return outcome;
}

/** The job's window session (token, source clock) with the context's settings and run token, if any. */
function windowSessionOf(job: LoadedJob, { environment, credentials, logger, retry, signal, configFile, runToken }: CatchUpContext): Promise<WindowSession> {
  return openWindowSession(job, {
    environment,
    credentials,
    logger,
    retry,
    signal,
    configFile,
    ...(runToken === undefined ? {} : { runToken }),
  });
}

async function catchUp(
  job: LoadedJob,
  sinks: readonly Sink[],
  runId: string,
  context: CatchUpContext,
): Promise<{ tiles: JobRunSummary[]; report: CatchUpReport }> {
  const settings = job.incremental!;
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
    context.logger[plan.left.length > 0 ? 'warn' : 'info'](
      { job: job.name, today: plan.today, windows: plan.windows.length, left: plan.left.length },
      `${job.name}: ${plan.reason}`,
    );
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
    const { summary } = await runWindowBatch(
      { job, sinks, windows: plan.windows, runId, concurrency: 1, strict, allowShrink: context.allowShrink === true, session, pushMetrics: false },
      context,
    );
    const open = summary.windows.filter((result) => result.open && result.summary.status === 'succeeded').map((result) => result.window);
    const warnings = summary.windows.flatMap((result) => result.warnings);
    return { tiles: summary.windows.map((result) => result.summary), report: { ...report, failed: summary.failed, open, warnings } };
  } finally {
    await session.close();
  }
}

/** Nothing run: the job counts as one failed tile carrying the reason. */
function refused(
  job: LoadedJob,
  runId: string,
  base: Pick<CatchUpReport, 'job' | 'lookbackDays' | 'maxWindows'>,
  error: unknown,
): { tiles: JobRunSummary[]; report: CatchUpReport } {
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

/** What `plan` shows of an incremental job: the next run's windows, or why it would run none. */
export async function incrementalPlanOf(job: LoadedJob, sinks: readonly Sink[], context: CatchUpContext): Promise<IncrementalPlan> {
  let session: WindowSession | undefined;
  try {
    session = await windowSessionOf(job, context);
    const plan = await planCatchUp(job, sinks, session, context);
    return {
      today: plan.today,
      reason: plan.reason,
      windows: plan.windows,
      lookback: plan.lookback,
      left: plan.left,
      open: plan.open,
      reopened: plan.reopened,
      clock: session.clock,
    };
  } catch (error) {
    if (!isTilehouseError(error) || error.exitCode === 2) throw error;
    return {
      today: null,
      reason: 'nothing: the state could not be planned',
      windows: [],
      lookback: [],
      left: [],
      open: [],
      reopened: [],
      error: { code: error.code, message: error.message },
    };
  } finally {
    await session?.close();
  }
}
