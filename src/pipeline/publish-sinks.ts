import { messageOf, TilehouseError } from '../errors.js';
import type { Logger } from '../log.js';
import type { SinkResult, SinkWriter } from '../sinks/sink.js';
import { abortAll } from './read-into-sinks.js';

/**
 * Some sinks published the new run and a later one failed to: the targets disagree until a re-run.
 * Its own status and exit code (3), because neither "succeeded" nor "failed" is true.
 */
export class PartiallyPublishedError extends TilehouseError {
  readonly code = 'partially_published';

  constructor(
    jobName: string,
    readonly published: readonly SinkResult[],
    readonly unpublished: readonly string[],
    cause: unknown,
  ) {
    const causeCode = cause instanceof TilehouseError ? `${cause.code}: ` : '';
    super(
      `job ${jobName}: ${unpublished[0]} failed to publish (${causeCode}${messageOf(cause)}); ` +
        `new run in: ${published.map((result) => result.target).join(', ')}; ` +
        `previous run still in: ${unpublished.join(', ')}. A re-run replaces all of them` +
        ' (append: re-run with the same --run-id so the rows are not appended twice)',
      { cause },
    );
  }
}

/** The run was stopped (SIGTERM, SIGINT, a scheduler's grace period) before it published. */
export class RunStoppedError extends TilehouseError {
  readonly code = 'run_stopped';

  constructor(jobName: string, reason: unknown) {
    super(`job ${jobName}: ${messageOf(reason)} before publishing; every target still holds its previous run`, { cause: reason });
  }
}

export interface PublishOutcome {
  outputs: SinkResult[];
  /** Set when some sinks published and another failed to. */
  partial?: PartiallyPublishedError;
}

/**
 * The two-phase publish across a run's sinks (writers in publish order). Phase 1 prepares every
 * sink; any failure there, or a stop signal before phase 2, aborts them all and publishes
 * nothing (the error is rethrown). Phase 2 publishes one sink after the other and is not
 * interrupted by the stop signal, so what it reports is what the targets hold: a failure at the
 * first publish is a plain failure, a failure after one succeeded is `partially_published`.
 */
export async function publishAll(writers: readonly SinkWriter[], options: { jobName: string; logger: Logger; signal?: AbortSignal }): Promise<PublishOutcome> {
  const { logger } = options;
  try {
    for (const writer of writers) await writer.prepare();
    if (options.signal?.aborted) throw new RunStoppedError(options.jobName, options.signal.reason);
  } catch (error) {
    await abortAll(writers, logger);
    throw error;
  }
  const outputs: SinkResult[] = [];
  for (const [index, writer] of writers.entries()) {
    try {
      outputs.push(await writer.publish());
      logger.debug({ target: writer.target }, 'published');
    } catch (error) {
      const unpublished = writers.slice(index);
      await abortAll(unpublished, logger);
      if (index === 0) throw error;
      return { outputs, partial: new PartiallyPublishedError(options.jobName, outputs, unpublished.map((w) => w.target), error) };
    }
  }
  return { outputs };
}
