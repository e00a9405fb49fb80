/**
 * A query the sandbox refuses. The export endpoint answers it with 400 and this message in the
 * Regular error object, so the message must name the item (by position and header) and the value.
 */
export class QueryError extends Error {
  /** Whether the message already names the item it is about (so callers do not prefix it twice). */
  readonly located: boolean;

  constructor(message: string, options?: { located?: boolean }) {
    super(message);
    this.name = 'QueryError';
    this.located = options?.located ?? false;
  }
}
