import { AdaptiveConcurrency, type RequestGate } from '../adaptive-concurrency.js';
import type { ExportPage } from './export-response.js';
import { isIdentityCheck, PageConsistency, type PageCheckFailure, type PageIdentity } from './page-checks.js';
import type { RowOrder } from './row-order.js';
import { ExportPageIdentityError, ExportPageMismatchError } from './export-errors.js';
import { countNoun } from '../../count-noun.js';

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
  /** Called once every page is read and checked: the evidence that told the pages apart. */
  onPageIdentity?: (identity: PageIdentity) => void;
  /** The query's primary sort column, checked across page boundaries (rowOrderOf). */
  rowOrder?: RowOrder | undefined;
}

function toError(jobName: string, failure: PageCheckFailure): ExportPageMismatchError {
  const ErrorClass = isIdentityCheck(failure.check) ? ExportPageIdentityError : ExportPageMismatchError;
  return new ErrorClass(jobName, failure.pageNumber, failure.check, failure.detail, failure.drift);
}

/**
 * A source that caps its page size below what we ask and counts pages by its own size is read
 * exactly (one page at a time); one that counts pages by the size we asked skips rows, which the
 * row total notices. That refusal should say which setting makes it go away.
 */
function pageSizeHint(served: number, asked: number): string {
  return `; page 0 held ${countNoun(served, 'row')} although ${asked} were asked for (source.itemsPerPage) and more followed: if the source caps its page size, set source.itemsPerPage to ${served}`;
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
 * differently than we computed, so the rest is read one page at a time, trusting only hasNext
 * (a source that caps its page size below what we ask is read exactly that way).
 */
export async function* readPages(client: PageFetcher, options: ReadPagesOptions): AsyncGenerator<ExportPage> {
  const limiter = options.concurrency ?? new AdaptiveConcurrency(1);
  const checks = new PageConsistency({ rowOrder: options.rowOrder });
  const pending = new Map<number, Promise<ExportPage>>();
  /** Settles a launched page's `whenNeeded`: true once the consumer comes to it, false if it never will. */
  const needed = new Map<number, (isNeeded: boolean) => void>();
  let nextToLaunch = 0;
  let lastPlannedPage = 0;
  /** Page 0's rows when the source served fewer than asked although more pages followed. */
  let servedFewer: number | undefined;

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
      if (pageNumber === 0 && page.navigation.hasNext) {
        if (page.rows.length >= options.itemsPerPage) lastPlannedPage = Math.ceil(page.navigation.totalRows / options.itemsPerPage) - 1;
        else servedFewer = page.rows.length;
      }
      yield page;
      if (!page.navigation.hasNext) {
        const total = checks.finish(pageNumber);
        if (total)
          throw toError(
            options.jobName,
            servedFewer === undefined ? total : { ...total, detail: `${total.detail}${pageSizeHint(servedFewer, options.itemsPerPage)}` },
          );
        options.onPageIdentity?.(checks.identity());
        return;
      }
    }
  } finally {
    // A failed or abandoned read leaves pages fetched ahead: let them go instead of waiting for
    // ever with their bytes (a scheduled worker runs for weeks).
    for (const notNeeded of needed.values()) notNeeded(false);
  }
}
