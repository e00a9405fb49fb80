import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { cleanupDeadline, cleanupMarginMs, StopDeadlineError, untilAborted } from '../src/stop-deadline.js';

describe('cleanupDeadline', () => {
  it('aborts the deadline less the margin after the stop, with a coded reason naming the setting', async () => {
    const stop = new AbortController();
    const deadline = cleanupDeadline(stop.signal, 400)!;
    expect(cleanupMarginMs(400)).toBe(100);
    await new Promise((resolve) => setTimeout(resolve, 450));
    // Nothing before the stop, however long the run.
    expect(deadline.aborted).toBe(false);
    const stoppedAt = Date.now();
    stop.abort(new Error('stopped by SIGTERM'));
    await new Promise<void>((resolve) => deadline.addEventListener('abort', () => resolve(), { once: true }));
    expect(Date.now() - stoppedAt).toBeGreaterThanOrEqual(290);
    expect(deadline.reason).toBeInstanceOf(StopDeadlineError);
    expect((deadline.reason as StopDeadlineError).code).toBe('stop_deadline_passed');
    expect((deadline.reason as Error).message).toBe("stopped by SIGTERM: the cleanup's deadline (stopDeadlineMs: 400) passed with requests still unanswered");
  });

  it('is one signal per stop signal and deadline, so a backfill of many windows adds one listener, not one per window', () => {
    const stop = new AbortController();
    const first = cleanupDeadline(stop.signal, 20_000);
    expect(cleanupDeadline(stop.signal, 20_000)).toBe(first);
    expect(cleanupDeadline(stop.signal, 10_000)).not.toBe(first);
    expect(cleanupDeadline(undefined, 20_000)).toBeUndefined();
  });

  it('keeps at most 2 s of a long deadline for the summary, and a quarter of a short one', () => {
    expect(cleanupMarginMs(20_000)).toBe(2_000);
    expect(cleanupMarginMs(4_000)).toBe(1_000);
  });
});

describe('untilAborted', () => {
  it('rejects with the reason as soon as the signal aborts, whatever the promise does', async () => {
    const controller = new AbortController();
    const never = new Promise<string>(() => undefined);
    const waiting = untilAborted(never, controller.signal);
    controller.abort(new Error('stopped by SIGINT'));
    await expect(waiting).rejects.toThrow('stopped by SIGINT');
  });

  it('settles with the promise when the signal never aborts, and leaves no listener behind', async () => {
    const controller = new AbortController();
    await expect(untilAborted(Promise.resolve('answer'), controller.signal)).resolves.toBe('answer');
    await expect(untilAborted(Promise.reject(new Error('404')), controller.signal)).rejects.toThrow('404');
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });
});
