import { ConfigError } from '../config/config-error.js';
import type { EnvironmentConfig } from '../config/environment-schema.js';
import type { LoadedJob } from '../config/load-config.js';
import type { ClientCredentials } from '../config/secrets.js';
import { TilehouseError } from '../errors.js';
import type { Logger } from '../log.js';
import type { Sink } from '../sinks/sink.js';
import { parseDate } from '../transform/index.js';
import { findItemIndex, queryForWindow, relativeWindowFor, type DateWindow } from './backfill-windows.js';
import { newRunId } from './run-id.js';
import { runTile } from './run-tile.js';
import { mapWithConcurrency } from './map-with-concurrency.js';
import { createSourceDispatcher, type RetrySettings } from './source-session.js';
import { sweepSinks } from './sweep-sinks.js';
import type { TileSummary } from './tile-summary.js';

export class BackfillBucketMissingError extends TilehouseError {
  readonly code = 'backfill_bucket_missing';
  constructor(jobName: string, bucketColumn: string, headers: readonly string[]) {
    super(`tile ${jobName}: backfill.bucketColumn ${JSON.stringify(bucketColumn)} is not among the headers ${JSON.stringify(headers)}`);
  }
}

export interface BackfillOptions {
  environment: EnvironmentConfig;
  credentials: ClientCredentials;
  logger: Logger;
  sinks: readonly Sink[];
  windows: readonly DateWindow[];
  /** Windows exported at the same time. */
  concurrency: number;
  retry?: RetrySettings;
  signal?: AbortSignal;
  /** The clock the rw windows are computed against; default: now. */
  now?: () => Date;
  onWindowDone?: (result: WindowResult, done: number) => void;
}

export interface WindowResult {
  window: DateWindow;
  summary: TileSummary;
}

export interface BackfillSummary {
  job: string;
  /** False when the job names no bucket column: windows are exported to within a day. */
  exact: boolean;
  windows: WindowResult[];
  failed: DateWindow[];
}

/** Checks that a job can be backfilled and returns the index of its date item. */
export function backfillItemIndex(job: LoadedJob): number {
  if (job.backfill === undefined) {
    throw ConfigError.single({ file: job.file, field: 'backfill', message: 'this job has no backfill section: name the date item the windows filter (backfill.item)' });
  }
  const index = findItemIndex(job.query, job.backfill.item);
  if (index < 0) {
    throw ConfigError.single({ file: job.file, field: 'backfill.item', value: JSON.stringify(job.backfill.item), message: 'no query item has this ref or header' });
  }
  if (job.query.items[index]!.dataType !== 'datetime') {
    throw ConfigError.single({ file: job.file, field: 'backfill.item', value: JSON.stringify(job.backfill.item), message: `the item's dataType is ${job.query.items[index]!.dataType}; rw windows apply to datetime items` });
  }
  const bucket = job.backfill.bucketColumn;
  if (bucket !== undefined && !job.query.items.some((item) => item.header === bucket && item.hidden !== true)) {
    throw ConfigError.single({ file: job.file, field: 'backfill.bucketColumn', value: JSON.stringify(bucket), message: 'no visible query item has this header' });
  }
  return index;
}

/**
 * Exports one tile window by window. Each window is its own tile run (fresh token, own run id,
 * atomic commit) writing its own CSV file or BigQuery partition, so re-running a window replaces
 * exactly that window. A failed window does not stop the others.
 */
export async function runBackfill(job: LoadedJob, options: BackfillOptions): Promise<BackfillSummary> {
  const itemIndex = backfillItemIndex(job);
  const bucketColumn = job.backfill?.bucketColumn;
  const now = options.now ?? (() => new Date());
  await sweepSinks(options.sinks, options.logger);
  const dispatcher = createSourceDispatcher();
  let done = 0;

  const runWindow = async (window: DateWindow): Promise<WindowResult> => {
    const rw = relativeWindowFor(window, job.timezone, now());
    const windowJob: LoadedJob = { ...job, query: queryForWindow(job.query, itemIndex, rw) };
    const startedAt = new Date();
    const summary = await runTile(windowJob, {
      environment: options.environment,
      credentials: options.credentials,
      dispatcher,
      logger: options.logger.child({ window: `${window.from}..${window.to}` }),
      sinks: options.sinks,
      runId: newRunId(startedAt),
      startedAt,
      window,
      retry: options.retry,
      signal: options.signal,
      ...(bucketColumn === undefined
        ? {}
        : {
            selectRows: (headers: readonly string[]) => {
              const column = headers.indexOf(bucketColumn);
              if (column < 0) throw new BackfillBucketMissingError(job.name, bucketColumn, headers);
              // A row belongs to the window its bucket's calendar date falls in.
              return (row: readonly unknown[]) => {
                const date = parseDate(row[column], job.timezone);
                return typeof date === 'string' && date >= window.from && date < window.to;
              };
            },
          }),
    });
    return { window, summary };
  };

  let results: Array<WindowResult | undefined>;
  try {
    results = await mapWithConcurrency(
      options.windows,
      options.concurrency,
      async (window) => {
        const result = await runWindow(window);
        done += 1;
        options.onWindowDone?.(result, done);
        return result;
      },
      options.signal,
    );
  } finally {
    await dispatcher.close();
  }
  const windows = results.filter((result): result is WindowResult => result !== undefined);
  const finished = new Set(windows.filter((r) => r.summary.status === 'succeeded').map((r) => r.window.from));
  return {
    job: job.name,
    exact: bucketColumn !== undefined,
    windows,
    failed: options.windows.filter((window) => !finished.has(window.from)),
  };
}
