import { describe, expect, it } from 'vitest';
import { AdaptiveConcurrency, type Permit } from '../../src/source/adaptive-concurrency.js';
import { RetryBudget } from '../../src/retry.js';
import { RetryableFailure, withSourceRetries } from '../../src/source/retry-policy.js';

/** Settles pending promise callbacks. */
const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('AdaptiveConcurrency as a request gate', () => {
  it('admits attempts up to the limit, then the next one when a slot frees', async () => {
    const gate = new AdaptiveConcurrency(2);
    const first = await gate.acquire();
    const second = await gate.acquire();
    expect([first.inFlight, second.inFlight]).toEqual([1, 2]);
    let third: Permit | undefined;
    void gate.acquire().then((permit) => (third = permit));
    await tick();
    expect(third).toBeUndefined();
    gate.release(first, 'succeeded');
    await tick();
    expect(third?.inFlight).toBe(2);
  });

  it('serves waiting attempts first come, first served', async () => {
    const gate = new AdaptiveConcurrency(1);
    const holder = await gate.acquire();
    const order: string[] = [];
    const a = gate.acquire().then((permit) => (order.push('a'), permit));
    const b = gate.acquire().then((permit) => (order.push('b'), permit));
    gate.release(holder, 'succeeded');
    gate.release(await a, 'succeeded');
    await b;
    expect(order).toEqual(['a', 'b']);
  });

  it('keeps waiting attempts within the limit a throttle has cut', async () => {
    const gate = new AdaptiveConcurrency(4);
    const permits = await Promise.all([gate.acquire(), gate.acquire(), gate.acquire(), gate.acquire()]);
    const waiting: Permit[] = [];
    for (let i = 0; i < 3; i++) void gate.acquire().then((permit) => waiting.push(permit));
    // All four were sent under the same limit: the first throttle cuts 4 → 2, the others say nothing new.
    gate.release(permits[0]!, 'throttled');
    gate.release(permits[1]!, 'throttled');
    await tick();
    expect(gate.limit).toBe(2);
    expect(waiting).toHaveLength(0);
    gate.release(permits[2]!, 'succeeded');
    await tick();
    expect(waiting.map((permit) => permit.inFlight)).toEqual([2]);
  });

  it('gives up a waiting place when the run is aborted', async () => {
    const gate = new AdaptiveConcurrency(1);
    const holder = await gate.acquire();
    const controller = new AbortController();
    const waiting = gate.acquire(controller.signal);
    controller.abort(new Error('stopped'));
    await expect(waiting).rejects.toThrow('stopped');
    let next: Permit | undefined;
    void gate.acquire().then((permit) => (next = permit));
    gate.release(holder, 'succeeded');
    await tick();
    expect(next?.inFlight).toBe(1);
  });
});

describe('withSourceRetries and a requeued attempt', () => {
  it('sends it again without counting an attempt or spending the budget', async () => {
    const budget = new RetryBudget(1);
    let calls = 0;
    const result = await withSourceRetries(
      async () => {
        calls += 1;
        if (calls <= 5) throw new RetryableFailure(new Error('too many at once'), 0, { requeue: true });
        return 'page';
      },
      { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 1, budget },
    );
    expect(result).toBe('page');
    expect(calls).toBe(6);
    expect(budget.used).toBe(0);
  });
});
