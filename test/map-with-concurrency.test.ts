import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { mapWithConcurrency } from '../src/map-with-concurrency.js';

describe('mapWithConcurrency', () => {
  it("keeps the items' order whatever finishes first, and never runs more than the limit", async () => {
    let running = 0;
    let most = 0;
    const started: number[] = [];
    const results = await mapWithConcurrency([50, 10, 30, 0, 20, 5], 2, async (delay, index) => {
      started.push(index);
      running += 1;
      most = Math.max(most, running);
      await sleep(delay);
      running -= 1;
      return `item ${index}`;
    });
    expect(results).toEqual(['item 0', 'item 1', 'item 2', 'item 3', 'item 4', 'item 5']);
    expect(most).toBe(2);
    expect(started).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('runs everything at once when the limit exceeds the items', async () => {
    let running = 0;
    let most = 0;
    await mapWithConcurrency([1, 2, 3], 10, async () => {
      running += 1;
      most = Math.max(most, running);
      await sleep(10);
      running -= 1;
    });
    expect(most).toBe(3);
  });

  it('returns [] for no items', async () => {
    expect(await mapWithConcurrency([], 4, async () => 1)).toEqual([]);
  });

  it('starts no new item once the signal is aborted; running ones finish; the rest are undefined', async () => {
    const controller = new AbortController();
    const finished: number[] = [];
    const results = await mapWithConcurrency(
      [0, 1, 2, 3, 4],
      2,
      async (item) => {
        if (item === 1) controller.abort();
        await sleep(10);
        finished.push(item);
        return item * 10;
      },
      controller.signal,
    );
    expect(results).toEqual([0, 10, undefined, undefined, undefined]);
    expect(finished.sort()).toEqual([0, 1]);
  });

  it('starts nothing when the signal is already aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    let calls = 0;
    expect(await mapWithConcurrency([1, 2], 2, async () => (calls += 1), controller.signal)).toEqual([undefined, undefined]);
    expect(calls).toBe(0);
  });
});
