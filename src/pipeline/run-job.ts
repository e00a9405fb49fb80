// src/pipeline/, module by module (ARCHITECTURE.md gives the folder one paragraph):
// run one job (`run-job.ts`: `sweep-sinks.ts` (temp artefacts of dead runs) → `read-into-sinks.ts` (pages into
// every sink, the columns fixed on page 0) → `restart-on-drift.ts` (one re-read when the source changed under
// it) → `publish-sinks.ts` (the publish protocol across sinks; `partially_published`, exit 3), with
// `run-id-held.ts` (a given run id: every target asked whether it holds it, the run history settling one that
// cannot tell; all adopt, or `run_id_unverified`) and `publish-guard-check.ts` between its phases (every sink's
// publish guard judged before any publishes; `publish_guard_tripped`)), run many (`run-jobs.ts`, with `src/map-with-concurrency.ts`), one token per run
// (`source-session.ts` + `source/session-token.ts`'s `RunToken`; 429s and bytes counted in a dispatcher
// interceptor), `run-id.ts` (time-sorted run ids; a window's derived from its backfill's), `job-summary.ts`
// (what one tile run did; `run-timings.ts`, where its time went: source, reading, each sink's prepare and publish) and `summary-schema.ts` (the run summary's schema,
// `schema/run-summary.schema.json`), `progress.ts` (the events of the live progress line),
// `preflight-sinks.ts` (every sink's access check before the token and the first export request, once per
// backfill), `plan-job.ts` (`plan`: page 0, each sink's difference, an incremental job's next windows), the
// probe's run `probe-tile.ts` (a few pages of a job through `source/wire-recorder.ts`, each value's shape
// classified by `source/recording.ts`, and the page checks of the export seam; written by
// `cli/probe-command.ts`, read by `presentation/probe-report.ts`); imports no sink implementation and formats
// nothing for a person (that is `presentation/`)

import type { Dispatcher } from 'undici';
import type { EnvironmentConfig } from '../config/environment-schema.js';
import type { LoadedJob } from '../config/load-config.js';
import type { ClientCredentials } from '../config/secrets.js';
import type { Logger } from '../log.js';
import type { Sink, SinkRunContext, SinkWindow, SinkWriter } from '../sinks/sink.js';
import type { RunToken } from '../source/session-token.js';
import type { ExportPage, PageIdentity } from '../source/export-endpoint/index.js';
import { reportingProgress, type OnProgress } from './progress.js';
import { publishAll, type PublishOutcome } from './publish-sinks.js';
import { abortAll, inPublishOrder, readIntoSinks, type ReadStats } from './read-into-sinks.js';
import { withOneRestart } from './restart-on-drift.js';
import { failedSummary, publishedSummary } from './job-summary.js';
import type { JobRunSummary } from './job-summary.js';
import { openSourceSession, type RetrySettings } from './source-session.js';
import { preflightSinks } from './preflight-sinks.js';
import { countNoun } from '../count-noun.js';
import { messageOf, withoutJob } from '../errors.js';
import { ATTR, SPANS, telemetry } from '../telemetry/telemetry.js';
import { lineage, type LineageTileEnd } from '../lineage/lineage.js';
import { definitionPartValues, definitionValueChanges, jobDefinitionOf, type DefinitionValues, type JobDefinition } from '../value-types/job-definition.js';
import { PublishGuardTrippedError } from './publish-guard-check.js';
import type { EarlierTries } from './run-id-held.js';
import { RunTimings } from './run-timings.js';
import { definitionSourceOf } from '../sinks/registry.js';

export interface JobRunDependencies {
  environment: EnvironmentConfig;
  credentials: ClientCredentials;
  dispatcher: Dispatcher;
  logger: Logger;
  sinks: readonly Sink[];
  runId: string;
  startedAt: Date;
  retry?: RetrySettings;
  signal?: AbortSignal;
  window?: SinkWindow;
  /**
   * The job whose definition the run records and compares (targets, ledger, summary, the guard's
   * "changed since"); default: the job run. A window's run passes the job before its window's
   * filter replaced the date item's: that filter moves with the window and the clock (rw is
   * relative to now), so recorded it would read as an edit of the job file that never happened.
   */
  definedBy?: LoadedJob;
  /**
   * Backfills keep only the rows of their window. Called once with page 0's headers; returns the
   * predicate applied to every raw row before typing (dropped rows are counted, never typed).
   */
  selectRows?: (headers: readonly string[]) => (row: readonly unknown[]) => boolean;
  /** A last look at what was read, before anything is published: an error returned refuses the publish. */
  beforePublish?: (stats: ReadStats) => Error | undefined;
  /** Called after each page is written to every sink (the live progress line of `run`). */
  onProgress?: OnProgress;
  /** The token of the whole run, shared by its tiles and windows (default: the tile's own). */
  runToken?: RunToken;
  /** --strict: a target that kept an earlier publish of this run id (other rows) fails the tile. */
  strict?: boolean;
  /**
   * The sinks' access checks, shared by runs of the same sinks (a backfill's windows, see
   * preflightOnce); default: this run's own preflightSinks.
   */
  preflight?: () => Promise<void>;
  /** --allow-shrink (TILEHOUSE_ALLOW_SHRINK): a tripped publish guard is reported, the run publishes. */
  allowShrink?: boolean;
  /**
   * The definition an earlier run of the job ran with, as the run history keeps it: a refusal
   * after an edit then says old → new. Absent, or undefined for a run it no longer keeps: the
   * refusal names what changed only.
   */
  definitionOfRun?: (runId: string) => Promise<DefinitionValues | undefined>;
  /**
   * A run id given to the run (`--run-id`, `TILEHOUSE_RUN_ID`: a retried pod's): what the run
   * history says of earlier tries of it, read before this try began its record; the targets are
   * then asked whether they hold it before any publishes (run-id-held.ts). Absent: the run drew
   * its id, which no target can hold.
   */
  earlierTries?: () => Promise<EarlierTries>;
  /**
   * Awaited once every sink prepared and the guards passed, before the first target changes (the
   * run history records that the run began to publish, for a retry of a killed try to read).
   */
  onPublishing?: () => Promise<void>;
}

/**
 * `sinks` whose writers are recorded as they open, so a failed run can still name their targets
 * and what their cleanup left behind.
 */
function recordingWriters(sinks: readonly Sink[], targets: string[], writers: SinkWriter[], opened: LineageTileEnd['opened'][number][]): Sink[] {
  return sinks.map((sink) => ({
    kind: sink.kind,
    publishRank: sink.publishRank,
    open: async (context: SinkRunContext): Promise<SinkWriter> => {
      const writer = await sink.open(context);
      targets.push(writer.target);
      writers.push(writer);
      if (!opened.some((known) => known.target === writer.target))
        opened.push({
          sink: sink.kind,
          target: writer.target,
          ...(writer.lineageDataset ? { dataset: writer.lineageDataset } : {}),
          // The columns as the target stores them (a CSV's headers, a table's types): lineage's schema facet.
          ...(sink.storedSchema ? { schema: sink.storedSchema(context) } : {}),
        });
      return writer;
    },
    sweep: (logger) => sink.sweep(logger),
    plan: (context) => sink.plan(context),
  }));
}

/**
 * The target each sink of a run that did not succeed would have written, named without opening it
 * (lineage names those the run did not open on its FAIL or ABORT). A sink that cannot name it says
 * why; an error naming it is only that sink's sentence: lineage never changes a run's outcome.
 */
async function plannedDatasets(job: LoadedJob, deps: JobRunDependencies): Promise<NonNullable<LineageTileEnd['planned']>> {
  const context = { jobName: job.name, tileId: job.tile, runId: deps.runId, startedAt: deps.startedAt, ...(deps.window ? { window: deps.window } : {}) };
  return Promise.all(
    deps.sinks.map(async (sink) => {
      if (sink.plannedDataset === undefined) return { sink: sink.kind, unknown: 'the sink names no target before it opens' };
      try {
        const planned = await sink.plannedDataset(context);
        return 'unknown' in planned ? { sink: sink.kind, unknown: planned.unknown } : { sink: sink.kind, dataset: planned };
      } catch (error) {
        return { sink: sink.kind, unknown: messageOf(error) };
      }
    }),
  );
}

/**
 * Runs one job from the run's token to published output: read every page into every sink (one
 * re-read from page 0 if the source changed underneath), then publish all sinks or none. Never
 * throws for a job's failure: it returns a failed summary, so the other jobs of the run still run.
 */
export function runJob(job: LoadedJob, deps: JobRunDependencies): Promise<JobRunSummary> {
  return telemetry().inSpan(SPANS.tile, { [ATTR.job]: job.name, [ATTR.tileId]: job.tile, [ATTR.runId]: deps.runId }, async (span) => {
    const opened: LineageTileEnd['opened'][number][] = [];
    const lineageRun = lineage().startTile({
      job: job.name,
      tile: job.tile,
      runId: deps.runId,
      sourceUrl: deps.environment.source.baseUrl,
      startedAt: deps.startedAt,
      window: deps.window,
      timezone: job.timezone,
    });
    const untraced = await runJobUntraced(job, deps, opened);
    const summary: JobRunSummary = lineageRun.ref === undefined ? untraced : { ...untraced, lineage: { ...lineageRun.ref } };
    const planned = lineage().enabled && summary.status !== 'succeeded' ? await plannedDatasets(job, deps) : undefined;
    lineageRun.end({ ...summary, opened, planned }, summary.error?.code === 'run_stopped');
    span.setAttributes({
      [ATTR.status]: summary.status,
      [ATTR.rows]: summary.rows,
      [ATTR.pages]: summary.pages,
      [ATTR.bytes]: summary.bytes,
      [ATTR.retries]: summary.retries,
      [ATTR.throttled]: summary.throttled,
      [ATTR.tokenFetches]: summary.tokenFetches,
      [ATTR.restarts]: summary.restarts,
    });
    if (summary.error !== undefined) span.fail(summary.error);
    return summary;
  });
}

async function runJobUntraced(job: LoadedJob, deps: JobRunDependencies, openedWriters: LineageTileEnd['opened'][number][]): Promise<JobRunSummary> {
  const started = Date.now();
  const logger = deps.logger.child({ job: job.name, tile: job.tile, runId: deps.runId });
  const session = openSourceSession(job, { ...deps, logger });
  const targets: string[] = [];
  const opened: SinkWriter[] = [];
  const sinks = recordingWriters(deps.sinks, targets, opened, openedWriters);
  const counters = () => ({
    runId: deps.runId,
    retries: session.budget.used,
    throttled: session.traffic.throttled,
    tokenFetches: session.token.fetched,
    reauthentications: session.reauthentications(),
    restarts,
    bytes: session.traffic.bytes,
    ...(pageIdentity === undefined ? {} : { pageIdentity }),
    // A re-read from page 0 opens the writers again: each target once.
    targets: [...new Set(targets)],
  });
  let restarts = 0;
  let pageIdentity: PageIdentity | undefined;
  const progressOf = (pages: AsyncIterable<ExportPage>) => withProgress(pages, job, deps, () => session.budget.used);
  let stats: ReadStats | undefined;
  const definedBy = deps.definedBy ?? job;
  const definition = jobDefinitionOf(definitionSourceOf(definedBy));
  const timings = new RunTimings();
  try {
    // Before the token and the first export request: a target that cannot be written fails here.
    const access = { jobName: job.name, logger, createMissing: true, ...(deps.signal ? { signal: deps.signal } : {}) };
    await (deps.preflight ?? (() => preflightSinks(deps.sinks, access)))();
    const pagesOf = () => session.client.pages({ concurrency: deps.environment.source.concurrency, onPageIdentity: (identity) => (pageIdentity = identity) });
    const read = await withOneRestart(
      () =>
        timings.reading(() =>
          readIntoSinks(progressOf(timings.waitingOnSource(pagesOf())), {
            job,
            sinks,
            logger,
            context: {
              runId: deps.runId,
              startedAt: deps.startedAt,
              definition,
              retryBudget: session.budget,
              ...(deps.window ? { window: deps.window } : {}),
              ...(deps.signal ? { signal: deps.signal } : {}),
            },
            ...(deps.selectRows ? { selectRows: deps.selectRows } : {}),
          }),
        ),
      { jobName: job.name, logger, onRestart: () => (restarts += 1) },
    );
    stats = read.stats;
    const refusal = deps.beforePublish?.(stats);
    if (refusal !== undefined) {
      await abortAll(read.writers, logger);
      throw refusal;
    }
    const published = await publishRead(job, deps, { writers: read.writers, stats, definition, timings, logger });
    // A partial publish aborted the sinks after the one that failed: what their cleanup could not remove is named too.
    const leftBehind = published.partial === undefined ? [] : leftBehindBy(opened);
    const summary = {
      ...publishedSummary(job, started, stats, counters(), published, { strict: deps.strict === true, leftBehind }),
      definition,
      timings: timings.toRecord(),
    };
    logPublished(logger, job.name, summary);
    return summary;
  } catch (error) {
    const leftBehind = leftBehindBy(opened);
    const failure = await withOldValues(error, definedBy, deps.definitionOfRun);
    const summary = { ...failedSummary(job, started, stats, counters(), failure, deps.signal, leftBehind), definition, timings: timings.toRecord() };
    // internal_error is a bug in tilehouse: its stack belongs in the debug log, not on a terminal.
    if (summary.error?.code === 'internal_error') logger.debug({ err: error }, 'internal error');
    logger.error({ summary, ...failureFields(summary) }, `job ${job.name} failed: ${withoutJob(job.name, summary.error?.message ?? '')}`);
    return summary;
  }
}

/** Phase 2 of a tile run, once its rows are read: the guards, the run id asked of every target, the publish across the sinks. */
async function publishRead(
  job: LoadedJob,
  deps: JobRunDependencies,
  read: { writers: readonly SinkWriter[]; stats: ReadStats; definition: JobDefinition; timings: RunTimings; logger: Logger },
): Promise<PublishOutcome> {
  const { stats } = read;
  const guard = { exportedRows: stats.rows, openWindow: deps.window?.open === true, allowShrink: deps.allowShrink === true, definition: read.definition };
  // The writers open in publish order: their kinds in that order.
  const kinds = inPublishOrder(deps.sinks).map((sink) => sink.kind);
  const writers = read.timings.timedWriters(read.writers, kinds);
  const runHeld = { runId: deps.runId, exportedRows: stats.rows, kinds, earlier: await deps.earlierTries?.() };
  return publishAll(writers, {
    jobName: job.name,
    logger: read.logger,
    guard,
    runHeld,
    ...(deps.signal ? { signal: deps.signal } : {}),
    ...(deps.onPublishing ? { onPublishing: deps.onPublishing } : {}),
  });
}

/** What the writers' cleanup could not remove, each thing once. */
function leftBehindBy(writers: readonly SinkWriter[]): string[] {
  return [...new Set(writers.flatMap((writer) => writer.leftBehind?.() ?? []))];
}

/** The pages, reporting progress as they come when the command shows it. */
function withProgress(pages: AsyncIterable<ExportPage>, job: LoadedJob, deps: JobRunDependencies, retries: () => number): AsyncIterable<ExportPage> {
  if (deps.onProgress === undefined) return pages;
  return reportingProgress(pages, { job: job.name, itemsPerPage: deps.environment.source.itemsPerPage, retries, onProgress: deps.onProgress });
}

/** A refusal after an edit, told with the old values when the history keeps the run that wrote the target. */
async function withOldValues(error: unknown, job: LoadedJob, definitionOfRun: JobRunDependencies['definitionOfRun']): Promise<unknown> {
  if (!(error instanceof PublishGuardTrippedError) || definitionOfRun === undefined) return error;
  const changed = error.report.verdicts.find((verdict) => verdict.changedSince !== undefined)?.changedSince;
  if (changed === undefined) return error;
  const before = await definitionOfRun(changed.runId).catch(() => undefined);
  if (before === undefined) return error;
  const changes = definitionValueChanges(before, { tile: job.tile, values: definitionPartValues(definitionSourceOf(job)) });
  return changes.length === 0 ? error : new PublishGuardTrippedError(job.name, error.report, changes);
}

/** The line a run that reached its publish logs: what it published, or why it did not whole. */
function logPublished(logger: Logger, jobName: string, summary: JobRunSummary): void {
  if (summary.status === 'succeeded') {
    const differing = summary.outputs.filter((output) => output.rows !== summary.rows);
    const counts = differing.length === 0 ? '' : `; published: ${differing.map((output) => `${countNoun(output.rows, 'row')} in ${output.target}`).join(', ')}`;
    logger.info({ summary }, `job ${jobName} succeeded: ${countNoun(summary.rows, 'row')} in ${countNoun(summary.pages, 'page')}${counts}`);
  } else {
    logger.error({ summary, ...failureFields(summary) }, `job ${jobName} ${summary.status}: ${withoutJob(jobName, summary.error?.message ?? '')}`);
  }
}

/** The log line's fields next to its message: the failure's code, and where it happened when known (one code serves every target kind). */
function failureFields(summary: JobRunSummary): { code?: string; targetKind?: string; format?: string } {
  const { code, targetKind, format } = summary.error ?? {};
  return { code, ...(targetKind === undefined ? {} : { targetKind }), ...(format === undefined ? {} : { format }) };
}
