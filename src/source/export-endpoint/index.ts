// src/source/export-endpoint/, module by module (ARCHITECTURE.md gives the folder one paragraph):
// everything specific to the export endpoint (`POST /api/v1/topics/incident/execute`), behind one entry,
// `index.ts`, that answers the pipeline's two questions: the pages of a query (`pagesOfQuery`: `pages()` in
// order and checked, `fetchPage()` one page alone, `pageChecks()` for the probe) and the query for a window
// (`queryForWindow`); nothing outside this folder imports its other files
// (`test/source/export-endpoint/seam-entry.test.ts`). Airbyte's split: the requester `export-client.ts` (one
// page: its request, retries, one re-authentication on 401), the record shape `export-response.ts` (the
// response schema), the paginator `read-pages.ts` (pages in order, parallel in a bounded window; a page
// fetched ahead waits as bytes and is parsed when the reader reaches it), the checks `page-checks.ts`
// (consistency and page identity) and `row-order.ts` (page boundaries against the query's primary order, with
// transform's sort key lent by the pipeline), `window-query.ts` (the date item's `rw` filter for a window
// given as instants, which the pipeline places in the job's timezone), `export-errors.ts` (`export_*` errors, and
// `exportRefusalOf`: a refusal read back from the message a run record keeps, for `status`'s repair)

import type { ExportQuery } from '../../config/job-schema.js';
import { AdaptiveConcurrency } from '../adaptive-concurrency.js';
import { ExportClient, type ExportClientOptions } from './export-client.js';
import type { ExportPage } from './export-response.js';
import { PageConsistency, type PageIdentity } from './page-checks.js';
import { readPages } from './read-pages.js';
import { rowOrderOf, type SortKeyReader } from './row-order.js';

/*
 * The export endpoint (POST /api/v1/topics/incident/execute, spec endpoint 7) behind one seam,
 * split the way Airbyte splits a declarative stream: the requester (export-client.ts: one page,
 * retried, re-authenticated), the record shape (export-response.ts), the paginator
 * (read-pages.ts: pages in order, fetched ahead within a window), the error handler's checks
 * (page-checks.ts, row-order.ts) and the request for a window (window-query.ts: the `rw`
 * rewrite). The rest of tilehouse imports this module only; another endpoint would be another
 * folder behind the same two questions: the pages of a query, and the query for a window.
 */

/**
 * How to reach the endpoint for one tile, and what later stages lend it without the source
 * importing them: transform's reader of numbers that must keep their text (numberTextColumns)
 * and of sort keys.
 */
export interface ExportConnection extends Omit<ExportClientOptions, 'query'> {
  /** Reads a cell as the number the source sorts by, to check page boundaries against the query's order (rowOrderOf). */
  sortKey: SortKeyReader;
}

export interface PagesOptions {
  /** Page requests in flight at most (cut on 429, see AdaptiveConcurrency); default 1, one page at a time. */
  concurrency?: number;
  /** Called once every page is read and checked: the evidence that told the pages apart. */
  onPageIdentity?: (identity: PageIdentity) => void;
}

/** One query's pages: all the pipeline asks of the export endpoint. */
export interface QueryPages {
  /**
   * Every page in order from page 0 until `hasNext` is false, each checked against the pages
   * before it and against the query's order (ExportPageMismatchError on the first failed check).
   */
  pages(options?: PagesOptions): AsyncGenerator<ExportPage>;
  /** One page as the endpoint answered it, checked against no other (`plan` and `check` read page 0; the probe reads each). */
  fetchPage(pageNumber: number): Promise<ExportPage>;
  /** The checks `pages` applies, fresh, for a caller that reads pages one by one (the probe). */
  pageChecks(): PageConsistency;
}

/** The pages of `query` through `connection`; nothing is requested until a page is asked for. */
export function pagesOfQuery(query: ExportQuery, connection: ExportConnection): QueryPages {
  const { sortKey, ...clientOptions } = connection;
  const client = new ExportClient({ ...clientOptions, query });
  const rowOrder = rowOrderOf(query, sortKey);
  return {
    pages: (options = {}) =>
      readPages(client, {
        jobName: connection.jobName,
        itemsPerPage: connection.itemsPerPage,
        concurrency: new AdaptiveConcurrency(options.concurrency ?? 1),
        rowOrder,
        ...(options.onPageIdentity === undefined ? {} : { onPageIdentity: options.onPageIdentity }),
      }),
    fetchPage: (pageNumber) => client.fetchPage(pageNumber),
    pageChecks: () => new PageConsistency({ rowOrder }),
  };
}

export { findItemIndex, queryForWindow, WindowItemMissingError, type WindowSpan } from './window-query.js';
export type { ExportPage } from './export-response.js';
export { PAGE_IDENTITIES, type PageCheckFailure, type PageConsistency, type PageIdentity } from './page-checks.js';
export { ExportInconsistentError, ExportPageMismatchError, exportRefusalOf } from './export-errors.js';
