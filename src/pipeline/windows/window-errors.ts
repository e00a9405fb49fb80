// The windows family's refusals, in a module of their own: the session, the window run and the
// commands raise them, and none of those should have to import another's machinery to name one.
import { TilehouseError } from '../../errors.js';
import { countNoun } from '../../count-noun.js';
import type { DateWindow } from './date-windows.js';

export class BackfillBucketMissingError extends TilehouseError {
  readonly code = 'backfill_bucket_missing';
  constructor(jobName: string, bucketColumn: string, headers: readonly string[]) {
    super(`job ${jobName}: backfill.bucketColumn ${JSON.stringify(bucketColumn)} is not among the headers ${JSON.stringify(headers)}`);
  }
}

export class BackfillWindowFutureError extends TilehouseError {
  readonly code = 'backfill_window_future';
  constructor(jobName: string, window: DateWindow, today: string) {
    super(`job ${jobName}: window ${window.from}..${window.to} starts after today (${today} on the source's clock); it has no rows yet`);
  }
}

export class BackfillWindowEmptyError extends TilehouseError {
  readonly code = 'backfill_window_empty';
  constructor(jobName: string, window: DateWindow, dropped: number, bucketColumn: string, published: boolean) {
    super(
      `job ${jobName}: window ${window.from}..${window.to}: all ${countNoun(dropped, 'row')} read had a ${bucketColumn} outside the window; ` +
        `${published ? 'an empty window was published' : 'nothing published'} (is the source clock or the job timezone off?)`,
    );
  }
}

/**
 * The token answer carried no `Date` that parses, so the source's today is unknown: every `rw`
 * window counts days back from it, and a guess would publish days the source has not reached, or
 * empty files for days it holds, which the next run would then count as done.
 */
export class SourceClockUnknownError extends TilehouseError {
  readonly code = 'source_clock_unknown';
  constructor(jobName: string, tokenUrl: string, unparsed: string | undefined, configFile: string | undefined) {
    super(
      `job ${jobName}: the token answer of ${tokenUrl} has ${unparsed === undefined ? 'no Date header' : `a Date header that does not parse (${JSON.stringify(unparsed)})`}, ` +
        "so the source's clock is unknown and its day windows cannot be placed; nothing was exported. " +
        `Fix: have the token endpoint send its Date, or set source.clock: local in ${configFile ?? 'the environment config'} to place windows on this machine's clock (only if it keeps the source's time)`,
    );
  }
}
