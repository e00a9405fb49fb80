import { messageOf, TilehouseError, withoutJob } from '../errors.js';
import type { Logger } from '../log.js';
import { isPartialPublish, isPublishOutcomeUnknown, type SinkResult, type SinkWriter } from '../sinks/sink.js';
import { abortAll } from './read-into-sinks.js';
import type { JobDefinition } from '../value-types/job-definition.js';
import { checkPublishGuards, type GuardReport } from './publish-guard-check.js';
import { ATTR, SPANS, telemetry, type Attributes } from '../telemetry/telemetry.js';
import { decideRunHeld, type EarlierTries } from './run-id-held.js';

/** A sink's result details (job ids, object generation, file) as `tilehouse.sink.<detail>` attributes. */
function detailAttributes(result: SinkResult): Attributes {
  const attributes: Record<string, string | number | boolean> = { [ATTR.rows]: result.rows };
  for (const [key, value] of Object.entries(result.details ?? {})) attributes[`${ATTR.sinkDetailPrefix}${key}`] = value;
  return attributes;
}

/** Each phase of each writer in a span of its own (telemetry off: the call itself). */
const prepareTraced = (writer: SinkWriter) => telemetry().inSpan(SPANS.prepare, { [ATTR.sinkTarget]: writer.target }, () => writer.prepare());
const publishTraced = (writer: SinkWriter) =>
  telemetry().inSpan(SPANS.publish, { [ATTR.sinkTarget]: writer.target }, async (span) => {
    const result = await writer.publish();
    span.setAttributes({ [ATTR.sinkKind]: result.sink, ...detailAttributes(result) });
    return result;
  });

/**
 * Some sinks published the new run and a later one failed to, or one changed its target in part
 * before it failed (see `isPartialPublish`): the targets disagree until a re-run. Its own status
 * and exit code (3), because neither "succeeded" nor "failed" is true.
 */
export class PartiallyPublishedError extends TilehouseError {
  readonly code = 'partially_published';

  constructor(
    jobName: string,
    readonly published: readonly SinkResult[],
    /** The failed target first, then those never published; each no longer holds only the new run. */
    readonly unpublished: readonly string[],
    cause: unknown,
    /** The failed target changed in part: it holds neither run whole. */
    readonly changedInPart = false,
    /** What the failed target holds is not known (isPublishOutcomeUnknown): the new run or the previous one. */
    readonly outcomeUnknown = false,
  ) {
    const causeCode = cause instanceof TilehouseError ? `${cause.code}: ` : '';
    const failed = unpublished[0];
    const newRun = [...published.map((result) => result.target), ...(changedInPart ? [`part of ${failed}`] : [])];
    const previousRun = unpublished.flatMap((target, index) =>
      index > 0 ? [target] : changedInPart ? [`the rest of ${target}`] : outcomeUnknown ? [] : [target],
    );
    super(
      `job ${jobName}: ${failed} failed to publish${changedInPart ? ' after changing part of it' : ''} (${causeCode}${withoutJob(jobName, messageOf(cause))}); ` +
        (newRun.length > 0 ? `new run in: ${newRun.join(', ')}; ` : '') +
        (outcomeUnknown ? `outcome unknown for: ${failed} (the new run or the previous one); ` : '') +
        (previousRun.length > 0 ? `previous run still in: ${previousRun.join(', ')}. ` : '') +
        'A re-run replaces all of them' +
        ' (append: re-run with the same --run-id so the rows are not appended twice)',
      { cause },
    );
  }
}

/** The run was stopped (SIGTERM, SIGINT, a scheduler's grace period) before it published. */
export class RunStoppedError extends TilehouseError {
  readonly code = 'run_stopped';

  constructor(jobName: string, reason: unknown) {
    super(`job ${jobName}: ${withoutJob(jobName, messageOf(reason))} before publishing; every target still holds its previous run`, { cause: reason });
  }
}

export interface PublishOutcome {
  /** The targets that hold this run: each `adopted` when an earlier try of the run id had published there (nothing committed). */
  outputs: SinkResult[];
  /** Set when some sinks published and another failed to, or one changed its target in part. */
  partial?: PartiallyPublishedError;
  /** What the publish guards said (absent: no writer has a guard). */
  guard?: GuardReport;
}

/** What the publish guards need of a run (see checkPublishGuards). */
export interface PublishGuardOptions {
  /** Rows of this export, the same in every sink. */
  exportedRows: number;
  /** The window had not ended when its export started: the recent-runs rule does not apply. */
  openWindow?: boolean;
  /** --allow-shrink: a tripped guard is reported, not refused. */
  allowShrink?: boolean;
  /** The job's definition now: a verdict says what changed since the run that wrote its target. */
  definition?: JobDefinition;
}

/** What asking the targets for the run id needs (see decideRunHeld). */
export interface RunHeldOptions {
  runId: string;
  /** Rows of this export, to say whether an adopted publish wrote others. */
  exportedRows: number;
  /** The writers' kinds, in the writers' order. */
  kinds: readonly SinkResult['sink'][];
  /** The run history's word on earlier tries of the run id; absent: the run drew its id, no target can hold it. */
  earlier: EarlierTries | undefined;
}

/**
 * The two-phase publish across a run's sinks (writers in publish order). Phase 1 prepares every
 * sink; any failure there, or a stop signal before phase 2, aborts them all and publishes
 * nothing (the error is rethrown). Then every target is asked whether it holds the run id already
 * (decideRunHeld): when every one does, every sink adopts and nothing is committed anywhere (the
 * writers are aborted, their staging removed); when only some do, or one cannot tell, nothing is
 * published (run_id_unverified). Between the phases the publish guards of every sink are judged
 * (checkPublishGuards): one that trips refuses the whole tile the same way. Phase 2 publishes one sink after the other and is not
 * interrupted by the stop signal, so what it reports is what the targets hold: a failure at the
 * first publish is a plain failure (nothing changed), a failure after one succeeded is
 * `partially_published`, and so is a failure at any index whose error says it changed its own
 * target in part (`isPartialPublish`, e.g. some partitions of a table copied), or, with targets
 * after it, that its outcome is unknown (`isPublishOutcomeUnknown`: it may hold the new run while
 * they keep the previous one).
 */
export async function publishAll(
  writers: readonly SinkWriter[],
  options: {
    jobName: string;
    logger: Logger;
    signal?: AbortSignal;
    guard?: PublishGuardOptions;
    runHeld?: RunHeldOptions;
    /** Awaited before the first publish (not when every target adopted): the run history's "publishing" mark. */
    onPublishing?: () => Promise<void>;
  },
): Promise<PublishOutcome> {
  const { logger } = options;
  let guard: GuardReport | undefined;
  /** Targets that already hold this run id (an earlier try's publish): each adopts, nothing is committed there. */
  let adopted: SinkResult[] = [];
  let publishing = writers;
  try {
    for (const writer of writers) await prepareTraced(writer);
    if (options.signal?.aborted) throw new RunStoppedError(options.jobName, options.signal.reason);
    // Before the guards: a target that holds the run id already takes nothing, so no guard need judge it.
    if (options.runHeld !== undefined) {
      const decision = await decideRunHeld(writers, { jobName: options.jobName, ...options.runHeld });
      adopted = decision.adopted;
      const adopting = writers.filter((_, index) => decision.adopted.some((output) => output.target === writers[index]!.target));
      publishing = writers.filter((writer) => !adopting.includes(writer));
      await abortAll(adopting, logger);
      for (const output of adopted)
        logger.info({ target: output.target, rows: output.rows }, 'this run id is already published there; adopted, nothing committed');
    }
    // Every sink prepared, none published: a guard that trips here leaves every target as it was.
    if (options.guard !== undefined && publishing.length > 0)
      guard = await checkPublishGuards(publishing, { jobName: options.jobName, logger, ...options.guard });
    if (options.signal?.aborted) throw new RunStoppedError(options.jobName, options.signal.reason);
    if (publishing.length > 0) await options.onPublishing?.();
  } catch (error) {
    await abortAll(writers, logger);
    throw error;
  }
  // The adopted targets hold this run id already: a failure of the first publish after them is a partial publish too.
  const outputs: SinkResult[] = [...adopted];
  for (const [index, writer] of publishing.entries()) {
    try {
      outputs.push(await publishTraced(writer));
      logger.debug({ target: writer.target }, 'published');
    } catch (error) {
      const unpublished = publishing.slice(index);
      await abortAll(unpublished, logger);
      const changedInPart = isPartialPublish(error);
      const outcomeUnknown = !changedInPart && isPublishOutcomeUnknown(error);
      // The first target failing is a plain failure (nothing changed), unless what it holds is not
      // known and others follow: then the targets may disagree, a possible partial publish.
      if (outputs.length === 0 && !changedInPart && !(outcomeUnknown && publishing.length > 1)) throw error;
      return {
        outputs,
        partial: new PartiallyPublishedError(
          options.jobName,
          outputs,
          unpublished.map((w) => w.target),
          error,
          changedInPart,
          outcomeUnknown,
        ),
        ...(guard ? { guard } : {}),
      };
    }
  }
  // In publish order, adopted or published.
  const order = (output: SinkResult) => writers.findIndex((writer) => writer.target === output.target);
  return { outputs: outputs.sort((a, b) => order(a) - order(b)), ...(guard ? { guard } : {}) };
}
