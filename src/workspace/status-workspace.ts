import type { Logger } from '../log.js';
import { jobStatusOf, type JobStatus } from '../pipeline/target-status.js';
import { jobForRun } from '../pipeline/windows/windowed-job.js';
import { buildSinks } from '../sinks/build-sinks.js';
import type { LoadedJob } from '../config/load-config.js';
import type { Workspace } from './load-workspace.js';
import type { RunSeams } from './run-context.js';

/**
 * `status`: for each job, which run wrote each of its targets and whether the schedule expected a
 * newer one, from the targets alone (no credentials, no source request). The jobs' sinks are
 * built as a run builds them; each target is the one the schedule's latest run wrote (a run now's without a schedule).
 */
export async function statusOfWorkspace(
  workspace: Workspace,
  jobs: readonly LoadedJob[],
  options: { logger: Logger; signal?: AbortSignal | undefined; seams: RunSeams },
): Promise<JobStatus[]> {
  const now = (options.seams.now ?? (() => new Date()))();
  const statuses: JobStatus[] = [];
  for (const selected of jobs) {
    const job = jobForRun(selected);
    const sinks = await buildSinks(job, workspace.environment, options.seams.sinkOptions);
    statuses.push(await jobStatusOf(job, sinks, { now, logger: options.logger, signal: options.signal }));
  }
  return statuses;
}
