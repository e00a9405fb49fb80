import type { LoadedJob } from '../config/load-config.js';
import { isTilehouseError, messageOf } from '../errors.js';
import type { SinkResult } from '../sinks/sink.js';
import type { ColumnType } from '../transform/column.js';
import { RunStoppedError, type PublishOutcome } from './publish-sinks.js';
import type { ReadStats } from './read-into-sinks.js';

/** What one tile run did; logged per tile and collected into the run summary. */
export interface TileSummary {
  job: string;
  tile: string;
  /** partially_published: some sinks hold the new run (`outputs`), others the previous one (`unpublished`). */
  status: 'succeeded' | 'failed' | 'partially_published';
  /** Rows written. */
  rows: number;
  /** Rows read but outside a backfill window. */
  rowsDropped: number;
  pages: number;
  durationMs: number;
  columns: Array<{ name: string; header: string; type: ColumnType }>;
  /** The targets that hold this run. */
  outputs: SinkResult[];
  /** Targets that still hold the previous run after a partial publish. */
  unpublished?: string[];
  warnings: string[];
  /** Values that did not parse and were nulled (onInvalidValue: null). */
  nulledValues: number;
  retries: number;
  reauthentications: number;
  /** Re-reads from page 0 after the source changed mid-export. */
  restarts: number;
  error?: { code: string; message: string };
}

export interface RunSummary {
  runId: string;
  startedAt: string;
  durationMs: number;
  tiles: TileSummary[];
  succeeded: number;
  failed: number;
  partiallyPublished: number;
}

export interface SessionCounters {
  retries: number;
  reauthentications: number;
  restarts: number;
}

function baseSummary(job: LoadedJob, started: number, stats: ReadStats | undefined, counters: SessionCounters): Omit<TileSummary, 'status' | 'outputs'> {
  return {
    job: job.name,
    tile: job.tile,
    rows: stats?.rows ?? 0,
    rowsDropped: stats?.rowsDropped ?? 0,
    pages: stats?.pages ?? 0,
    durationMs: Date.now() - started,
    columns: (stats?.columns ?? []).map(({ name, header, type }) => ({ name, header, type })),
    warnings: stats?.warnings ?? [],
    nulledValues: stats?.nulledValues ?? 0,
    ...counters,
  };
}

/** The summary of a run that reached its publish: succeeded, or partially published. */
export function tileSummary(job: LoadedJob, started: number, stats: ReadStats, counters: SessionCounters, published: PublishOutcome): TileSummary {
  const summary: TileSummary = { ...baseSummary(job, started, stats, counters), status: 'succeeded', outputs: published.outputs };
  if (published.partial) {
    summary.status = 'partially_published';
    summary.unpublished = [...published.partial.unpublished];
    summary.error = { code: published.partial.code, message: published.partial.message };
  }
  return summary;
}

/** The summary of a run that published nothing. A failure after a stop signal is reported as the stop. */
export function failedSummary(job: LoadedJob, started: number, stats: ReadStats | undefined, counters: SessionCounters, error: unknown, signal?: AbortSignal): TileSummary {
  const cause = signal?.aborted && !(error instanceof RunStoppedError) ? new RunStoppedError(job.name, signal.reason) : error;
  return {
    ...baseSummary(job, started, stats, counters),
    status: 'failed',
    outputs: [],
    error: { code: isTilehouseError(cause) ? cause.code : 'internal_error', message: messageOf(cause) },
  };
}
