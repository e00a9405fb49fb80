import { ConfigError, type ConfigProblem } from '../../config/config-error.js';
import type { LoadedJob } from '../../config/load-config.js';
import { sinkKindOf } from '../../sinks/registry.js';

/**
 * A backfill writes one output per window: each sink as its kind writes windows (its descriptor's
 * `forWindows`: CSV paths must contain {date}, BigQuery must write partitions or merge by key).
 */
export function jobForBackfill(job: LoadedJob): LoadedJob {
  const problems: ConfigProblem[] = [];
  const sinks = job.sinks.map((sink, index) => {
    const windowed = sinkKindOf(sink).forWindows(sink, index, job);
    problems.push(...windowed.problems);
    return windowed.sink;
  });
  if (problems.length > 0) throw new ConfigError(problems);
  return { ...job, sinks };
}

/**
 * An incremental job (`incremental:`) as the backfill machinery runs it: its item and bucket
 * column as the backfill section (the one the window runner reads), its sinks checked as a
 * backfill's (one file or partition per day).
 */
export function jobForIncremental(job: LoadedJob): LoadedJob {
  const incremental = job.incremental!;
  const item = incremental.item ?? job.backfill?.item;
  const bucketColumn = incremental.bucketColumn ?? job.backfill?.bucketColumn;
  return jobForBackfill({ ...job, backfill: { item: item!, ...(bucketColumn === undefined ? {} : { bucketColumn }) } });
}

/** Every job as a run takes it: an incremental job windowed (jobForIncremental), any other as it is. */
export function jobForRun(job: LoadedJob): LoadedJob {
  return job.incremental === undefined ? job : jobForIncremental(job);
}

/** A job as `backfill` takes it: an incremental job with its incremental item (a backfill: section, if any, agrees). */
export function jobForWindows(job: LoadedJob): LoadedJob {
  return job.incremental === undefined ? jobForBackfill(job) : jobForIncremental(job);
}

/**
 * The first sink that takes windows one at a time, oldest first (-1: none). Windows merged into
 * one table do: concurrent MERGEs into one table conflict, and a key two windows hold must end
 * with the later window's values.
 */
export function sinkTakingWindowsOneAtATime(job: LoadedJob): number {
  return job.sinks.findIndex((sink) => sinkKindOf(sink).takesWindowsOneAtATime(sink));
}
