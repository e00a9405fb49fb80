import type { Logger } from '../log.js';
import { ExportInconsistentError, ExportPageMismatchError } from '../source/export-endpoint/index.js';

function isDrift(error: unknown): error is ExportPageMismatchError {
  return error instanceof ExportPageMismatchError && error.drift;
}

/**
 * Runs `read`, and once more if the source changed while it was read (a page disagreed with the
 * pages before it): one clean re-read from page 0 usually sees a settled table; a second change
 * means the source is too busy to export consistently, and fails with `export_inconsistent`.
 */
export async function withOneRestart<T>(read: () => Promise<T>, options: { jobName: string; logger: Logger; onRestart: () => void }): Promise<T> {
  try {
    return await read();
  } catch (first) {
    if (!isDrift(first)) throw first;
    options.onRestart();
    options.logger.warn({ reason: first.message }, 'source changed during export; re-reading from page 0');
    try {
      return await read();
    } catch (second) {
      if (isDrift(second)) throw new ExportInconsistentError(options.jobName, first, second);
      throw second;
    }
  }
}
