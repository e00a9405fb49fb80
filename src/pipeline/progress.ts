import type { ExportPage } from '../source/export-endpoint/index.js';

/**
 * How far a tile run has got, for the live progress line of `tilehouse run` on a terminal.
 * `started` comes before the token request, `page` after each page is written to every sink,
 * `finished` after the tile's outcome is known (published, failed or stopped).
 */
export type TileProgressEvent =
  | { job: string; phase: 'started' }
  | {
      job: string;
      phase: 'page';
      pageNumber: number;
      /** Pages written so far in this read (a re-read from page 0 starts again at 1). */
      pagesDone: number;
      /** From page 0's totalRows and the page size; undefined until then or when it is 0. */
      pagesTotal: number | undefined;
      totalRows: number;
      /** Rows read so far (rows a backfill window drops included). */
      rows: number;
      /** Retries of this tile run so far (its retry budget used). */
      retries: number;
    }
  | { job: string; phase: 'finished' };

export type OnProgress = (event: TileProgressEvent) => void;

/**
 * `pages`, reporting each page once the consumer comes back for the next one, which is after it
 * wrote the page to every sink: the generator only resumes past `yield` when the next page is
 * asked for (or, after the last page, when the loop ends).
 */
export async function* reportingProgress(
  pages: AsyncIterable<ExportPage>,
  options: { job: string; itemsPerPage: number; retries: () => number; onProgress: OnProgress },
): AsyncGenerator<ExportPage> {
  let pagesDone = 0;
  let rows = 0;
  let pagesTotal: number | undefined;
  for await (const page of pages) {
    if (page.pageNumber === 0 && page.navigation.totalRows > 0) pagesTotal = Math.ceil(page.navigation.totalRows / options.itemsPerPage);
    yield page;
    pagesDone += 1;
    rows += page.rows.length;
    options.onProgress({
      job: options.job,
      phase: 'page',
      pageNumber: page.pageNumber,
      pagesDone,
      pagesTotal: pagesTotal === undefined ? undefined : Math.max(pagesTotal, pagesDone),
      totalRows: page.navigation.totalRows,
      rows,
      retries: options.retries(),
    });
  }
}

/** A compact count: 950, 12.3k, 1.2M. */
export function compactCount(value: number): string {
  if (value < 1000) return String(Math.round(value));
  if (value < 1_000_000) return `${(value / 1000).toFixed(value < 10_000 ? 1 : 0)}k`;
  return `${(value / 1_000_000).toFixed(1)}M`;
}

/** 42s, 3m05s, 1h02m. */
export function shortDuration(ms: number): string {
  const seconds = Math.max(0, Math.round(ms / 1000));
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m${String(seconds % 60).padStart(2, '0')}s`;
  return `${Math.floor(minutes / 60)}h${String(minutes % 60).padStart(2, '0')}m`;
}

/** What the progress line knows of one running tile. */
export interface TileProgressState {
  job: string;
  startedAt: number;
  last?: Extract<TileProgressEvent, { phase: 'page' }>;
}

/**
 * One line per running tile: `incidents_by_type  12/40 pages  600/2000 rows  1.2k rows/s  ETA 3s  2 retries`.
 * Rate and ETA are over the tile's whole elapsed time so far (token and page 0 included), which is
 * steadier than a moving window for the few seconds most tiles take.
 */
export function formatTileProgress(state: TileProgressState, now: number): string {
  const { last } = state;
  if (last === undefined) return `${state.job}  connecting…`;
  const elapsed = Math.max(1, now - state.startedAt);
  const parts = [
    state.job,
    `${last.pagesDone}/${last.pagesTotal ?? '?'} pages`,
    `${compactCount(last.rows)}/${compactCount(last.totalRows)} rows`,
    `${compactCount((last.rows * 1000) / elapsed)} rows/s`,
  ];
  if (last.rows > 0 && last.totalRows > last.rows) parts.push(`ETA ${shortDuration(((last.totalRows - last.rows) * elapsed) / last.rows)}`);
  if (last.retries > 0) parts.push(`${last.retries} ${last.retries === 1 ? 'retry' : 'retries'}`);
  return parts.join('  ');
}
