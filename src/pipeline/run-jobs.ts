import type { Dispatcher } from 'undici';
import type { EnvironmentConfig } from '../config/environment-schema.js';
import type { LoadedJob } from '../config/load-config.js';
import type { ClientCredentials } from '../config/secrets.js';
import type { Logger } from '../log.js';
import type { Sink } from '../sinks/sink.js';
import { RunToken } from '../source/session-token.js';
import { mapWithConcurrency } from '../map-with-concurrency.js';
import type { OnProgress } from './progress.js';
import { newRunId } from './run-id.js';
import { runJob } from './run-job.js';
import { createSourceDispatcher, type RetrySettings } from './source-session.js';
import { sweepSinks } from './sweep-sinks.js';
import type { RunSummary, JobRunSummary } from './job-summary.js';
import type { DefinitionValues } from '../value-types/job-definition.js';
import type { EarlierTries } from './run-id-held.js';

export interface RunOptions {
  environment: EnvironmentConfig;
  credentials: ClientCredentials;
  logger: Logger;
  buildSinks: (job: LoadedJob) => Sink[];
  dispatcher?: Dispatcher;
  retry?: RetrySettings;
  signal?: AbortSignal;
  runId?: string;
  /** When the run started, read once by the caller that drew `runId` from it (default: `now()`). */
  startedAt?: Date;
  now?: () => Date;
  /** Each tile's start, pages written and end, for a progress display. */
  onProgress?: OnProgress;
  /**
   * Awaited after each tile's run with its summary (metrics are pushed here); before the next
   * tile of its worker starts. It must not throw: a report that fails is the reporter's to log.
   */
  onTileFinished?: (summary: JobRunSummary, startedAt: Date) => Promise<void>;
  /** --allow-shrink: a tripped publish guard is reported, the tile publishes. */
  allowShrink?: boolean;
  /** The definition an earlier run of a job ran with (the run history's), for a refusal's old → new. */
  definitionOfRun?: (job: string, runId: string) => Promise<DefinitionValues | undefined>;
  /** A run id given to the run: what the run history says of its earlier tries, per job (JobRunDependencies.earlierTries). */
  earlierTries?: (job: string) => Promise<EarlierTries>;
  /** Awaited when a job's tile is about to change its first target (JobRunDependencies.onPublishing). */
  onPublishing?: (job: string) => Promise<void>;
}

/** Counts of a run's tiles by outcome. */
export function countOutcomes(tiles: readonly JobRunSummary[]): Pick<RunSummary, 'succeeded' | 'failed' | 'partiallyPublished'> {
  const count = (status: JobRunSummary['status']) => tiles.filter((tile) => tile.status === status).length;
  return { succeeded: count('succeeded'), failed: count('failed'), partiallyPublished: count('partially_published') };
}

/**
 * Runs each job once, up to `tileConcurrency` at a time; a failed job does not stop the others.
 * The run starts without a token and its first tile fetches one that every tile of the run then
 * shares until it is due for replacement (spec: "first obtains a fresh token": a token fetched
 * at the start of this run is fresh; nothing is kept across runs).
 */
export async function runJobs(jobs: readonly LoadedJob[], options: RunOptions): Promise<RunSummary> {
  const startedAt = options.startedAt ?? (options.now ?? (() => new Date()))();
  // Measured on this process's clock: `now` may place the run elsewhere in time (a replayed night).
  const began = Date.now();
  const runId = options.runId ?? newRunId(startedAt);
  const dispatcher = options.dispatcher ?? createSourceDispatcher();
  const sinks = new Map(jobs.map((job) => [job, options.buildSinks(job)] as const));
  // tokenScope 'job': no shared token, each job's session fetches its own.
  const runToken = options.environment.source.tokenScope === 'run' ? new RunToken() : undefined;
  await sweepSinks([...sinks.values()].flat(), options.logger);
  let results: Array<JobRunSummary | undefined>;
  try {
    results = await mapWithConcurrency(
      jobs,
      options.environment.tileConcurrency,
      async (job) => {
        options.onProgress?.({ job: job.name, phase: 'started' });
        const summary = await runJob(job, {
          environment: options.environment,
          credentials: options.credentials,
          dispatcher,
          logger: options.logger,
          sinks: sinks.get(job)!,
          runId,
          startedAt,
          retry: options.retry,
          signal: options.signal,
          runToken,
          ...(options.allowShrink === true ? { allowShrink: true } : {}),
          ...(options.definitionOfRun === undefined ? {} : { definitionOfRun: (runId: string) => options.definitionOfRun!(job.name, runId) }),
          ...(options.onProgress === undefined ? {} : { onProgress: options.onProgress }),
          ...(options.earlierTries === undefined ? {} : { earlierTries: () => options.earlierTries!(job.name) }),
          ...(options.onPublishing === undefined ? {} : { onPublishing: () => options.onPublishing!(job.name) }),
        });
        options.onProgress?.({ job: job.name, phase: 'finished' });
        await options.onTileFinished?.(summary, startedAt);
        return summary;
      },
      options.signal,
    );
  } finally {
    if (options.dispatcher === undefined) await dispatcher.close();
  }
  const tiles = results.filter((tile): tile is JobRunSummary => tile !== undefined);
  return {
    runId,
    startedAt: startedAt.toISOString(),
    durationMs: Date.now() - began,
    tokenFetches: runToken?.fetched ?? tiles.reduce((sum, tile) => sum + tile.tokenFetches, 0),
    tiles,
    ...countOutcomes(tiles),
  };
}
