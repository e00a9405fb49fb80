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
