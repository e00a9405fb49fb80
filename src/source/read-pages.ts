import type { ExportClient } from './export-client.js';
import type { ExportPage } from './export-response.js';
import { PageConsistency, type PageCheckFailure } from './page-checks.js';
import { ExportPageMismatchError } from './source-errors.js';

function toError(jobName: string, failure: PageCheckFailure): ExportPageMismatchError {
  return new ExportPageMismatchError(jobName, failure.pageNumber, failure.check, failure.detail, failure.drift);
}

/**
 * Yields the tile's pages in order from page 0 until `navigation.hasNext` is false, checking each
 * against the pages before it. Throws ExportPageMismatchError on the first failed check.
 */
export async function* readPages(client: Pick<ExportClient, 'fetchPage'>, jobName: string): AsyncGenerator<ExportPage> {
  const checks = new PageConsistency();
  for (let pageNumber = 0; ; pageNumber += 1) {
    const page = await client.fetchPage(pageNumber);
    const failure = checks.check(page);
    if (failure) throw toError(jobName, failure);
    yield page;
    if (!page.navigation.hasNext) {
      const total = checks.finish(pageNumber);
      if (total) throw toError(jobName, total);
      return;
    }
  }
}
