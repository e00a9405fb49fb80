import type { Dispatcher } from 'undici';
import type { EnvironmentConfig } from '../config/environment-schema.js';
import type { LoadedJob } from '../config/load-config.js';
import type { ClientCredentials } from '../config/secrets.js';
import { isTilehouseError, messageOf } from '../errors.js';
import type { Logger } from '../log.js';
import type { Sink, SinkResult, SinkRunContext, SinkWriter } from '../sinks/sink.js';
import { AdaptiveConcurrency } from '../source/adaptive-concurrency.js';
import { readPages } from '../source/read-pages.js';
import { ExportInconsistentError, ExportPageMismatchError } from '../source/source-errors.js';
import type { Column } from '../transform/column.js';
import { toColumns } from '../transform/columns.js';
import { toTypedRows } from '../transform/typed-rows.js';
import { openSourceSession, type RetrySettings } from './source-session.js';
import type { TileSummary } from './tile-summary.js';


export interface TileRunDependencies {
  environment: EnvironmentConfig;
  credentials: ClientCredentials;
  dispatcher: Dispatcher;
  logger: Logger;
  sinks: readonly Sink[];
  runId: string;
  startedAt: Date;
  retry?: RetrySettings;
  signal?: AbortSignal;
  window?: { from: string; to: string };
  /**
   * Backfills keep only the rows of their window. Called once with page 0's headers; returns the
   * predicate applied to every raw row before typing (dropped rows are counted, never typed).
   */
  selectRows?: (headers: readonly string[]) => (row: readonly unknown[]) => boolean;
}

interface ReadOutcome {
  rows: number;
  rowsDropped: number;
  pages: number;
  columns: Column[];
  warnings: string[];
  nulledValues: number;
  outputs: SinkResult[];
}

/** Commit order: remote sinks first, because a local rename is the step least likely to fail. */
function commitOrder(sinks: readonly Sink[]): Sink[] {
  return [...sinks].sort((a, b) => Number(a.kind === 'csv') - Number(b.kind === 'csv'));
}

async function abortAll(writers: readonly SinkWriter[], logger: Logger): Promise<void> {
  for (const writer of writers) {
    try {
      await writer.abort();
    } catch (error) {
      logger.error({ err: error }, 'sink cleanup failed');
    }
  }
}

/**
 * Runs one tile from a fresh token to committed output. Never throws for a tile failure: it
 * returns a failed summary, so the other tiles of the run still run.
 */
export async function runTile(job: LoadedJob, deps: TileRunDependencies): Promise<TileSummary> {
  const started = Date.now();
  const logger = deps.logger.child({ job: job.name, tile: job.tile, runId: deps.runId });
  const counters = { restarts: 0 };
  const summary = (status: TileSummary['status'], outcome?: ReadOutcome, error?: unknown): TileSummary => {
    const result: TileSummary = {
      job: job.name,
      tile: job.tile,
      status,
      rows: outcome?.rows ?? 0,
      rowsDropped: outcome?.rowsDropped ?? 0,
      pages: outcome?.pages ?? 0,
      durationMs: Date.now() - started,
      columns: (outcome?.columns ?? []).map(({ name, header, type }) => ({ name, header, type })),
      outputs: outcome?.outputs ?? [],
      warnings: outcome?.warnings ?? [],
      nulledValues: outcome?.nulledValues ?? 0,
      retries: session.budget.used,
      reauthentications: session.reauthentications(),
      restarts: counters.restarts,
    };
    if (error !== undefined) {
      result.error = { code: isTilehouseError(error) ? error.code : 'internal_error', message: messageOf(error) };
    }
    return result;
  };

  const { source } = deps.environment;
  const session = openSourceSession(job, { ...deps, logger });
  const { client } = session;

  const readOnce = async (): Promise<ReadOutcome> => {
    const writers: SinkWriter[] = [];
    const outcome: ReadOutcome = { rows: 0, rowsDropped: 0, pages: 0, columns: [], warnings: [], nulledValues: 0, outputs: [] };
    let keep: ((row: readonly unknown[]) => boolean) | undefined;
    try {
      const concurrency = new AdaptiveConcurrency(source.concurrency);
      for await (const page of readPages(client, { jobName: job.name, itemsPerPage: source.itemsPerPage, concurrency })) {
        if (page.pageNumber === 0) {
          const mapped = toColumns(page.headers, page.dataTypes, job.columns);
          outcome.columns = mapped.columns;
          outcome.warnings = mapped.warnings;
          for (const warning of mapped.warnings) logger.warn(warning);
          const context: SinkRunContext = {
            jobName: job.name,
            tileId: job.tile,
            runId: deps.runId,
            startedAt: deps.startedAt,
            columns: mapped.columns,
            logger,
          };
          if (deps.window) context.window = deps.window;
          if (deps.signal) context.signal = deps.signal;
          for (const sink of commitOrder(deps.sinks)) writers.push(await sink.open(context));
          keep = deps.selectRows?.(page.headers);
        }
        const rows = keep === undefined ? page.rows : page.rows.filter(keep);
        outcome.rowsDropped += page.rows.length - rows.length;
        const typed = toTypedRows(rows, outcome.columns, {
          timezone: job.timezone,
          onInvalidValue: job.onInvalidValue,
          jobName: job.name,
          pageNumber: page.pageNumber,
          firstRowIndex: outcome.rows,
        });
        outcome.nulledValues += typed.nulledValues;
        for (const writer of writers) await writer.writeRows(typed.rows);
        outcome.rows += rows.length;
        outcome.pages += 1;
        logger.debug({ page: page.pageNumber, rows: page.rows.length, totalRows: page.navigation.totalRows }, 'page written');
      }
      for (const writer of writers) outcome.outputs.push(await writer.commit());
      return outcome;
    } catch (error) {
      await abortAll(writers, logger);
      throw error;
    }
  };

  try {
    let outcome: ReadOutcome;
    try {
      outcome = await readOnce();
    } catch (error) {
      if (!(error instanceof ExportPageMismatchError && error.drift)) throw error;
      // The table changed while we paged through it: one clean re-read from page 0 usually sees
      // a settled table; a second change means the source is too busy to export consistently.
      counters.restarts += 1;
      logger.warn({ reason: error.message }, 'source changed during export; re-reading from page 0');
      try {
        outcome = await readOnce();
      } catch (second) {
        if (second instanceof ExportPageMismatchError && second.drift) throw new ExportInconsistentError(job.name, error, second);
        throw second;
      }
    }
    const result = summary('succeeded', outcome);
    logger.info({ summary: result }, `tile ${job.name} succeeded: ${result.rows} rows in ${result.pages} pages`);
    return result;
  } catch (error) {
    const result = summary('failed', undefined, error);
    logger.error({ summary: result, code: result.error?.code }, `tile ${job.name} failed: ${result.error?.message}`);
    return result;
  }
}
