import type { LoadedJob } from '../config/load-config.js';
import type { Logger } from '../log.js';
import type { Sink, SinkRunContext, SinkWriter } from '../sinks/sink.js';
import type { ExportPage } from '../source/export-endpoint/index.js';
import type { Column } from '../transform/column.js';
import { toColumns } from '../transform/columns.js';
import { toTypedRows } from '../transform/typed-rows.js';

/** What reading a tile's pages did, for the summary. */
export interface ReadStats {
  rows: number;
  rowsDropped: number;
  pages: number;
  columns: Column[];
  warnings: string[];
  nulledValues: number;
}

export interface ReadIntoSinksOptions {
  job: LoadedJob;
  /** Opened on page 0, in publish order. */
  sinks: readonly Sink[];
  logger: Logger;
  context: Pick<SinkRunContext, 'runId' | 'startedAt' | 'window' | 'signal' | 'retryBudget' | 'definition'>;
  selectRows?: (headers: readonly string[]) => (row: readonly unknown[]) => boolean;
}

/** The sinks in the order they publish (see Sink.publishRank); stable for equal ranks. */
export function inPublishOrder(sinks: readonly Sink[]): Sink[] {
  return [...sinks].sort((a, b) => a.publishRank - b.publishRank);
}

/**
 * Streams every page into every sink's writer: page 0 decides the columns and opens the writers,
 * each page's rows are typed once and handed to each writer. Returns the writers, unpublished;
 * on any failure every writer opened so far is aborted before the error is rethrown.
 */
export async function readIntoSinks(pages: AsyncIterable<ExportPage>, options: ReadIntoSinksOptions): Promise<{ stats: ReadStats; writers: SinkWriter[] }> {
  const { job, logger } = options;
  const writers: SinkWriter[] = [];
  const stats: ReadStats = { rows: 0, rowsDropped: 0, pages: 0, columns: [], warnings: [], nulledValues: 0 };
  let keep: ((row: readonly unknown[]) => boolean) | undefined;
  try {
    for await (const page of pages) {
      if (page.pageNumber === 0) {
        const mapped = toColumns(page.headers, page.dataTypes, job.columns);
        stats.columns = mapped.columns;
        stats.warnings = mapped.warnings;
        for (const warning of mapped.warnings) logger.warn(warning);
        const context: SinkRunContext = { jobName: job.name, tileId: job.tile, columns: mapped.columns, logger, ...options.context };
        for (const sink of inPublishOrder(options.sinks)) writers.push(await sink.open(context));
        keep = options.selectRows?.(page.headers);
      }
      const rows = keep === undefined ? page.rows : page.rows.filter(keep);
      stats.rowsDropped += page.rows.length - rows.length;
      const typed = toTypedRows(rows, stats.columns, {
        timezone: job.timezone,
        onInvalidValue: job.onInvalidValue,
        jobName: job.name,
        pageNumber: page.pageNumber,
        firstRowIndex: stats.rows,
      });
      stats.nulledValues += typed.nulledValues;
      for (const writer of writers) await writer.writeRows(typed.rows);
      stats.rows += rows.length;
      stats.pages += 1;
      logger.debug({ page: page.pageNumber, rows: page.rows.length, totalRows: page.navigation.totalRows }, 'page written');
    }
    return { stats, writers };
  } catch (error) {
    await abortAll(writers, logger);
    throw error;
  }
}

/** Aborts each writer; a failing cleanup is logged and does not hide the run's own error. */
export async function abortAll(writers: readonly SinkWriter[], logger: Logger): Promise<void> {
  for (const writer of writers) {
    try {
      await writer.abort();
    } catch (error) {
      logger.error({ err: error, target: writer.target }, 'sink cleanup failed');
    }
  }
}
