import { stat } from 'node:fs/promises';
import path from 'node:path';
import { redactedJson } from '../redaction.js';
import { writeFileAtomically } from '../write-file-atomically.js';
import { createLogger, isLogLevel, LOG_LEVELS, type Logger, type LogLevel } from '../log.js';
import type { OnProgress } from '../pipeline/progress.js';
import { formatTileProgress, type TileProgressState } from '../presentation/progress-text.js';
import { UsageError, type CliIo } from './command.js';
import { StatusScreen } from './status-screen.js';
import { telemetryWanted } from '../telemetry/otel-settings.js';
import { telemetry } from '../telemetry/telemetry.js';

export interface LogFlags {
  'log-level'?: string | undefined;
  quiet?: boolean | undefined;
  verbose?: boolean | undefined;
}

/**
 * The level a command logs at: `--log-level`, else `-v` (debug) or `-q` (error), else
 * $TILEHOUSE_LOG_LEVEL, else the command's default. An unknown level is a usage error that lists
 * the levels (it used to reach pino and end in a stack trace).
 */
export function logLevelOf(command: string, values: LogFlags, env: NodeJS.ProcessEnv, fallback: LogLevel): LogLevel {
  if (values.quiet === true && values.verbose === true) throw UsageError.of(`${command}: --quiet and --verbose contradict each other; give one`);
  const flag = values['log-level'];
  if (flag !== undefined) {
    if (!isLogLevel(flag)) throw UsageError.of(`${command}: --log-level must be one of ${LOG_LEVELS.join(', ')}; got ${JSON.stringify(flag)}`);
    return flag;
  }
  if (values.verbose === true) return 'debug';
  if (values.quiet === true) return 'error';
  const fromEnv = env.TILEHOUSE_LOG_LEVEL;
  if (fromEnv !== undefined && fromEnv !== '') {
    if (!isLogLevel(fromEnv)) throw UsageError.of(`$TILEHOUSE_LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}; got ${JSON.stringify(fromEnv)}`);
    return fromEnv;
  }
  return fallback;
}

/** Whether stderr is a person's terminal: human log lines and a progress line instead of JSON. */
export function isInteractive(io: CliIo): boolean {
  return io.interactive ?? (io.stderr as { isTTY?: boolean }).isTTY === true;
}

export interface CommandOutput {
  logger: Logger;
  level: LogLevel;
  interactive: boolean;
  /** Present on a terminal: permanent lines and live status lines on stderr. */
  screen: StatusScreen | undefined;
  /** Writes human text to stderr (through the screen on a terminal). */
  note(text: string): void;
}

/**
 * A command's logger and stderr. Logs go to stderr (stdout is for what a command is asked to
 * print): JSON lines off a terminal, one human line per event on one, where they scroll above the
 * status lines of the screen.
 */
export function openOutput(command: string, values: LogFlags, io: CliIo, fallback: LogLevel): CommandOutput {
  const level = logLevelOf(command, values, io.env, fallback);
  const interactive = isInteractive(io);
  const stderr = io.stderr as NodeJS.WritableStream & { columns?: number };
  const screen = interactive
    ? new StatusScreen({
        write: (chunk) => stderr.write(chunk),
        get columns() {
          return stderr.columns;
        },
      })
    : undefined;
  const destination = io.logDestination ?? { write: (line: string) => (screen === undefined ? stderr.write(line) : screen.write(line)) };
  // With tracing on, a line written inside a span carries its trace_id and span_id (off: no mixin at all).
  // A fresh object each line: pino merges the line's own fields into what the mixin returns, and a
  // shared (frozen) one ended a probe's retry warning as internal_error (issue 61).
  const mixin = telemetryWanted(io.env) ? () => ({ ...telemetry().logFields() }) : undefined;
  const logger = createLogger({ level, destination, human: interactive, ...(mixin === undefined ? {} : { mixin }) });
  const note = (text: string) => (screen === undefined ? stderr.write(text) : screen.write(text));
  return { logger, level, interactive, screen, note };
}

/**
 * The progress callback of `run` on a terminal: one status line per running tile, gone when the
 * tile ends (its outcome is logged and summarised). Off a terminal or with --quiet: none.
 */
export function progressLines(output: CommandOutput, now: () => number = Date.now): OnProgress | undefined {
  const { screen } = output;
  if (screen === undefined || output.level === 'error' || output.level === 'fatal' || output.level === 'silent') return undefined;
  const states = new Map<string, TileProgressState>();
  const redrawAll = () => {
    for (const state of states.values()) screen.set(state.job, formatTileProgress(state, now()));
  };
  // The rate and ETA change while a slow page is awaited: refresh them once a second too.
  let ticker: NodeJS.Timeout | undefined;
  return (event) => {
    if (event.phase === 'started') {
      states.set(event.job, { job: event.job, startedAt: now() });
      if (ticker === undefined) {
        ticker = setInterval(redrawAll, 1000);
        ticker.unref();
      }
    } else if (event.phase === 'page') {
      const state = states.get(event.job);
      if (state !== undefined) state.last = event;
    } else {
      states.delete(event.job);
      screen.delete(event.job);
      if (states.size === 0 && ticker !== undefined) {
        clearInterval(ticker);
        ticker = undefined;
      }
      return;
    }
    const state = states.get(event.job);
    if (state !== undefined) screen.set(event.job, formatTileProgress(state, now()));
  };
}

/** Where the machine-readable summary goes: `-` is stdout, else a file written atomically. */
export type SummaryTarget = '-' | { file: string } | undefined;

export interface SummaryFlags {
  json?: boolean | undefined;
  'summary-json'?: string | undefined;
}

export const SUMMARY_HELP = `      --json           print the run summary as one JSON object on stdout (same as --summary-json -)
      --summary-json F write the run summary as JSON to file F (atomically), or stdout for "-"
                       (default: $TILEHOUSE_SUMMARY_FILE, else none)`;

/**
 * Reads --json / --summary-json / $TILEHOUSE_SUMMARY_FILE, and checks before anything runs that a
 * summary file can be written where asked: a run that succeeds and then cannot report it is worse
 * than one refused at once.
 */
export async function summaryTargetOf(command: string, values: SummaryFlags, env: NodeJS.ProcessEnv): Promise<SummaryTarget> {
  const flag = values['summary-json'];
  if (values.json === true && flag !== undefined && flag !== '-') {
    throw UsageError.of(`${command}: --json prints the summary on stdout and --summary-json ${JSON.stringify(flag)} writes it to a file; give one`);
  }
  const chosen = values.json === true ? '-' : (flag ?? (env.TILEHOUSE_SUMMARY_FILE || undefined));
  if (chosen === undefined || chosen === '-') return chosen;
  const origin = flag !== undefined ? '--summary-json' : '$TILEHOUSE_SUMMARY_FILE';
  if (chosen === '') throw UsageError.of(`${command}: ${origin} needs a file name, or - for stdout`);
  const directory = path.dirname(path.resolve(chosen));
  const info = await stat(directory).catch(() => undefined);
  if (info === undefined || !info.isDirectory())
    throw UsageError.of(`${command}: ${origin} ${JSON.stringify(chosen)}: the directory ${directory} does not exist`);
  const target = await stat(chosen).catch(() => undefined);
  if (target?.isDirectory() === true) throw UsageError.of(`${command}: ${origin} ${JSON.stringify(chosen)} is a directory; name a file`);
  return { file: chosen };
}

/** Writes the summary: one line on stdout, or a file replaced atomically (temp file, then rename). */
export async function writeSummary(target: SummaryTarget, summary: object, io: CliIo): Promise<void> {
  if (target === undefined) return;
  const text = `${redactedJson(summary)}\n`;
  if (target === '-') {
    io.stdout.write(text);
    return;
  }
  await writeFileAtomically(target.file, text);
}
