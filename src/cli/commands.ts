import type { Command } from './command.js';

/**
 * Every `tilehouse <command>`, in the order `--help` lists them. A command's module is imported
 * only when it runs: a CronJob pays start-up time on every run, and `run` should not load the
 * code (and dependencies) of `init`, `k8s` or `schedule`.
 */
export interface CommandEntry {
  name: string;
  /** One line for `tilehouse --help`. */
  summary: string;
  load: () => Promise<Command>;
}

export const COMMANDS: readonly CommandEntry[] = [
  { name: 'run', summary: 'export every job (or --job NAME) once; the CronJob entrypoint', load: async () => (await import('./run-command.js')).runCommand },
  {
    name: 'schedule',
    summary: 'run every job on its own cron until SIGTERM (long-running worker)',
    load: async () => (await import('./schedule-command.js')).scheduleCommand,
  },
  {
    name: 'backfill',
    summary: 'export one tile window by window over a date range; each window replaces its own output',
    load: async () => (await import('./backfill-command.js')).backfillCommand,
  },
  {
    name: 'plan',
    summary: "show each tile's columns and how its sinks would change; writes nothing",
    load: async () => (await import('./plan-command.js')).planCommand,
  },
  {
    name: 'status',
    summary: 'show which run wrote each target, when, its rows, and whether the schedule expected a newer one; reads targets only',
    load: async () => (await import('./status-command.js')).statusCommand,
  },
  {
    name: 'probe',
    summary: 'record what the tenant answers for a few pages of a job (shapes, not data); writes no sink',
    load: async () => (await import('./probe-command.js')).probeCommand,
  },
  {
    name: 'check',
    summary: 'test credentials and reachability: a token, then page 0 of each tile; writes nothing',
    load: async () => (await import('./check-command.js')).checkCommand,
  },
  {
    name: 'validate',
    summary: 'check the environment config and every job file; runs nothing',
    load: async () => (await import('./validate-command.js')).validateCommand,
  },
  {
    name: 'init',
    summary: "create jobs/<name>.yaml from a tile's API request copied from the reporting module",
    load: async () => (await import('./init-command.js')).initCommand,
  },
  {
    name: 'k8s',
    summary: 'generate the Kubernetes CronJobs (and kustomize sources) from the job files',
    load: async () => (await import('./k8s-command.js')).k8sCommand,
  },
];
