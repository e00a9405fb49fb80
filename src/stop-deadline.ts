import { messageOf, TilehouseError } from './errors.js';

/**
 * The deadline of the cleanup after a stop (SIGTERM, SIGINT). Kubernetes sends SIGKILL when the
 * pod's grace period (30 s by default) is over; a run killed then leaves its staging tables and
 * temp objects behind and prints no summary. So everything the cleanup does (abort requests,
 * cancel jobs, delete staging tables, let a started publish end) runs under one deadline, the
 * `stopDeadlineMs` setting, and the process exits when it is over whatever the network does.
 */

/** The default of `stopDeadlineMs`: inside Kubernetes' default 30 s grace period, with room to spare. */
export const DEFAULT_STOP_DEADLINE_MS = 20_000;

/**
 * How long before the process deadline the sinks stop waiting on the cleanup's own requests: the
 * time left is for the summary to be written. A quarter of the deadline at most, so short
 * deadlines (tests) still leave the sinks most of it.
 */
export function cleanupMarginMs(stopDeadlineMs: number): number {
  return Math.min(2_000, Math.floor(stopDeadlineMs / 4));
}

const deadlines = new WeakMap<AbortSignal, Map<number, AbortSignal>>();

/**
 * A signal that aborts `stopDeadlineMs - cleanupMarginMs` after `stop` aborted (never, when there
 * is no stop signal): the end of every wait of the cleanup and of a publish already started.
 * The timer is unref'd so that a finished run never waits on it.
 */
export function cleanupDeadline(stop: AbortSignal | undefined, stopDeadlineMs: number): AbortSignal | undefined {
  if (stop === undefined) return undefined;
  // One per stop signal and deadline, shared: a backfill opens a writer per window, and a listener
  // each on the run's signal would pile up (Node warns past 10) for as long as the run lasts.
  const known = deadlines.get(stop)?.get(stopDeadlineMs);
  if (known !== undefined) return known;
  const controller = new AbortController();
  const byMs = deadlines.get(stop) ?? new Map<number, AbortSignal>();
  byMs.set(stopDeadlineMs, controller.signal);
  deadlines.set(stop, byMs);
  const budgetMs = stopDeadlineMs - cleanupMarginMs(stopDeadlineMs);
  const start = () => {
    const timer = setTimeout(() => controller.abort(new StopDeadlineError(stopDeadlineMs, messageOf(stop.reason))), budgetMs);
    timer.unref();
  };
  if (stop.aborted) start();
  else stop.addEventListener('abort', start, { once: true });
  return controller.signal;
}

/** The cleanup after a stop ran out of time: what was still pending was abandoned. */
export class StopDeadlineError extends TilehouseError {
  readonly code = 'stop_deadline_passed';
  constructor(
    readonly stopDeadlineMs: number,
    stoppedBy: string,
  ) {
    super(`${stoppedBy}: the cleanup's deadline (stopDeadlineMs: ${stopDeadlineMs}) passed with requests still unanswered`);
  }
}

/**
 * Settles with `promise`, or rejects with the signal's reason as soon as it aborts. For calls that
 * take no signal of their own (the Cloud client libraries): the request itself runs on until its
 * own timeout, but nobody waits for it, and a stopping process exits without it.
 */
export function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return promise;
  if (signal.aborted) {
    promise.catch(() => undefined);
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
