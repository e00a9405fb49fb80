// src/pipeline/windows/, module by module (ARCHITECTURE.md gives the folder one paragraph):
// backfill and incremental (catch-up) day windows, one family: `date-windows.ts` (`splitWindows`,
// `catchUpPlan`: which days an incremental run exports, nothing held when no target is read; a window's query
// comes from the source seam's `queryForWindow`), `windowed-job.ts` (what a windowed job requires of its
// sinks: `jobForBackfill`, `jobForIncremental`, which sink takes windows one at a time; its query's rules are
// `config/window-rules.ts`), `held-windows.ts` (what the targets hold, combined from each sink kind's
// window-state readers; `--resume`'s done windows: no reader holds nothing, and a sink no reader answers for
// refuses `--resume`), `backfill-selection.ts` (a backfill's windows: split, sharded, less those done),
// `run-windows.ts` (`runBackfill`: every window its own tile run; a window refused before any request gets
// `pipeline/job-summary.ts`'s `skippedWindowSummary`), `window-session.ts` (the connection and token the
// windows share, and the source's clock read from the token answer's `Date`, or `source.clock: local`),
// `window-errors.ts` (the windows family's refusals: a bucket column missing, a future or empty window, the
// source's clock unknown), `window-batch.ts` (a run of windows with the run ledger appended after each,
// progress, and metrics through a pusher handed in, since `metrics/` lies above), `catch-up.ts` (an
// incremental job's run and plan: state read, windows planned, run one at a time oldest first),
// `shard-windows.ts` (a worker's share)

import { ConfigError } from '../../config/config-error.js';
import type { EnvironmentConfig } from '../../config/environment-schema.js';
import type { LoadedJob } from '../../config/load-config.js';
import type { ClientCredentials } from '../../config/secrets.js';
import type { Logger } from '../../log.js';
import type { Sink } from '../../sinks/sink.js';
import { calendarDateIn, parseDate, parseTimestamp } from '../../transform/index.js';
import type { DateWindow } from './date-windows.js';
import { findItemIndex, windowItemProblems } from '../../config/window-rules.js';
import { queryForWindow } from '../../source/export-endpoint/index.js';
import { newRunId, windowRunId } from '../run-id.js';
import { runJob } from '../run-job.js';
import { mapWithConcurrency } from '../../map-with-concurrency.js';
import type { ReadStats } from '../read-into-sinks.js';
import type { RetrySettings } from '../source-session.js';
import { sweepSinks } from '../sweep-sinks.js';
import { preflightOnce } from '../preflight-sinks.js';
import { skippedWindowSummary, type JobRunSummary } from '../job-summary.js';
import { ATTR, SPANS, telemetry } from '../../telemetry/telemetry.js';
import { BackfillBucketMissingError, BackfillWindowEmptyError, BackfillWindowFutureError } from './window-errors.js';
import { openWindowSession, type WindowClock, type WindowSession } from './window-session.js';

export interface BackfillOptions {
  environment: EnvironmentConfig;
  credentials: ClientCredentials;
  logger: Logger;
  sinks: readonly Sink[];
  windows: readonly DateWindow[];
  /** Windows exported at the same time. */
  concurrency: number;
  /** The backfill's run id; each window runs under its own id derived from it (windowRunId). Default: a new one. */
  runId?: string;
  retry?: RetrySettings;
  signal?: AbortSignal;
  /**
   * The source's clock, which the rw windows are relative to; default: ours corrected by the
   * offset read from the token issuer's HTTP `Date` (see measureServerClockOffset).
   */
  now?: () => Date;
  /** Refuse instead of warn: a window in the future is not run, a window whose rows all fell outside it is not published. */
  strict?: boolean;
  /** --allow-shrink: a tripped publish guard is reported, the window publishes. */
  allowShrink?: boolean;
  onWindowDone?: (result: WindowResult, done: number) => void;
  /** Awaited after each window's publish (the run ledger is appended here); must not throw. */
  afterWindow?: (result: WindowResult) => Promise<void>;
  /** A session opened by the caller (openWindowSession), left open; default: one of its own. */
  session?: WindowSession;
  /** The environment file, named by the message of a source whose clock is unknown. */
  configFile?: string;
}

export interface WindowResult {
  window: DateWindow;
  /** The window had not ended on the source's clock when its export started: recorded as open, never counted as held. */
  open: boolean;
  summary: JobRunSummary;
  /** What looks wrong although the window succeeded (a failure under --strict instead). */
  warnings: string[];
}

/** What an empty open window is: expected (its day is not over), exported again once it has ended. */
export function openEmptyWindowLine(jobName: string, window: DateWindow): string {
  return `job ${jobName}: window ${window.from}..${window.to} is still open (today on the source's clock) and has no rows yet; it is exported again once it has ended`;
}

export interface BackfillSummary {
  job: string;
  runId: string;
  /** Whose clock placed the windows. */
  clock: WindowClock;
  /** Access tokens the whole backfill fetched: one, unless one expired or was refused. */
  tokenFetches: number;
  /** False when the job names no bucket column: windows are exported to within a day. */
  exact: boolean;
  windows: WindowResult[];
  failed: DateWindow[];
}

/** Checks that a job can be backfilled and returns the index of its date item. */
export function backfillItemIndex(job: LoadedJob): number {
  if (job.backfill === undefined) {
    throw ConfigError.single({
      file: job.file,
      field: 'backfill',
      message: 'this job has no backfill section: name the date item the windows filter (backfill.item)',
    });
  }
  const [problem] = windowItemProblems(job.query.items, job.backfill.item, job.backfill.bucketColumn, 'backfill');
  if (problem !== undefined)
    throw ConfigError.single({ file: job.file, field: `backfill.${problem.key}`, value: JSON.stringify(problem.value), message: problem.message });
  return findItemIndex(job.query, job.backfill.item);
}

/**
 * Exports one tile window by window. Each window is its own tile run (own run id derived from the
 * backfill's, atomic commit) writing its own CSV file or BigQuery partition, so re-running a
 * window replaces exactly that window. The windows share one token (the one whose HTTP `Date` set
 * the source clock) unless source.tokenScope is 'job'. A failed window does not stop the others.
 */
export async function runBackfill(job: LoadedJob, options: BackfillOptions): Promise<BackfillSummary> {
  const itemIndex = backfillItemIndex(job);
  const runId = options.runId ?? newRunId();
  await sweepSinks(options.sinks, options.logger);
  const session = options.session ?? (await openWindowSession(job, options));
  // One access check for all the windows: they write below the same directories and buckets.
  const preflight = preflightOnce(options.sinks, {
    jobName: job.name,
    logger: options.logger,
    createMissing: true,
    ...(options.signal ? { signal: options.signal } : {}),
  });
  const context: WindowContext = { job, itemIndex, runId, session, today: calendarDateIn(session.now(), job.timezone), options, preflight };
  let done = 0;
  let results: Array<WindowResult | undefined>;
  try {
    results = await mapWithConcurrency(
      options.windows,
      options.concurrency,
      async (window) => {
        const result = await runWindow(window, context);
        await options.afterWindow?.(result);
        done += 1;
        options.onWindowDone?.(result, done);
        return result;
      },
      options.signal,
    );
  } finally {
    if (options.session === undefined) await session.close();
  }
  const windows = results.filter((result): result is WindowResult => result !== undefined);
  const finished = new Set(windows.filter((r) => r.summary.status === 'succeeded').map((r) => r.window.from));
  const { runToken } = session;
  return {
    job: job.name,
    runId,
    clock: session.clock,
    tokenFetches:
      options.environment.source.tokenScope === 'run'
        ? runToken.fetched
        : runToken.fetched + windows.reduce((sum, result) => sum + result.summary.tokenFetches, 0),
    exact: job.backfill?.bucketColumn !== undefined,
    windows,
    failed: options.windows.filter((window) => !finished.has(window.from)),
  };
}

interface WindowContext {
  job: LoadedJob;
  itemIndex: number;
  runId: string;
  session: WindowSession;
  /** The source's today, in the job's timezone. */
  today: string;
  options: BackfillOptions;
  preflight: () => Promise<void>;
}

/** One window in a span of its own, the tile run's span inside it. */
function runWindow(window: DateWindow, context: WindowContext): Promise<WindowResult> {
  const attributes = {
    [ATTR.job]: context.job.name,
    [ATTR.windowStart]: window.from,
    [ATTR.windowEnd]: window.to,
    [ATTR.runId]: windowRunId(context.runId, window),
  };
  return telemetry().inSpan(SPANS.window, attributes, async (span) => {
    const result = await runWindowUntraced(window, context);
    span.setAttributes({ [ATTR.status]: result.summary.status, [ATTR.rows]: result.summary.rows, 'tilehouse.window.open': result.open });
    if (result.summary.error !== undefined) span.fail(result.summary.error);
    return result;
  });
}

/** One window as its own tile run: the date item's rw replaced by the window's, rows outside it dropped. */
async function runWindowUntraced(window: DateWindow, { job, itemIndex, runId, session, today, options, preflight }: WindowContext): Promise<WindowResult> {
  const bucketColumn = job.backfill?.bucketColumn;
  const warnings: string[] = [];
  // Judged once, as the export starts: rows may still arrive for a window that has not ended.
  const startedOn = session.now();
  const open = startedOn.getTime() < (parseTimestamp(window.to, job.timezone) as number);
  if (window.from > today) {
    const future = new BackfillWindowFutureError(job.name, window, today);
    if (options.strict) return { window, open, summary: skippedWindowSummary(job, windowRunId(runId, window), future), warnings };
    warnings.push(future.message);
  }
  const span = { startMs: parseTimestamp(window.from, job.timezone) as number, endMs: parseTimestamp(window.to, job.timezone) as number };
  const windowJob: LoadedJob = { ...job, query: queryForWindow(job.query, itemIndex, span, startedOn) };
  const summary = await runJob(windowJob, {
    // The window's rw filter is the window's, not the job's: the targets record the job's definition.
    definedBy: job,
    environment: options.environment,
    credentials: options.credentials,
    dispatcher: session.dispatcher,
    logger: options.logger.child({ window: `${window.from}..${window.to}` }),
    sinks: options.sinks,
    runId: windowRunId(runId, window),
    startedAt: new Date(),
    preflight,
    window: { ...window, open },
    ...(options.environment.source.tokenScope === 'run' ? { runToken: session.runToken } : {}),
    retry: options.retry,
    signal: options.signal,
    ...(options.strict === undefined ? {} : { strict: options.strict }),
    ...(options.allowShrink === true ? { allowShrink: true } : {}),
    ...(bucketColumn === undefined
      ? {}
      : {
          selectRows: (headers: readonly string[]) => {
            const column = headers.indexOf(bucketColumn);
            if (column < 0) throw new BackfillBucketMissingError(job.name, bucketColumn, headers);
            // A row belongs to the window its bucket's calendar date falls in.
            return (row: readonly unknown[]) => {
              const date = parseDate(row[column], job.timezone);
              return typeof date === 'string' && date >= window.from && date < window.to;
            };
          },
          // An open window (today's) without rows yet is expected: only an ended one is refused.
          beforePublish: (stats: ReadStats) =>
            options.strict && !open && stats.rows === 0 && stats.rowsDropped > 0
              ? new BackfillWindowEmptyError(job.name, window, stats.rowsDropped, bucketColumn, false)
              : undefined,
        }),
  });
  // A sink's own warnings (an earlier publish of this window's run id kept) are the window's too.
  warnings.push(...summary.outputs.flatMap((output) => output.warnings ?? []));
  // A window that has not ended has simply no rows yet: said plainly, no warning blaming a clock.
  if (summary.status === 'succeeded' && summary.rows === 0 && open)
    options.logger.info({ window: `${window.from}..${window.to}` }, openEmptyWindowLine(job.name, window));
  else if (summary.status === 'succeeded' && summary.rows === 0 && summary.rowsDropped > 0 && bucketColumn !== undefined) {
    warnings.push(new BackfillWindowEmptyError(job.name, window, summary.rowsDropped, bucketColumn, true).message);
  }
  return { window, open, summary, warnings };
}
