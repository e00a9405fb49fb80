import { parseArgs, type ParseArgsConfig } from 'node:util';
import type { DestinationStream } from 'pino';
import { messageOf, TilehouseError } from '../errors.js';
import type { RunSeams } from '../workspace/run-context.js';
import { LOG_LEVELS } from '../log.js';

/** Exit codes are part of the interface (README, k8s podFailurePolicy). */
export const EXIT = { ok: 0, tileFailed: 1, usage: 2, partiallyPublished: 3, sigint: 130, sigterm: 143 } as const;

/** What a command may touch of the outside world; tests pass captures and fakes. */
export interface CliIo {
  env: NodeJS.ProcessEnv;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  /** Standard input, for commands that read `-` (default: process.stdin). */
  stdin?: NodeJS.ReadableStream;
  /** Whether stderr is a terminal (progress bars, pretty logs); default: its isTTY. */
  interactive?: boolean;
  /** Where logs go (JSON lines; human lines when `interactive`); default stderr. Tests capture them here. */
  logDestination?: DestinationStream;
  /** Aborted on SIGTERM/SIGINT; commands stop cleanly and leave no partial output. */
  signal?: AbortSignal;
  /**
   * Told the environment's `stopDeadlineMs` once a command has read it: the process exits that
   * long after a stop whatever is still pending (see runAsProcess).
   */
  setStopDeadline?(ms: number): void;
  /**
   * Settles the process's exit code when a command decides it (as its summary is written, which
   * states it): answers `code`, or the signal's code (130, 143) when a stop came first; a stop
   * after that no longer changes it (see runAsProcess). Absent (a test calling main): settleExitCode
   * reads a stop from `signal`'s reason.
   */
  settleExit?(code: number): number;
}

/** The reason `signal` is aborted with when SIGTERM or SIGINT stops the process (runAsProcess). */
export class StopSignal extends Error {
  constructor(readonly signal: 'SIGTERM' | 'SIGINT') {
    super(`stopped by ${signal}`);
    this.name = 'StopSignal';
  }
}

/** 128 + the signal's number, as a shell reports a process a signal ended. */
export function signalExitCode(signal: StopSignal['signal']): number {
  return signal === 'SIGINT' ? EXIT.sigint : EXIT.sigterm;
}

/** The exit code a stop by a signal gives the process, when `io`'s signal was aborted by one. */
export function stopExitCode(io: Pick<CliIo, 'signal'>): number | undefined {
  const reason: unknown = io.signal?.aborted === true ? io.signal.reason : undefined;
  return reason instanceof StopSignal ? signalExitCode(reason.signal) : undefined;
}

/**
 * The exit code a command states in its summary and exits with, settled: `code` (0, 1, 3), or
 * 143 / 130 once SIGTERM / SIGINT stopped the run, whatever the tiles did (a publish already under
 * way when the stop came ends, and the tile succeeds, but the process still exits as stopped).
 * So the summary's `exitCode` is always the process's exit status.
 */
export function settleExitCode(io: CliIo, code: number): number {
  return io.settleExit?.(code) ?? stopExitCode(io) ?? code;
}

/**
 * What the tests and the bench put in place of production defaults (an emulator's BigQuery client,
 * retries in milliseconds). Not the CLI's interface, and not part of its input and output: a
 * process started as `tilehouse` always runs with none.
 */
export type CliSeams = RunSeams;

export interface Command {
  name: string;
  /** The whole `tilehouse <name> --help` text. */
  help: string;
  run(args: string[], io: CliIo, seams: CliSeams): Promise<number>;
}

/** Bad arguments: nothing runs, exit 2. The message says what to change on the command line. */
export class UsageError extends TilehouseError {
  readonly code = 'usage_invalid';

  static of(message: string): UsageError {
    return new UsageError(message);
  }
}

export const COMMON_OPTIONS = {
  config: { type: 'string', short: 'c' },
  jobs: { type: 'string', short: 'j' },
  'log-level': { type: 'string' },
  quiet: { type: 'boolean', short: 'q' },
  verbose: { type: 'boolean', short: 'v' },
  help: { type: 'boolean', short: 'h' },
} satisfies ParseArgsConfig['options'];

export const COMMON_HELP = `  -c, --config FILE    environment config (default: $TILEHOUSE_CONFIG or config/default.yaml)
  -j, --jobs DIR       directory of job YAML files (default: $TILEHOUSE_JOBS or jobs)`;

type Options = NonNullable<ParseArgsConfig['options']>;

/** How the logging flags read in every command's help. */
export function logHelp(defaultLevel: string): string {
  return `      --log-level L    ${LOG_LEVELS.join('|')} (default: ${defaultLevel}, or $TILEHOUSE_LOG_LEVEL)
  -v, --verbose        same as --log-level debug
  -q, --quiet          only errors (and the summary)`;
}

/**
 * Parses a command's flags (the common ones plus `extra`); a mistake is a usage error. A flag that
 * takes one value and is given twice (`--config a --config b`) is refused: taking the last one
 * silently has run the wrong environment before.
 */
export function parseCommandArgs<Extra extends Options = {}>(command: string, args: string[], extra?: Extra, allowPositionals = false) {
  const options = { ...COMMON_OPTIONS, ...(extra as Extra) };
  // `--job NAME` says what it selects (a job, by its name); `--tile NAME`, its older spelling, is
  // kept for the scripts and CronJobs that use it. It is read as `--job`, so every message about
  // the flag (missing value, given twice, no such job) names the spelling the help teaches.
  const spelled =
    'job' in options ? args.map((arg) => (arg === '--tile' ? '--job' : arg.startsWith('--tile=') ? `--job=${arg.slice('--tile='.length)}` : arg)) : args;
  let parsed;
  try {
    parsed = parseArgs({ args: spelled, options, allowPositionals, strict: true, tokens: true });
  } catch (error) {
    throw UsageError.of(`${command}: ${messageOf(error)} (see tilehouse ${command} --help)`);
  }
  const seen = new Map<string, string[]>();
  for (const token of parsed.tokens) {
    if (token.kind !== 'option') continue;
    const option = (options as Options)[token.name];
    if (option === undefined || option.multiple === true || option.type !== 'string') continue;
    seen.set(token.name, [...(seen.get(token.name) ?? []), token.value ?? '']);
  }
  for (const [name, values] of seen) {
    if (values.length > 1)
      throw UsageError.of(`${command}: --${name} is given ${values.length} times (${values.map((value) => JSON.stringify(value)).join(', ')}); give it once`);
  }
  const { tokens: _tokens, ...rest } = parsed;
  return rest;
}
