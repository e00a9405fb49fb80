import type { Logger } from '../log.js';
import type { Sink } from '../sinks/sink.js';
import { countNoun } from '../count-noun.js';

/**
 * Before a run writes anything: each sink removes the temp artefacts of runs whose process is
 * gone (OOM, SIGKILL, node drain). A sweep that fails is logged and the run goes on: leftovers
 * cost disk space, never correctness.
 */
export async function sweepSinks(sinks: readonly Sink[], logger: Logger): Promise<void> {
  for (const sink of sinks) {
    try {
      const removed = await sink.sweep(logger);
      if (removed.length > 0) logger.warn({ files: removed }, `removed ${countNoun(removed.length, 'temp file')} left by a run that is gone`);
    } catch (error) {
      logger.warn({ err: error, sink: sink.kind }, 'could not sweep temp files of earlier runs; going on');
    }
  }
}
