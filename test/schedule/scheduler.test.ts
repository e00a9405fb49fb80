import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import type { LoadedJob } from '../../src/config/load-config.js';
import { createLogger } from '../../src/log.js';
import type { TileSummary } from '../../src/pipeline/tile-summary.js';
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

describe('Scheduler (second-level crons, real time)', () => {
  it('logs each job\'s next run at start, and leaves jobs without a schedule alone', async () => {
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
    await sleep(4200);
    await scheduler.stop(5000);
    expect(started).toBeGreaterThanOrEqual(2);
    expect(maxConcurrent).toBe(1);
    expect(skipped.length).toBeGreaterThanOrEqual(1);
    expect(out.text).toContain('skipped a run of slow: the previous run is still going');
  }, 15_000);

  it('lets a running tile finish within the grace period', async () => {
    const { logger: log } = await logger();
    const finished: string[] = [];
    const scheduler = new Scheduler(
      [job('drain')],
      async (_job, signal) => {
        await sleep(800, undefined, { signal });
        return { status: 'succeeded' } as TileSummary;
      },
      log,
      { finished: (j, summary) => finished.push(`${j.name}:${summary?.status}`) },
    );
    scheduler.start();
    while (scheduler.busy.length === 0) await sleep(20);
    expect(await scheduler.stop(5000)).toBe(true);
    expect(finished).toEqual(['drain:succeeded']);
  }, 10_000);

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
    while (scheduler.busy.length === 0) await sleep(20);
    expect(await scheduler.stop(100)).toBe(false);
    expect(aborted).toBe(true);
    expect(scheduler.busy).toEqual([]);
  }, 10_000);
});
