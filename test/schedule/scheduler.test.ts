import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { LoadedJob } from '../../src/config/load-config.js';
import { createLogger } from '../../src/log.js';
import type { JobRunSummary } from '../../src/pipeline/job-summary.js';
import { Scheduler } from '../../src/schedule/scheduler.js';
import { Capture } from '../support/cli-harness.js';

function job(name: string, cron = '* * * * * *', timezone = 'UTC'): LoadedJob {
  return {
    name,
    tile: 't',
    file: `${name}.yaml`,
    timezone,
    schedule: { cron, timezone },
    query: { items: [{ header: 'h', formula: '[incident.number]', dataType: 'number', filters: [] }], options: {} },
    sinks: [{ type: 'csv', gzip: false }],
    columns: {},
    onInvalidValue: 'fail',
  };
}

async function logger() {
  const out = new Capture();
  return { out, logger: await createLogger({ level: 'info', destination: out }) };
}

/** A wait on the (faked) global timers; node:timers/promises is not faked. */
function sleep(ms: number, _value?: undefined, options: { signal?: AbortSignal } = {}): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    options.signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(options.signal!.reason);
    });
  });
}

/** Scheduler.stop while the fake clock moves on by `advanceMs`. */
async function stopWhileAdvancing(scheduler: Scheduler, graceMs: number, advanceMs: number): Promise<boolean> {
  const stopping = scheduler.stop(graceMs);
  await vi.advanceTimersByTimeAsync(advanceMs);
  return stopping;
}

// Fake timers: the cron ticks, run lengths and grace periods below are exact, not raced against
// a loaded machine's clock.
beforeEach(() => {
  vi.useFakeTimers({ now: new Date('2026-11-23T10:00:00.000Z') });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('Scheduler (second-level crons, fake clock)', () => {
  it("logs each job's next run at start, and leaves jobs without a schedule alone", async () => {
    const { out, logger: log } = await logger();
    const unscheduled = { ...job('manual'), schedule: undefined };
    const scheduler = new Scheduler([job('nightly', '0 3 * * *', 'Europe/Berlin'), unscheduled], async () => undefined, log);
    const plan = scheduler.start();
    await scheduler.stop(0);
    expect(plan).toHaveLength(1);
    expect(plan[0]).toMatchObject({ job: 'nightly', timezone: 'Europe/Berlin' });
    // 03:00 in Berlin is 01:00 or 02:00 UTC depending on DST.
    expect(plan[0]!.nextRun!.getUTCHours()).toBeOneOf([1, 2]);
    expect(out.lines().find((line) => line.msg === 'scheduled nightly')).toMatchObject({ nextRun: plan[0]!.nextRun!.toISOString() });
    expect(out.text).toContain('job manual has no schedule');
  });

  it('runs a job on every tick and skips ticks while the previous run is still going', async () => {
    const { out, logger: log } = await logger();
    let started = 0;
    let concurrent = 0;
    let maxConcurrent = 0;
    const skipped: string[] = [];
    const scheduler = new Scheduler(
      [job('slow')],
      async () => {
        started += 1;
        concurrent += 1;
        maxConcurrent = Math.max(maxConcurrent, concurrent);
        await sleep(1500);
        concurrent -= 1;
        return undefined;
      },
      log,
      { skipped: (j) => skipped.push(j.name) },
    );
    scheduler.start();
    // Ticks at :01, :02, :03, :04; a run lasts 1.5 s: :01 runs, :02 is skipped, :03 runs, :04 is skipped.
    await vi.advanceTimersByTimeAsync(4200);
    expect(await stopWhileAdvancing(scheduler, 5000, 2000)).toBe(true);
    expect(started).toBe(2);
    expect(maxConcurrent).toBe(1);
    expect(skipped).toEqual(['slow', 'slow']);
    expect(out.text).toContain('skipped a run of slow: the previous run is still going');
  });

  it('lets a running tile finish within the grace period', async () => {
    const { logger: log } = await logger();
    const finished: string[] = [];
    const scheduler = new Scheduler(
      [job('drain')],
      async (_job, signal) => {
        await sleep(800, undefined, { signal });
        return { status: 'succeeded' } as JobRunSummary;
      },
      log,
      { finished: (j, summary) => finished.push(`${j.name}:${summary?.status}`) },
    );
    scheduler.start();
    await vi.advanceTimersByTimeAsync(1000);
    expect(scheduler.busy).toEqual(['drain']);
    expect(await stopWhileAdvancing(scheduler, 5000, 800)).toBe(true);
    expect(finished).toEqual(['drain:succeeded']);
  });

  it('aborts a running tile when the grace period ends, and waits for it to clean up', async () => {
    const { logger: log } = await logger();
    let aborted = false;
    const scheduler = new Scheduler(
      [job('stuck')],
      async (_job, signal) => {
        await sleep(60_000, undefined, { signal }).catch(() => (aborted = true));
        return undefined;
      },
      log,
    );
    scheduler.start();
    await vi.advanceTimersByTimeAsync(1000);
    expect(scheduler.busy).toEqual(['stuck']);
    expect(await stopWhileAdvancing(scheduler, 100, 100)).toBe(false);
    expect(aborted).toBe(true);
    expect(scheduler.busy).toEqual([]);
  });
});
