import { AdaptiveConcurrency, type RequestGate } from './adaptive-concurrency.js';
import type { ExportPage } from './export-response.js';
import { isIdentityCheck, PageConsistency, type PageCheckFailure } from './page-checks.js';
import { ExportPageIdentityError, ExportPageMismatchError } from './source-errors.js';

/** The one thing the pager needs from the export client. */
export interface PageFetcher {
  /**
   * Every attempt for the page (retries included) waits for a permit from `gate`; an answer is
   * parsed only once `whenNeeded` says it is needed, and dropped if it says it is not (see
   * ExportClient.fetchPage).
   */
  fetchPage(pageNumber: number, gate?: RequestGate, whenNeeded?: Promise<boolean>): Promise<ExportPage>;
}

export interface ReadPagesOptions {
  jobName: string;
  /** The page size we asked for; with page 0's totalRows it tells how many pages exist. */
  itemsPerPage: number;
  /** Parallel page requests; default 1 (sequential). */
  concurrency?: AdaptiveConcurrency;
}

function toError(jobName: string, failure: PageCheckFailure): ExportPageMismatchError {
  const ErrorClass = isIdentityCheck(failure.check) ? ExportPageIdentityError : ExportPageMismatchError;
  return new ErrorClass(jobName, failure.pageNumber, failure.check, failure.detail, failure.drift);
}

/**
 * Yields the tile's pages strictly in order from page 0 until `navigation.hasNext` is false,
 * checking each against the pages before it (ExportPageMismatchError on the first failed check).
 *
 * Page 0 tells `totalRows`, so pages 1..N-1 are fetched in parallel within a window that starts
 * at the page the consumer waits for: pages fetched but not yet consumed plus pages in flight
 * never exceed the concurrency limit, so a slow sink holds back fetching instead of piling up
 * pages in memory (and pages fetched ahead wait unparsed). If page 0 is shorter than asked
 * although more pages follow, the server pages
 * differently than we computed, so the rest is read one page at a time, trusting only hasNext.
 */
export async function* readPages(client: PageFetcher, options: ReadPagesOptions): AsyncGenerator<ExportPage> {
  const limiter = options.concurrency ?? new AdaptiveConcurrency(1);
  const checks = new PageConsistency();
  const pending = new Map<number, Promise<ExportPage>>();
  /** Settles a launched page's `whenNeeded`: true once the consumer comes to it, false if it never will. */
  const needed = new Map<number, (isNeeded: boolean) => void>();
  let nextToLaunch = 0;
  let lastPlannedPage = 0;

  const launch = (pageNumber: number): void => {
    const whenNeeded = new Promise<boolean>((resolve) => needed.set(pageNumber, resolve));
    const page = client.fetchPage(pageNumber, limiter, whenNeeded);
    // Awaited later, in order; until then a failure must not count as unhandled.
    page.catch(() => undefined);
    pending.set(pageNumber, page);
  };

  try {
    for (let pageNumber = 0; ; pageNumber += 1) {
      while (nextToLaunch <= lastPlannedPage && nextToLaunch < pageNumber + limiter.limit) launch(nextToLaunch++);
      if (!pending.has(pageNumber)) {
        launch(pageNumber);
        nextToLaunch = Math.max(nextToLaunch, pageNumber + 1);
      }
      needed.get(pageNumber)!(true);
      needed.delete(pageNumber);
      const page = await pending.get(pageNumber)!;
      pending.delete(pageNumber);

      const failure = checks.check(page);
      if (failure) throw toError(options.jobName, failure);
      if (pageNumber === 0 && page.navigation.hasNext && page.rows.length >= options.itemsPerPage) {
        lastPlannedPage = Math.ceil(page.navigation.totalRows / options.itemsPerPage) - 1;
      }
      yield page;
      if (!page.navigation.hasNext) {
        const total = checks.finish(pageNumber);
        if (total) throw toError(options.jobName, total);
        return;
      }
    }
  } finally {
    // A failed or abandoned read leaves pages fetched ahead: let them go instead of waiting for
    // ever with their bytes (a scheduled worker runs for weeks).
    for (const notNeeded of needed.values()) notNeeded(false);
  }
}
