import type { LoadedJob } from '../config/load-config.js';
import { errorReport, TilehouseError, type ErrorReport } from '../errors.js';
import { definitionSourceOf, jobIdsOf } from '../sinks/registry.js';
import { isPublishOutcomeUnknown, type SinkResult } from '../sinks/sink.js';
import type { PageIdentity } from '../source/export-endpoint/index.js';
import type { ColumnType } from '../value-types/column-types.js';
import { jobDefinitionOf, type JobDefinition } from '../value-types/job-definition.js';
import { RunStoppedError, type PublishOutcome } from './publish-sinks.js';
import { PublishGuardTrippedError, type GuardReport } from './publish-guard-check.js';
import type { ReadStats } from './read-into-sinks.js';

/** What one tile run did; logged per tile and collected into the run summary. */
export interface JobRunSummary {
  job: string;
  tile: string;
  /** The run id this tile ran under (a backfill window's own, derived from the backfill's). */
  runId: string;
  /** partially_published: some sinks hold the new run (`outputs`), others the previous one (`unpublished`). */
  status: 'succeeded' | 'failed' | 'partially_published';
  /** Rows written. */
  rows: number;
  /** Rows read but outside a backfill window. */
  rowsDropped: number;
  pages: number;
  /** Bytes received from the source (as sent: compressed when it compressed), token requests included. */
  bytes: number;
  durationMs: number;
  columns: Array<{ name: string; header: string; type: ColumnType }>;
  /** The targets that hold this run. */
  outputs: SinkResult[];
  /**
   * The targets this run published to or meant to publish to alongside the ones it published (a
   * partial publish lists both; `unpublished` says which kept the previous run). A failed run
   * lists none: what it opened is `attempted`.
   */
  targets: string[];
  /** A failed run: the targets it opened and did not publish to (each still holds what it held, unless `mixed` or `outcomeUnknown` names it). */
  attempted?: string[];
  /** The fingerprint of the job's definition this run ran with (query, columns, sinks; hashes only). */
  definition?: JobDefinition;
  /** Lineage on: the OpenLineage run of this try and its job, for finding it in a catalog. */
  lineage?: { namespace: string; job: string; runId: string };
  /** BigQuery jobs that made the run visible (copy or query) and loaded it, in that order per sink. */
  bigqueryJobIds: string[];
  /** Targets that still hold the previous run after a partial publish. */
  unpublished?: string[];
  /** Targets a failed publish changed in part (partitions): they hold neither run whole. */
  mixed?: string[];
  /** Targets whose publish ended without an answer and could not be read afterwards: either run. */
  outcomeUnknown?: string[];
  /** What the cleanup could not remove (staging tables, temp objects, jobs that may still run), by name. */
  leftBehind?: string[];
  warnings: string[];
  /** Values that did not parse and were nulled (onInvalidValue: null). */
  nulledValues: number;
  retries: number;
  /** 429 answers from the source (token endpoint included), whether retried, requeued or final. */
  throttled: number;
  /** Access tokens this tile fetched; 0 when it used the token another tile of the run fetched. */
  tokenFetches: number;
  reauthentications: number;
  /** Re-reads from page 0 after the source changed mid-export. */
  restarts: number;
  /** What told the exported pages apart (see PAGE_IDENTITIES); absent when the read did not finish. */
  pageIdentity?: PageIdentity;
  /** Why it failed: the code, the message, and where (`targetKind`, `format`) for a failure at a sink's target. */
  error?: ErrorReport;
  /** What the publish guards said of each target (absent: no sink has one, or the run did not reach them). */
  guard?: GuardReport;
  /**
   * Where the time went, in milliseconds: `source` (waiting on the token and page requests),
   * `reading` (decoding and typing the pages, writing them to the sinks), `prepare:<sink>` and
   * `publish:<sink>` (each sink's phases, by its kind and place in the job). Absent: not measured.
   */
  timings?: Record<string, number>;
}

export interface RunSummary {
  runId: string;
  startedAt: string;
  durationMs: number;
  /** Access tokens the whole run fetched (one, unless a token expired or was refused mid-run). */
  tokenFetches: number;
  tiles: JobRunSummary[];
  succeeded: number;
  failed: number;
  partiallyPublished: number;
}

export interface SessionCounters {
  runId: string;
  retries: number;
  throttled: number;
  tokenFetches: number;
  reauthentications: number;
  restarts: number;
  bytes: number;
  /** Of the read that finished, if one did. */
  pageIdentity?: PageIdentity;
  /** Targets of the writers opened, in publish order. */
  targets: string[];
}

function baseSummary(
  job: LoadedJob,
  started: number,
  stats: ReadStats | undefined,
  counters: SessionCounters,
): Omit<JobRunSummary, 'status' | 'outputs' | 'bigqueryJobIds'> {
  const { targets, ...rest } = counters;
  return {
    job: job.name,
    tile: job.tile,
    rows: stats?.rows ?? 0,
    rowsDropped: stats?.rowsDropped ?? 0,
    pages: stats?.pages ?? 0,
    targets: [...targets],
    definition: jobDefinitionOf(definitionSourceOf(job)),
    durationMs: Date.now() - started,
    columns: (stats?.columns ?? []).map(({ name, header, type }) => ({ name, header, type })),
    warnings: stats?.warnings ?? [],
    nulledValues: stats?.nulledValues ?? 0,
    ...rest,
  };
}

/** The summary of a run that reached its publish: succeeded, or partially published. */
export function publishedSummary(
  job: LoadedJob,
  started: number,
  stats: ReadStats,
  counters: SessionCounters,
  published: PublishOutcome,
  options: { strict?: boolean; leftBehind?: readonly string[] } = {},
): JobRunSummary {
  const leftBehind = options.leftBehind ?? [];
  const summary: JobRunSummary = {
    ...baseSummary(job, started, stats, counters),
    status: 'succeeded',
    outputs: published.outputs,
    bigqueryJobIds: jobIdsOf(published.outputs),
    ...(published.guard ? { guard: published.guard } : {}),
    ...(leftBehind.length > 0 ? { leftBehind: [...leftBehind] } : {}),
  };
  summary.warnings = [...summary.warnings, ...published.outputs.flatMap((output) => output.warnings ?? [])];
  // An overridden guard published what it would have refused: said on the run's warning: lines too.
  if (published.guard?.overridden === true) {
    summary.warnings.push(
      ...published.guard.verdicts
        .filter((verdict) => verdict.verdict === 'trip')
        .map((verdict) => `${verdict.target}: publish guard overridden (--allow-shrink): ${verdict.reason}`),
    );
  }
  const kept = published.outputs.filter((output) => output.keptEarlierPublish === true);
  if (kept.length > 0 && options.strict === true && !published.partial) {
    const error = new RunIdAlreadyPublishedError(
      job.name,
      counters.runId,
      kept.map((output) => output.target),
    );
    summary.status = 'failed';
    summary.error = errorReport(error, job.name);
  }
  if (published.partial) {
    summary.status = 'partially_published';
    const { unpublished, changedInPart, outcomeUnknown } = published.partial;
    summary.unpublished = changedInPart || outcomeUnknown ? unpublished.slice(1) : [...unpublished];
    if (changedInPart) summary.mixed = unpublished.slice(0, 1);
    else if (outcomeUnknown) summary.outcomeUnknown = unpublished.slice(0, 1);
    summary.error = errorReport(published.partial, job.name);
  }
  return summary;
}

/**
 * --strict: a target already held a publish of this run id with other rows and kept it (see
 * SinkResult.keptEarlierPublish), so this run's rows are not there. Nothing was overwritten.
 */
export class RunIdAlreadyPublishedError extends TilehouseError {
  readonly code = 'run_id_already_published';

  constructor(jobName: string, runId: string, targets: readonly string[]) {
    super(
      `job ${jobName}: run id ${runId} was already published to ${targets.join(', ')} with other rows, which ${targets.length === 1 ? 'it keeps' : 'they keep'}; ` +
        `this run's rows were not published there. Re-run with a new --run-id to publish the current data`,
    );
  }
}

/** The summary of a run that published nothing. A failure after a stop signal is reported as the stop. */
export function failedSummary(
  job: LoadedJob,
  started: number,
  stats: ReadStats | undefined,
  counters: SessionCounters,
  error: unknown,
  signal?: AbortSignal,
  leftBehind: readonly string[] = [],
): JobRunSummary {
  // A publish cut short by the stop deadline keeps its own error: "nothing was published" is not known.
  const cause =
    signal?.aborted && !(error instanceof RunStoppedError) && !isPublishOutcomeUnknown(error) ? new RunStoppedError(job.name, signal.reason) : error;
  const base = baseSummary(job, started, stats, counters);
  return {
    ...base,
    // Nothing was published: a target it opened is named as attempted, never as one it wrote.
    targets: [],
    ...(base.targets.length > 0 ? { attempted: base.targets } : {}),
    status: 'failed',
    outputs: [],
    bigqueryJobIds: [],
    ...(leftBehind.length > 0 ? { leftBehind: [...leftBehind] } : {}),
    ...(cause instanceof PublishGuardTrippedError ? { guard: cause.report } : {}),
    error: errorReport(cause, job.name),
  };
}

/**
 * A window (or an incremental job) refused before any request: it counts as failed and says why.
 * The failed run's skeleton with nothing read, no time spent and nothing counted.
 */
export function skippedWindowSummary(job: LoadedJob, runId: string, error: TilehouseError): JobRunSummary {
  const nothingCounted: SessionCounters = { runId, retries: 0, throttled: 0, tokenFetches: 0, reauthentications: 0, restarts: 0, bytes: 0, targets: [] };
  return { ...failedSummary(job, Date.now(), undefined, nothingCounted, error), durationMs: 0 };
}
