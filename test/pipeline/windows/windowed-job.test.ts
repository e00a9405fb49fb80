import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/config/config-error.js';
import { jobSchema } from '../../../src/config/job-schema.js';
import type { LoadedJob } from '../../../src/config/load-config.js';
import { backfillItemIndex } from '../../../src/pipeline/windows/run-windows.js';
import { jobForBackfill, jobForIncremental, jobForRun, jobForWindows, sinkTakingWindowsOneAtATime } from '../../../src/pipeline/windows/windowed-job.js';
import { incidentDaysQuery } from '../../support/queries.js';

/** A job as load-config gives it: schema-parsed, with its file and timezone. */
function loaded(job: Record<string, unknown>): LoadedJob {
  return { ...jobSchema.parse({ name: 'daily', tile: 'tile-1', query: incidentDaysQuery, ...job }), file: 'jobs/daily.yaml', timezone: 'UTC' };
}

const partitioned = { type: 'bigquery', table: 'incidents', writeMode: 'partition' };
const merged = { type: 'bigquery', table: 'incidents', writeMode: 'merge', primaryKey: ['Number'] };

function problemsOf(run: () => unknown): Array<{ field: string; value?: string; message: string }> {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    expect(error).toMatchObject({ code: 'config_invalid' });
    return (error as ConfigError).problems.map(({ field, value, message }) => ({ field, ...(value === undefined ? {} : { value }), message }));
  }
  throw new Error('expected a ConfigError');
}

describe('jobForBackfill', () => {
  it('refuses a CSV path without {date}: every window would replace the one file', () => {
    const job = loaded({ backfill: { item: 'day' }, sinks: [{ type: 'csv', path: 'out/daily.csv' }] });
    expect(problemsOf(() => jobForBackfill(job))).toEqual([
      { field: 'sinks[0].path', value: '"out/daily.csv"', message: 'a backfill writes one file per window: the path needs {date}' },
    ]);
  });

  it('refuses a BigQuery sink that replaces or appends, naming every sink that does, in order', () => {
    const job = loaded({
      backfill: { item: 'day' },
      sinks: [
        { type: 'bigquery', table: 'a', writeMode: 'replace' },
        { type: 'csv', path: 'out/{date}.csv' },
        { type: 'bigquery', table: 'b', writeMode: 'append' },
      ],
    });
    expect(problemsOf(() => jobForBackfill(job)).map((problem) => `${problem.field} = ${problem.value}`)).toEqual([
      'sinks[0].writeMode = "replace"',
      'sinks[2].writeMode = "append"',
    ]);
  });

  it('accepts one file per {date} and a partition or a merge per window, the sinks unchanged', () => {
    const job = loaded({ backfill: { item: 'day' }, sinks: [{ type: 'csv', path: 'out/{date}.csv' }, partitioned, { ...merged, table: 'other' }] });
    const windowed = jobForBackfill(job);
    expect(windowed.sinks).toEqual(job.sinks);
    expect(windowed).not.toBe(job);
  });
});

describe('jobForIncremental', () => {
  it('takes its item and bucket column as the backfill section the window runner reads', () => {
    const job = loaded({ incremental: { item: 'day', bucketColumn: 'Day', startFrom: '2026-07-01' }, sinks: [partitioned] });
    const windowed = jobForIncremental(job);
    expect(windowed.backfill).toEqual({ item: 'day', bucketColumn: 'Day' });
    expect(backfillItemIndex(windowed)).toBe(1);
  });

  it('falls back on the backfill section for what incremental: leaves out, and leaves out a bucket column neither names', () => {
    const job = loaded({ backfill: { item: 'day' }, incremental: { startFrom: '2026-07-01' }, sinks: [partitioned] });
    expect(jobForIncremental(job).backfill).toEqual({ item: 'day' });
  });

  it('is refused like a backfill when a sink cannot take a window per day', () => {
    // The schema refuses this for an incremental job already; a job built past it still cannot run windows.
    const job = {
      ...loaded({ backfill: { item: 'day' }, sinks: [{ type: 'csv', path: 'out/daily.csv' }] }),
      incremental: { startFrom: '2026-07-01', lookbackDays: 0, maxWindows: 31 },
    } as LoadedJob;
    expect(problemsOf(() => jobForIncremental(job)).map((problem) => problem.field)).toEqual(['sinks[0].path']);
  });
});

describe('jobForRun and jobForWindows', () => {
  it('leaves an ordinary job as it is for a run (the very object), and windows an incremental one', () => {
    const ordinary = loaded({ sinks: [{ type: 'csv', path: 'out/daily.csv' }] });
    expect(jobForRun(ordinary)).toBe(ordinary);
    const incremental = loaded({ incremental: { item: 'day', startFrom: '2026-07-01' }, sinks: [partitioned] });
    expect(jobForRun(incremental).backfill).toEqual({ item: 'day' });
  });

  it('backfills an ordinary job by its backfill section and an incremental one by its incremental item', () => {
    expect(
      problemsOf(() => jobForWindows(loaded({ backfill: { item: 'day' }, sinks: [{ type: 'csv', path: 'out/daily.csv' }] }))).map((problem) => problem.field),
    ).toEqual(['sinks[0].path']);
    expect(jobForWindows(loaded({ incremental: { item: 'day', startFrom: '2026-07-01' }, sinks: [partitioned] })).backfill).toEqual({ item: 'day' });
  });
});

describe('sinkTakingWindowsOneAtATime', () => {
  it('names the first sink that merges by key: its windows go one at a time, oldest first', () => {
    expect(sinkTakingWindowsOneAtATime(loaded({ backfill: { item: 'day' }, sinks: [{ type: 'csv', path: 'out/{date}.csv' }, merged] }))).toBe(1);
  });

  it('is -1 for files and partitions, which windows may write side by side', () => {
    expect(sinkTakingWindowsOneAtATime(loaded({ backfill: { item: 'day' }, sinks: [{ type: 'csv', path: 'out/{date}.csv' }, partitioned] }))).toBe(-1);
  });
});
