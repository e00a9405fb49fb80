import type { LoadedJob } from '../config/load-config.js';
import type { Logger } from '../log.js';
import { planJob, type JobPlan } from '../pipeline/plan-job.js';
import { createSourceDispatcher } from '../pipeline/source-session.js';
import { incrementalPlanOf } from '../pipeline/windows/catch-up.js';
import { jobForRun } from '../pipeline/windows/windowed-job.js';
import { buildSinks } from '../sinks/build-sinks.js';
import { RunToken } from '../source/session-token.js';
import type { RunnableWorkspace } from './load-workspace.js';
import { windowRunContextOf, type RunSeams } from './run-context.js';

/**
 * `plan`: each job's page 0, the columns a run would write and each sink's difference against its
 * target; for an incremental job, first the windows its next run would export (its sinks then plan
 * the first window's target, `{date}` of that window, not a target named after today on this
 * machine). Like a run: one token for all the jobs (issuers may meter each token), unless
 * tokenScope is 'job'. Writes nothing.
 */
export async function planWorkspace(
  workspace: RunnableWorkspace,
  jobs: readonly LoadedJob[],
  options: { logger: Logger; signal?: AbortSignal; seams: RunSeams; fixFlags: readonly string[] },
): Promise<JobPlan[]> {
  const { logger, signal, seams } = options;
  const dispatcher = createSourceDispatcher();
  const runToken = workspace.environment.source.tokenScope === 'run' ? new RunToken() : undefined;
  const plans: JobPlan[] = [];
  try {
    for (const selected of jobs) {
      const job = jobForRun(selected);
      const sinks = await buildSinks(job, workspace.environment, seams.sinkOptions);
      const incremental =
        job.incremental === undefined
          ? undefined
          : await incrementalPlanOf(job, sinks, { ...windowRunContextOf(workspace, logger, signal, seams), fixFlags: options.fixFlags, runToken });
      const firstWindow = incremental?.windows[0];
      const plan = await planJob(job, {
        environment: workspace.environment,
        credentials: workspace.credentials,
        dispatcher,
        logger,
        sinks,
        retry: seams.retry,
        signal,
        runToken,
        ...(firstWindow === undefined ? {} : { window: firstWindow }),
      });
      if (incremental !== undefined && plan.status === 'planned') plan.incremental = incremental;
      plans.push(plan);
    }
  } finally {
    await dispatcher.close();
  }
  return plans;
}
