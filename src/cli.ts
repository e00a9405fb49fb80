#!/usr/bin/env node
import { realpathSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import type { DestinationStream } from 'pino';
import { ConfigError } from './config/config-error.js';
import type { EnvironmentConfig } from './config/environment-schema.js';
import { loadEnvironment, loadJobs, selectJobs, type LoadedJob } from './config/load-config.js';
import { resolveCredentials } from './config/secrets.js';
import { isTilehouseError, messageOf } from './errors.js';
import { createLogger } from './log.js';
import { buildSinks, type SinkFactoryOptions } from './pipeline/build-sinks.js';
import { formatRunSummary } from './pipeline/format-summary.js';
import { runTiles } from './pipeline/run-tiles.js';
import type { RetrySettings } from './pipeline/run-tile.js';
import type { Sink } from './sinks/sink.js';

/** Exit codes are part of the interface (README, k8s podFailurePolicy). */
export const EXIT = { ok: 0, tileFailed: 1, usage: 2 } as const;

export interface CliIo {
  env: NodeJS.ProcessEnv;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  /** Where JSON logs go; default stdout. Tests capture them here. */
  logDestination?: DestinationStream;
  sinkOptions?: SinkFactoryOptions;
  retry?: RetrySettings;
  signal?: AbortSignal;
}

const COMMON_OPTIONS = {
  config: { type: 'string', short: 'c' },
  jobs: { type: 'string', short: 'j' },
  'log-level': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} satisfies ParseArgsConfig['options'];

const HELP: Record<string, string> = {
  main: `tilehouse — export incident-report tiles to CSV or BigQuery

Usage: tilehouse <command> [options]

Commands:
  run        export every job (or --tile NAME) once; the CronJob entrypoint
  validate   check the environment config and every job file; runs nothing

Run "tilehouse <command> --help" for a command's options.
Exit codes: 0 success, 1 a tile failed, 2 bad config or usage.
`,
  run: `Usage: tilehouse run [--config FILE] [--jobs DIR] [--tile NAME]... [--log-level LEVEL]

Exports each selected tile once: fresh token, every page, typed columns, atomic sink commit.

Options:
  -c, --config FILE    environment config (default: $TILEHOUSE_CONFIG or config/default.yaml)
  -j, --jobs DIR       directory of job YAML files (default: $TILEHOUSE_JOBS or jobs)
  -t, --tile NAME      run only this job (by its name); repeatable
      --log-level L    trace|debug|info|warn|error (default: info)
  -h, --help           show this help

Exit codes: 0 every tile succeeded, 1 at least one tile failed (the others still ran),
2 bad config or usage (nothing ran).
`,
  validate: `Usage: tilehouse validate [--config FILE] [--jobs DIR]

Validates the environment config and every job file against their schemas (schema/*.json),
resolves secret references, and builds each job's sinks. Runs nothing, writes nothing.

Options:
  -c, --config FILE    environment config (default: $TILEHOUSE_CONFIG or config/default.yaml)
  -j, --jobs DIR       directory of job YAML files (default: $TILEHOUSE_JOBS or jobs)
  -h, --help           show this help

Exit codes: 0 valid, 2 invalid (every problem is listed with file, line, field and value).
`,
};

class UsageError extends ConfigError {}

function usage(message: string): UsageError {
  return new UsageError([{ file: 'tilehouse', field: '', message }]);
}

type Options = NonNullable<ParseArgsConfig['options']>;

function parse<Extra extends Options = {}>(command: string, args: string[], extra?: Extra) {
  try {
    const options = { ...COMMON_OPTIONS, ...(extra as Extra) };
    return parseArgs({ args, options, allowPositionals: false, strict: true });
  } catch (error) {
    throw usage(`${command}: ${messageOf(error)} (see tilehouse ${command} --help)`);
  }
}

interface Loaded {
  environment: EnvironmentConfig;
  configFile: string;
  jobs: LoadedJob[];
  jobsDirectory: string;
}

async function loadAll(values: { config?: string; jobs?: string }, env: NodeJS.ProcessEnv): Promise<Loaded> {
  const configFile = values.config ?? env.TILEHOUSE_CONFIG ?? 'config/default.yaml';
  const jobsDirectory = values.jobs ?? env.TILEHOUSE_JOBS ?? 'jobs';
  // Validate both before reporting, so one run of `validate` lists every problem.
  const [environment, jobs] = await Promise.allSettled([loadEnvironment(configFile), loadJobs(jobsDirectory)]);
  const problems = [environment, jobs].flatMap((result) =>
    result.status === 'rejected' && result.reason instanceof ConfigError ? result.reason.problems : [],
  );
  if (problems.length > 0) throw new ConfigError(problems);
  if (environment.status === 'rejected') throw environment.reason;
  if (jobs.status === 'rejected') throw jobs.reason;
  return { environment: environment.value, configFile, jobs: jobs.value, jobsDirectory };
}

async function commandValidate(args: string[], io: CliIo): Promise<number> {
  const { values } = parse('validate', args);
  if (values.help) {
    io.stdout.write(HELP.validate!);
    return EXIT.ok;
  }
  const loaded = await loadAll(values, io.env);
  await resolveCredentials(loaded.environment.source, loaded.configFile, io.env);
  for (const job of loaded.jobs) await buildSinks(job, loaded.environment, io.sinkOptions);
  io.stdout.write(`valid: ${loaded.configFile} and ${loaded.jobs.length} job(s) in ${loaded.jobsDirectory}: ${loaded.jobs.map((job) => job.name).join(', ')}\n`);
  return EXIT.ok;
}

async function commandRun(args: string[], io: CliIo): Promise<number> {
  const { values } = parse('run', args, { tile: { type: 'string', short: 't', multiple: true } });
  if (values.help) {
    io.stdout.write(HELP.run!);
    return EXIT.ok;
  }
  const loaded = await loadAll(values, io.env);
  const jobs = selectJobs(loaded.jobs, values.tile ?? [], loaded.jobsDirectory);
  const credentials = await resolveCredentials(loaded.environment.source, loaded.configFile, io.env);
  const sinksByJob = new Map<string, Sink[]>();
  for (const job of jobs) sinksByJob.set(job.name, await buildSinks(job, loaded.environment, io.sinkOptions));
  const logger = await createLogger({ level: values['log-level'], destination: io.logDestination });
  logger.info({ jobs: jobs.map((job) => job.name), config: loaded.configFile }, 'run starting');
  const summary = await runTiles(jobs, {
    environment: loaded.environment,
    credentials,
    logger,
    buildSinks: (job) => sinksByJob.get(job.name)!,
    retry: io.retry,
    signal: io.signal,
  });
  logger.info({ summary }, 'run finished');
  io.stderr.write(formatRunSummary(summary));
  return summary.failed > 0 ? EXIT.tileFailed : EXIT.ok;
}

const COMMANDS: Record<string, (args: string[], io: CliIo) => Promise<number>> = {
  run: commandRun,
  validate: commandValidate,
};

/** Parses arguments, runs a command, and maps every outcome onto an exit code. Never throws. */
export async function main(argv: string[], io: CliIo): Promise<number> {
  const [command, ...args] = argv;
  try {
    if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
      io.stdout.write(HELP.main!);
      return command === undefined ? EXIT.usage : EXIT.ok;
    }
    const handler = COMMANDS[command];
    if (handler === undefined) throw usage(`unknown command "${command}"; commands: ${Object.keys(COMMANDS).join(', ')}`);
    return await handler(args, io);
  } catch (error) {
    if (isTilehouseError(error)) {
      io.stderr.write(`tilehouse: ${error.code}:\n  ${error.message.split('\n').join('\n  ')}\n`);
      return error.exitCode;
    }
    io.stderr.write(`tilehouse: unexpected error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    return EXIT.tileFailed;
  }
}

function isEntryPoint(): boolean {
  const script = process.argv[1];
  if (script === undefined) return false;
  try {
    return realpathSync(script) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return path.resolve(script) === fileURLToPath(import.meta.url);
  }
}

if (isEntryPoint()) {
  process.exitCode = await main(process.argv.slice(2), { env: process.env, stdout: process.stdout, stderr: process.stderr });
}
