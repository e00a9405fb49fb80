import { messageOf, TilehouseError } from '../errors.js';

/** The history's place could not be written or read (a bucket's permission, a full disk, a document that is not a record). */
export class HistoryUnavailableError extends TilehouseError {
  readonly code = 'history_unavailable';

  constructor(location: string, doing: string, cause: unknown) {
    super(`run history ${location}: ${doing} failed: ${messageOf(cause)}`, { cause });
  }
}
