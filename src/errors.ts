import { ERROR_CODES, type ErrorCode } from './error-codes.js';

/**
 * Every error tilehouse raises on purpose carries a stable machine `code` (for alerts, tests and
 * the run summary) and a message meant for the person on call: it names the tile, field and value.
 * The code is one of the catalogue's (`src/error-codes.ts`), and so is how the process exits.
 */
export abstract class TilehouseError extends Error {
  abstract readonly code: ErrorCode;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }

  /** The exit code the CLI maps this failure onto: 2 bad configuration or usage, 3 partially published, 1 otherwise (a stop exits by its signal). */
  get exitCode(): 1 | 2 | 3 {
    const exit = ERROR_CODES[this.code].exit;
    return exit === 'signal' ? 1 : exit;
  }
}

export function isTilehouseError(error: unknown): error is TilehouseError {
  return error instanceof TilehouseError;
}

/** The message of anything thrown, without assuming it is an Error. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
