import { isTilehouseError, messageOf } from '../errors.js';
import type { Logger } from '../log.js';
import { createSourceDispatcher, openSourceSession, type RetrySettings } from '../pipeline/source-session.js';
import { buildSinks } from '../sinks/build-sinks.js';
import { RunToken } from '../source/session-token.js';
import { guardVerdictOf, wholeExportOf } from '../pipeline/publish-guard-check.js';
import { toColumns } from '../transform/columns.js';
import type { GuardVerdict } from '../sinks/publish-guard.js';
import { jobDefinitionOf } from '../value-types/job-definition.js';
import type { RunnableWorkspace } from './load-workspace.js';
import type { RunSeams } from './run-context.js';
import { definitionSourceOf } from '../sinks/registry.js';

/**
 * A connection test should answer within seconds: one retry per request (a blip is forgiven, a
 * host that is down is reported at once) instead of a run's six attempts with backoff.
 */
export const CHECK_RETRY: RetrySettings = { maxAttempts: 2, baseDelayMs: 250, maxDelayMs: 2_000, budget: 4 };

/** What `check` found of one job: its tile's size and each sink's note, or why it failed. */
export type AccessCheck =
  | { job: string; ok: true; rows: number; columns: number; notes: string[]; guards?: GuardVerdict[] }
  | { job: string; ok: false; code: string; message: string };

/**
 * `check`: credentials and reachability, nothing else. A fresh token (one for all the jobs, like
 * a run; one per job with source.tokenScope: job), each job's page 0, then each sink's target
 * without writing. Each job's outcome is told as soon as it is known; a job that fails does not
 * stop the others.
 */
export async function checkAccess(
  workspace: RunnableWorkspace,
  options: { logger: Logger; signal?: AbortSignal; seams: RunSeams; onJob: (check: AccessCheck) => void },
): Promise<AccessCheck[]> {
  const { logger, signal, seams } = options;
  const dispatcher = createSourceDispatcher();
  const runToken = workspace.environment.source.tokenScope === 'run' ? new RunToken() : undefined;
  const checks: AccessCheck[] = [];
  try {
    for (const job of workspace.selected) {
      const session = openSourceSession(job, {
        environment: workspace.environment,
        credentials: workspace.credentials,
        dispatcher,
        logger: logger.child({ job: job.name, tile: job.tile }),
        retry: seams.retry ?? CHECK_RETRY,
        ...(signal === undefined ? {} : { signal }),
        runToken,
      });
      let check: AccessCheck;
      try {
        const page = await session.client.fetchPage(0);
        const notes: string[] = [];
        const guards: GuardVerdict[] = [];
        // A column override the page refuses is the run's failure to report, not check's: then no guard is judged.
        const columns = columnsOrUndefined(() => toColumns(page.headers, page.dataTypes, job.columns).columns);
        // A tile of one page: its every row, for a guard that judges what a run replaces from them.
        const whole = columns === undefined || job.incremental !== undefined ? undefined : wholeExportOf(job, page, columns);
        const context = { jobName: job.name, tileId: job.tile, runId: 'check', startedAt: new Date(), logger, ...(signal === undefined ? {} : { signal }) };
        for (const sink of await buildSinks(job, workspace.environment, seams.sinkOptions)) {
          const note = await sink.checkAccess?.({ jobName: job.name, logger, ...(signal === undefined ? {} : { signal }) });
          if (note !== undefined) notes.push(note);
          // A windowed job's page 0 is the whole tile, not a window: its guards are judged per window when it runs.
          const guard =
            job.incremental === undefined && columns !== undefined
              ? await guardVerdictOf(sink, { ...context, columns }, page.navigation.totalRows, jobDefinitionOf(definitionSourceOf(job)), whole)
              : undefined;
          if (guard !== undefined) guards.push(guard);
        }
        check = { job: job.name, ok: true, rows: page.navigation.totalRows, columns: page.headers.length, notes, ...(guards.length > 0 ? { guards } : {}) };
      } catch (error) {
        check = { job: job.name, ok: false, code: isTilehouseError(error) ? error.code : 'internal_error', message: messageOf(error) };
      }
      checks.push(check);
      options.onJob(check);
    }
  } finally {
    await dispatcher.close();
  }
  return checks;
}

/** Whether a job's check failed, or found that a publish guard would refuse a run now. */
export function checkFailed(check: AccessCheck): boolean {
  return !check.ok || (check.guards ?? []).some((verdict) => verdict.verdict === 'trip');
}

function columnsOrUndefined<T>(make: () => T): T | undefined {
  try {
    return make();
  } catch {
    return undefined;
  }
}
