import type { Dispatcher } from 'undici';
import { ConfigError } from '../../config/config-error.js';
import type { EnvironmentConfig } from '../../config/environment-schema.js';
import type { LoadedJob } from '../../config/load-config.js';
import type { ClientCredentials } from '../../config/secrets.js';
import { TilehouseError } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { Sink } from '../../sinks/sink.js';
import { calendarDateIn, parseDate, parseTimestamp } from '../../transform/index.js';
import type { DateWindow } from './date-windows.js';
import { findItemIndex, windowItemProblems } from '../../config/window-rules.js';
import { queryForWindow } from '../../source/export-endpoint/index.js';
import { newRunId, windowRunId } from '../run-id.js';
import { RunToken } from '../../source/session-token.js';
import { runJob } from '../run-job.js';
import { mapWithConcurrency } from '../../map-with-concurrency.js';
import type { ReadStats } from '../read-into-sinks.js';
import { createSourceDispatcher, measureServerClockOffset, type RetrySettings } from '../source-session.js';
import { sweepSinks } from '../sweep-sinks.js';
import { preflightOnce } from '../preflight-sinks.js';
import type { JobRunSummary } from '../job-summary.js';
import { ATTR, SPANS, telemetry } from '../../telemetry/telemetry.js';
import { countNoun } from '../../count-noun.js';

export class BackfillBucketMissingError extends TilehouseError {
  readonly code = 'backfill_bucket_missing';
  constructor(jobName: string, bucketColumn: string, headers: readonly string[]) {
    super(`job ${jobName}: backfill.bucketColumn ${JSON.stringify(bucketColumn)} is not among the headers ${JSON.stringify(headers)}`);
  }
}

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

export class BackfillWindowFutureError extends TilehouseError {
  readonly code = 'backfill_window_future';
  constructor(jobName: string, window: DateWindow, today: string) {
    super(`job ${jobName}: window ${window.from}..${window.to} starts after today (${today} on the source's clock); it has no rows yet`);
  }
}

export class BackfillWindowEmptyError extends TilehouseError {
  readonly code = 'backfill_window_empty';
  constructor(jobName: string, window: DateWindow, dropped: number, bucketColumn: string, published: boolean) {
    super(
      `job ${jobName}: window ${window.from}..${window.to}: all ${countNoun(dropped, 'row')} read had a ${bucketColumn} outside the window; ` +
        `${published ? 'an empty window was published' : 'nothing published'} (is the source clock or the job timezone off?)`,
    );
  }
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
 * Whose clock placed the windows: the source's, with the offset measured from its token answer's
 * `Date` (null: given by the caller, not measured), or this machine's (`source.clock: local`).
 */
export type WindowClock = { basis: 'source'; offsetSeconds: number | null } | { basis: 'local' };

/** The source connection every window of a run shares: one dispatcher, one token, the source's clock. */
export interface WindowSession {
  dispatcher: Dispatcher;
  runToken: RunToken;
  /** The source's clock, which the rw windows are relative to. */
  now: () => Date;
  clock: WindowClock;
  close(): Promise<void>;
}

/**
 * The token answer carried no `Date` that parses, so the source's today is unknown: every `rw`
 * window counts days back from it, and a guess would publish days the source has not reached, or
 * empty files for days it holds, which the next run would then count as done.
 */
export class SourceClockUnknownError extends TilehouseError {
  readonly code = 'source_clock_unknown';
  constructor(jobName: string, tokenUrl: string, unparsed: string | undefined, configFile: string | undefined) {
    super(
      `job ${jobName}: the token answer of ${tokenUrl} has ${unparsed === undefined ? 'no Date header' : `a Date header that does not parse (${JSON.stringify(unparsed)})`}, ` +
        "so the source's clock is unknown and its day windows cannot be placed; nothing was exported. " +
        `Fix: have the token endpoint send its Date, or set source.clock: local in ${configFile ?? 'the environment config'} to place windows on this machine's clock (only if it keeps the source's time)`,
    );
  }
}

/**
 * Opens the connection the windows share and reads the source's clock through it (the token
 * fetched for the clock is the one the windows then use). A caller that must know the source's
 * today before it picks the windows (catch-up) opens it first and passes it to runBackfill.
 */
export async function openWindowSession(
  job: LoadedJob,
  options: Pick<BackfillOptions, 'environment' | 'credentials' | 'logger' | 'retry' | 'signal' | 'now' | 'configFile'> & {
    /** A token the caller already shares across its jobs (`plan`): its response's `Date` gives the clock. */
    runToken?: RunToken;
  },
): Promise<WindowSession> {
  const dispatcher = createSourceDispatcher();
  const runToken = options.runToken ?? new RunToken();
  try {
    const { now, clock } =
      options.now === undefined
        ? await sourceClock(job, { ...options, dispatcher, runToken })
        : { now: options.now, clock: { basis: 'source' as const, offsetSeconds: null } };
    return { dispatcher, runToken, now, clock, close: () => dispatcher.close() };
  } catch (error) {
    await dispatcher.close();
    throw error;
  }
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

/** A window (or an incremental job) refused before any request: it counts as failed and says why. */
export function skippedWindowSummary(job: LoadedJob, runId: string, error: TilehouseError): JobRunSummary {
  return {
    job: job.name,
    tile: job.tile,
    runId,
    status: 'failed',
    rows: 0,
    rowsDropped: 0,
    pages: 0,
    bytes: 0,
    durationMs: 0,
    columns: [],
    outputs: [],
    targets: [],
    bigqueryJobIds: [],
    warnings: [],
    nulledValues: 0,
    retries: 0,
    throttled: 0,
    tokenFetches: 0,
    reauthentications: 0,
    restarts: 0,
    error: { code: error.code, message: error.message },
  };
}

/**
 * The source's clock: the only window operator the API shows, `rw`, counts days back from the
 * server's "now", so windows computed from our clock drift by the difference (a whole day near
 * midnight, or everything when a clock is far off). Read once per backfill, logged. Without a
 * `Date` to read it from, windowed work stops (source_clock_unknown) unless the environment says
 * `source.clock: local`; an offset is logged only when one was measured.
 */
async function sourceClock(
  job: LoadedJob,
  options: Pick<BackfillOptions, 'environment' | 'credentials' | 'logger' | 'retry' | 'signal' | 'configFile'> & { dispatcher: Dispatcher; runToken: RunToken },
): Promise<{ now: () => Date; clock: WindowClock }> {
  if (options.environment.source.clock === 'local') {
    options.logger.warn({ clock: 'local' }, "windows follow this machine's clock (source.clock: local); the source's clock was not read");
    return { now: () => new Date(), clock: { basis: 'local' } };
  }
  const reading = await measureServerClockOffset(job, options);
  if (reading.offsetMs === undefined) throw new SourceClockUnknownError(job.name, reading.tokenUrl, reading.unparsed, options.configFile);
  const offsetMs = reading.offsetMs;
  const seconds = Math.round(offsetMs / 1000);
  const size = Math.abs(seconds) >= 86_400 ? `${(Math.abs(seconds) / 86_400).toFixed(1)} days` : `${Math.abs(seconds)} s`;
  options.logger[Math.abs(seconds) > 60 ? 'warn' : 'info'](
    { clock: 'source', offsetSeconds: seconds },
    `source clock is ${size} ${seconds < 0 ? 'behind' : 'ahead of'} ours; windows follow the source's clock`,
  );
  return { now: () => new Date(Date.now() + offsetMs), clock: { basis: 'source', offsetSeconds: seconds } };
}
