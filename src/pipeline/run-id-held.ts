import { TilehouseError } from '../errors.js';
import { countNoun } from '../count-noun.js';
import type { RunHeld, SinkResult, SinkWriter } from '../sinks/sink.js';

/**
 * What the run history says of earlier tries of a given run id for one job, read before this try
 * wrote its own record (the workspace reads it; this layer does not import the history). A record
 * is written when a try starts, so a try that left none never ran with this history.
 */
export type EarlierTries =
  | {
      readable: true;
      /** Targets a finished earlier try published (its record's targets), with the rows it recorded. */
      published: ReadonlyMap<string, number>;
      /**
       * Targets whose outcome under an earlier try the history does not know: every target when a
       * try has no end recorded (killed, or still running), else those a try ended with outcome unknown.
       */
      unsettled: readonly string[] | 'every target';
    }
  | { readable: false; reason: string };

/** One target's answer, after the run history was asked where the target could not tell. */
type Answer = RunHeld & { sink: SinkResult['sink'] };

/**
 * A re-run with a run id some target may already hold, where a target cannot tell whether it holds
 * the run (a file no manifest describes, that the run history does not settle): publishing there
 * could put a second answer under the run id, adopting could keep another run's. Nothing was published. Not retryable: a retry with the same run id meets the same targets.
 */
export class RunIdUnverifiedError extends TilehouseError {
  readonly code = 'run_id_unverified';

  constructor(jobName: string, runId: string, answers: readonly Answer[]) {
    const said = answers.map(
      (answer) => `${answer.target} ${answer.held === 'yes' ? 'holds it' : answer.held === 'no' ? 'does not hold it' : 'cannot tell'} (${answer.readFrom})`,
    );
    const holdsSome = answers.some((answer) => answer.held === 'yes');
    super(
      `job ${jobName}: run id ${runId} may already be published, and its targets cannot be shown to hold one answer for it: ${said.join('; ')}. ` +
        `Nothing was published${holdsSome ? ': publishing the current data where a target cannot tell could leave two answers under one run id' : ''}. ` +
        'Re-run with a new --run-id to publish the current data to every target (a file sink with manifest: true can tell next time)',
    );
  }
}

/** What the targets said, decided for the whole tile: the targets that adopt (nothing committed there); the others publish. */
export interface RunHeldDecision {
  adopted: SinkResult[];
}

/**
 * One answer per run id across a tile's targets, asked after every sink prepared and before any
 * publishes (the order publish-sinks.ts keeps): each writer says whether its target holds this run
 * id (SinkWriter.heldRun); where a target cannot tell, the run history's record of the run id
 * decides (a finished try named the target: it does; no try may have published it: it does not).
 *
 * - no target holds it: the run publishes everywhere;
 * - every target holds it: every sink adopts, nothing is committed anywhere, each output says
 *   `adopted` with the rows that publish wrote (and `keptEarlierPublish` when they are not this run's);
 * - some hold it and the others know they do not (a partial publish re-run with its run id, as
 *   exit 3 asks): those that hold it adopt, the others publish, and the partial publish converges;
 * - a target cannot tell: RunIdUnverifiedError, nothing published, so no target takes an answer
 *   that may differ from the one another holds under the run id.
 *
 * `earlier` absent: the run drew its run id itself, so no target can hold it and none is asked.
 */
export async function decideRunHeld(
  writers: readonly SinkWriter[],
  options: { jobName: string; runId: string; exportedRows: number; kinds: readonly SinkResult['sink'][]; earlier: EarlierTries | undefined },
): Promise<RunHeldDecision> {
  const { earlier } = options;
  if (earlier === undefined) return { adopted: [] };
  const answers = await Promise.all(
    writers.map(async (writer, index): Promise<Answer> => {
      const sink = options.kinds[index]!;
      const said = (await writer.heldRun?.()) ?? { held: 'no' as const, sink, target: writer.target, readFrom: 'the sink keeps no run ids' };
      return settledByHistory({ ...said, sink }, options.runId, earlier);
    }),
  );
  if (answers.some((answer) => answer.held === 'unknown')) throw new RunIdUnverifiedError(options.jobName, options.runId, answers);
  return { adopted: answers.flatMap((answer) => (answer.held === 'yes' ? [adoptedResult(answer, options.runId, options.exportedRows)] : [])) };
}

/** A target's answer, with the run history's word where the target could not tell, or where it says the run published there. */
function settledByHistory(answer: Answer, runId: string, earlier: EarlierTries): Answer {
  if (answer.held === 'yes' || !earlier.readable) {
    return answer.held === 'unknown' && !earlier.readable
      ? { ...answer, readFrom: `${answer.readFrom}; the run history could not be read: ${earlier.reason}` }
      : answer;
  }
  const recorded = earlier.published.get(answer.target);
  // A try of this run id published here, and a later run may have replaced it since: the run id was published here all the same.
  if (recorded !== undefined)
    return { sink: answer.sink, target: answer.target, held: 'yes', rows: recorded, readFrom: `the run history's record of run ${runId}` };
  if (answer.held === 'no') return answer;
  const unsettled = earlier.unsettled === 'every target' || earlier.unsettled.includes(answer.target);
  return unsettled
    ? {
        ...answer,
        readFrom: `${answer.readFrom}; the run history has a try of run ${runId} that ended without saying what it published (killed, or still running)`,
      }
    : { sink: answer.sink, target: answer.target, held: 'no', readFrom: `${answer.readFrom}; the run history: no try of run ${runId} published it` };
}

/** An adopted target's output: nothing committed, the rows the earlier publish wrote (this run's when the target does not say). */
function adoptedResult(answer: Extract<Answer, { held: 'yes' }>, runId: string, exportedRows: number): SinkResult {
  const kept = answer.rows !== undefined && answer.rows !== exportedRows;
  return {
    sink: answer.sink,
    target: answer.target,
    rows: answer.rows ?? exportedRows,
    adopted: true,
    ...(kept ? { keptEarlierPublish: true } : {}),
    details: {
      ...answer.details,
      adopted: true,
      heldFrom: answer.readFrom,
      sentRows: exportedRows,
      ...(answer.rows === undefined ? { rowsFrom: 'this run (the earlier publish not counted)' } : {}),
    },
    ...(kept
      ? {
          warnings: [
            `${answer.target}: run id ${runId} was already published there with ${countNoun(answer.rows!, 'row')} (${answer.readFrom}); ` +
              `this run's ${countNoun(exportedRows, 'row')} were not published (a run id publishes once; re-run with a new --run-id to publish the current data)`,
          ],
        }
      : {}),
  };
}
