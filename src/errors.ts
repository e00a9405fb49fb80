/**
 * Every error tilehouse raises on purpose carries a stable machine `code` (for alerts, tests and
 * the run summary) and a message meant for the person on call: it names the tile, field and value.
 * `exitCode` is how the CLI maps a failure onto the documented process interface.
 */
export abstract class TilehouseError extends Error {
  abstract readonly code: string;
  /** 2 = bad configuration or usage; 1 = a tile failed at run time. */
  readonly exitCode: 1 | 2 = 1;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

export function isTilehouseError(error: unknown): error is TilehouseError {
  return error instanceof TilehouseError;
}

/** The message of anything thrown, without assuming it is an Error. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
