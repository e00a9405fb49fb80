import type { LoadedJob } from '../../config/load-config.js';
import type { Sink } from '../../sinks/sink.js';
import { countNoun } from '../../count-noun.js';
import { splitWindows, type DateWindow, type WindowStep } from './date-windows.js';
import { doneWindowsOf } from './held-windows.js';
import { shareOf, type Shard } from './shard-windows.js';
import type { WindowRunContext } from './window-batch.js';

/** Which windows a backfill runs, and the ones it leaves out. */
export interface BackfillSelection {
  /** [from, to) split by step: every window of the backfill, all workers together. */
  all: DateWindow[];
  /** This worker's share of `all` (all of it without a shard). */
  share: DateWindow[];
  /** Of `share`, those every sink shows done (--resume): not run. */
  skipped: DateWindow[];
  /** The windows to run, oldest first. */
  windows: DateWindow[];
}

export interface BackfillRange {
  from: string;
  to: string;
  step: WindowStep;
  shard?: Shard;
  /** Skip the windows every sink shows done. */
  resume: boolean;
}

/** The backfill's range split into windows, this worker's share of them, less those already done when resuming. */
export async function selectBackfillWindows(
  job: LoadedJob,
  sinks: readonly Sink[],
  range: BackfillRange,
  context: WindowRunContext,
): Promise<BackfillSelection> {
  const { logger } = context;
  const { shard } = range;
  const all = splitWindows(range.from, range.to, range.step);
  const share = shard === undefined ? all : shareOf(all, shard);
  if (shard !== undefined)
    logger.info(
      { shard, windows: share.length, of: all.length },
      `shard ${shard.index} of ${shard.count}: ${share.length} of ${countNoun(all.length, 'window')}`,
    );
  const done = range.resume ? await doneWindowsOf(job, sinks, share, context.environment, context.sinkOptions ?? {}, logger) : new Set<string>();
  const skipped = share.filter((window) => done.has(window.from));
  const windows = share.filter((window) => !done.has(window.from));
  if (range.resume)
    logger.info(
      { skipped: skipped.length, remaining: windows.length },
      `--resume: ${countNoun(skipped.length, 'window')} already done, ${windows.length} to run`,
    );
  return { all, share, skipped, windows };
}
