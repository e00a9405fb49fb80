// src/workspace/, module by module (ARCHITECTURE.md gives the folder one paragraph):
// a workspace (environment file, job files, credentials) loaded and wired for a run, above the services it
// wires (metrics, deploy) and below the commands: `load-workspace.ts` (the files validated together, the
// selected jobs, credentials), `run-context.ts` (what the windows family takes of a workspace: settings,
// signal, seams, the metrics pusher), `workspace-runner.ts` (the one runner of `run` and `schedule`: sinks
// built once per job, the run ledger and the metrics pusher wired after each tile's publish, ordinary jobs
// through `pipeline/run-jobs.ts`, incremental ones caught up day by day; a scheduled tick of one job),
// `plan-workspace.ts` (what `plan` fetches and asks: page 0, each sink's difference, an incremental job's next
// windows), `check-access.ts` (what `check` tests: a token, page 0, each sink's target, job by job),
// `workspace-checks.ts` (what `validate` decides without the network, `validateWorkspace`: the secrets it
// cannot check here, each job's sinks built, targets written twice, schedules a CronJob cannot take, which is
// why it sits above `deploy/`, page sizes, order; each kind's own checks from the sink registry; `run` refuses
// two jobs on one target with it), `morning-status.ts` (`status`'s job-level answers from the run history,
// `src/history/`: the last run, LATE, old → new since the run that wrote the targets, left behind, the repair
// commands, with the CronJob `deploy/` names), `morning-history.ts` (the history as the source of truth of
// `status`: the run that published each target, a window's target told as its run's window, what changed
// since from that run's record, the failed windows no later run filled with the backfill that fills each),
// `repairs.ts` (the repair that fixes first: an edit the guard
// refused to undo, a tile id the source refuses, each by the job file's line; the override only if meant),
// `left-behind.ts` (what a last run that did not end well left:
// a killed run's record and open lineage runs, and what each sink finds where it writes, with how each goes)

import { ConfigError } from '../config/config-error.js';
import type { EnvironmentConfig } from '../config/environment-schema.js';
import { loadEnvironment, loadJobs, selectJobs, type LoadedJob } from '../config/load-config.js';
import { resolveCredentials, type ClientCredentials } from '../config/secrets.js';
import { refuseUnusableSinkSettings } from './unusable-sink-settings.js';

export interface Workspace {
  environment: EnvironmentConfig;
  configFile: string;
  jobs: LoadedJob[];
  jobsDirectory: string;
}

export interface WorkspacePaths {
  configFile: string;
  jobsDirectory: string;
  /** Whether the environment config was named (--config or $TILEHOUSE_CONFIG) rather than the default. */
  configNamed: boolean;
}

/** Where a workspace's files are: the flags, else the environment, else `config/default.yaml` and `jobs`. */
export function workspacePaths(values: { config?: string | undefined; jobs?: string | undefined }, env: NodeJS.ProcessEnv): WorkspacePaths {
  const named = values.config ?? env.TILEHOUSE_CONFIG;
  return { configFile: named ?? 'config/default.yaml', jobsDirectory: values.jobs ?? env.TILEHOUSE_JOBS ?? 'jobs', configNamed: named !== undefined };
}

/** Loads the environment config and every job; all problems of both are reported together. */
export async function loadWorkspace(values: { config?: string; jobs?: string }, env: NodeJS.ProcessEnv): Promise<Workspace> {
  const { configFile, jobsDirectory } = workspacePaths(values, env);
  const [environment, jobs] = await Promise.allSettled([loadEnvironment(configFile), loadJobs(jobsDirectory)]);
  const problems = [environment, jobs].flatMap((result) =>
    result.status === 'rejected' && result.reason instanceof ConfigError ? result.reason.problems : [],
  );
  if (problems.length > 0) throw new ConfigError(problems);
  if (environment.status === 'rejected') throw environment.reason;
  if (jobs.status === 'rejected') throw jobs.reason;
  return { environment: environment.value, configFile, jobs: jobs.value, jobsDirectory };
}

export interface RunnableWorkspace extends Workspace {
  /** The jobs named with --job (all jobs when none is named). */
  selected: LoadedJob[];
  credentials: ClientCredentials;
}

/** What every command that talks to the source needs: validated files, the chosen jobs, credentials. */
export async function loadRunnableWorkspace(
  values: { config?: string; jobs?: string },
  tiles: readonly string[],
  env: NodeJS.ProcessEnv,
  /** Told the environment's stopDeadlineMs as soon as it is read (the process's stop deadline). */
  io?: { setStopDeadline?(ms: number): void },
): Promise<RunnableWorkspace> {
  const workspace = await loadWorkspace(values, env);
  io?.setStopDeadline?.(workspace.environment.stopDeadlineMs);
  const selected = selectJobs(workspace.jobs, tiles, workspace.jobsDirectory);
  await refuseUnusableSinkSettings(workspace.environment, workspace.configFile, selected);
  const credentials = await resolveCredentials(workspace.environment.source, workspace.configFile, env);
  return { ...workspace, selected, credentials };
}
