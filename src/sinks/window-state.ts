import { TilehouseError } from '../errors.js';

/** A day window, [from, to) as YYYY-MM-DD in the job's timezone. */
export interface HeldWindow {
  from: string;
  to: string;
}

/**
 * What one target of a job shows as published, window by window: the one question `backfill
 * --resume` and an incremental run ask of a sink. Each kind of sink gives its own reader (its
 * descriptor's `windowStateReaders`, see registry.ts), so a new kind of target adds a reader and
 * changes neither caller.
 */
export interface WindowStateReader {
  /** The target as an operator knows it: a CSV path template, project.dataset.table. */
  readonly target: string;
  /** Which of `windows` this target holds, whole and published (first days). Throws when it cannot tell. */
  heldWindows(windows: readonly HeldWindow[]): Promise<WindowHoldings>;
}

/**
 * What a target holds of some windows: `done`, whole, published and closed (the day had ended on
 * the source's clock when it was exported); `open`, published before the day ended, so rows may
 * have arrived since: not held, exported again.
 */
export interface WindowHoldings {
  done: Set<string>;
  open: Set<string>;
}

export function holdings(): WindowHoldings {
  return { done: new Set(), open: new Set() };
}

/** A target whose state could not be read (ledger unreachable, manifest unreadable): nothing is run on a guess. */
export class WindowStateUnreadableError extends TilehouseError {
  readonly code = 'incremental_state_unreadable';
}
