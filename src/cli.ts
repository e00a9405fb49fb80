#!/usr/bin/env node
import packageJson from '../package.json' with { type: 'json' };
import { signalExitCode, StopSignal, UsageError, EXIT, type CliIo, type CliSeams } from './cli/command.js';
import { COMMANDS } from './cli/commands.js';
import { isEntryPoint } from './entry-point.js';
import { isTilehouseError } from './errors.js';
import { sinkKinds } from './sinks/registry.js';
import { OutputStream } from './output-stream.js';
import { DEFAULT_STOP_DEADLINE_MS } from './stop-deadline.js';

export { EXIT, type CliIo, type CliSeams } from './cli/command.js';

function mainHelp(): string {
  const width = Math.max(...COMMANDS.map((command) => command.name.length));
  // Every registered kind, by the name its descriptor gives: a new kind is in the help with its registry line.
  const labels = sinkKinds.map((kind) => kind.label);
  const kinds = labels.length > 1 ? `${labels.slice(0, -1).join(', ')} or ${labels.at(-1)}` : labels.join('');
  return `tilehouse — export incident-report tiles to ${kinds}

Usage: tilehouse <command> [options]

Commands:
${COMMANDS.map((command) => `  ${command.name.padEnd(width)}  ${command.summary}`).join('\n')}

Run "tilehouse <command> --help" for a command's options; "tilehouse --version" for the version.
Logs go to stderr; stdout carries only what a command is asked to print.

Example:
  tilehouse validate --config config/default.yaml && tilehouse check && tilehouse run --json

Exit codes: 0 success, 1 a tile failed, 2 bad config or usage, 3 partially published.
`;
}

/**
 * The version in package.json. The import is resolved at build time: esbuild inlines the JSON into
 * the bundle, so the shipped file needs no package.json beside it.
 */
export const VERSION: string = packageJson.version;

/** Whether the arguments ask for debug output (`--log-level debug|trace`, `-v`), else $TILEHOUSE_LOG_LEVEL. */
function wantsStack(args: readonly string[], env: NodeJS.ProcessEnv): boolean {
  let level = env.TILEHOUSE_LOG_LEVEL ?? 'info';
  for (const [index, arg] of args.entries()) {
    if (arg === '--log-level' && args[index + 1] !== undefined) level = args[index + 1]!;
    else if (arg.startsWith('--log-level=')) level = arg.slice('--log-level='.length);
    else if (arg === '-v' || arg === '--verbose') level = 'debug';
  }
  return level === 'debug' || level === 'trace';
}

/**
 * An error tilehouse did not raise on purpose is a bug: one line that says so, and the stack only
 * when asked for (`--log-level debug` or `trace`), since on call it is noise.
 */
function formatInternalError(error: unknown, withStack: boolean): string {
  const message = (error instanceof Error ? error.message : String(error)).replace(/\s*\n\s*/g, ' ');
  const line = `tilehouse: internal_error: ${message} (a bug in tilehouse; run with --log-level debug for the stack)\n`;
  const stack = error instanceof Error ? error.stack : undefined;
  return withStack && stack !== undefined ? `${line}  ${stack.split('\n').join('\n  ')}\n` : line;
}

/**
 * What a command writes reaches `io` through OutputStreams: scrubbed of every registered secret
 * value (issue 10), and dropped instead of failing the run when the reader went away (issue 9).
 */
function guardedIo(io: CliIo): CliIo {
  const guarded: CliIo = { ...io, stdout: new OutputStream(io.stdout), stderr: new OutputStream(io.stderr) };
  if (io.logDestination !== undefined) guarded.logDestination = new OutputStream(io.logDestination);
  return guarded;
}

/** Parses arguments, runs a command, and maps every outcome onto an exit code. Never throws. */
export async function main(argv: string[], callerIo: CliIo, seams: CliSeams = {}): Promise<number> {
  const io = guardedIo(callerIo);
  const [name, ...args] = argv;
  try {
    if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
      io.stdout.write(mainHelp());
      return name === undefined ? EXIT.usage : EXIT.ok;
    }
    if (name === '--version') {
      io.stdout.write(`tilehouse ${VERSION}\n`);
      return EXIT.ok;
    }
    const entry = COMMANDS.find((candidate) => candidate.name === name);
    if (entry === undefined) throw UsageError.of(`unknown command "${name}"; commands: ${COMMANDS.map((c) => c.name).join(', ')}`);
    const command = await entry.load();
    return await command.run(args, io, seams);
  } catch (error) {
    if (isTilehouseError(error)) {
      io.stderr.write(`tilehouse: ${error.code}:\n  ${error.message.split('\n').join('\n  ')}\n`);
      return error.exitCode;
    }
    io.stderr.write(formatInternalError(error, wantsStack(args, io.env)));
    return EXIT.tileFailed;
  }
}

/**
 * SIGTERM (Kubernetes stopping the pod) and SIGINT (Ctrl-C) abort the run: in-flight requests are
 * cancelled, sinks remove their temp files, nothing partial is published, and the exit code says
 * which signal it was (128 + signal number, as a shell would report), in the run summary too: a
 * command settles its code as it writes its summary (settleExit), and a stop that comes after
 * that changes it no more. A second signal exits at once.
 *
 * The cleanup runs under the environment's `stopDeadlineMs` (DEFAULT_STOP_DEADLINE_MS before a
 * command has read it): the sinks stop waiting shortly before it (stop-deadline.ts) so the summary
 * can say what was left, and when it passes the process exits anyway, because Kubernetes' SIGKILL
 * at the end of the grace period would leave no summary at all. The process exits as soon as the
 * command returns: a request nobody waits for any more (the Cloud client libraries take no
 * signal) must not keep it alive.
 */
export async function runAsProcess(): Promise<void> {
  const controller = new AbortController();
  // Attaches an 'error' handler to process.stderr before anything is written: the signal notice
  // below must not turn an EPIPE (stderr's reader is gone) into an uncaught exception that skips
  // the clean stop.
  const stderr = new OutputStream(process.stderr);
  let received: StopSignal['signal'] | undefined;
  // The code a command's summary stated (settleExit): once there is one, it is the exit code, so the
  // summary and the process agree even when a stop comes after it was written.
  let settled: number | undefined;
  let stopDeadlineMs = DEFAULT_STOP_DEADLINE_MS;
  const exitCodeOf = (signal: StopSignal['signal']) => settled ?? signalExitCode(signal);
  const onSignal = (signal: StopSignal['signal']) => {
    if (received !== undefined) process.exit(exitCodeOf(signal));
    received = signal;
    stderr.write(`tilehouse: ${signal} received; stopping cleanly within ${stopDeadlineMs / 1000} s (send again to exit at once)\n`);
    setTimeout(() => {
      stderr.write(`tilehouse: the cleanup did not finish within ${stopDeadlineMs / 1000} s (stopDeadlineMs); exiting\n`);
      process.exit(exitCodeOf(signal));
    }, stopDeadlineMs).unref();
    controller.abort(new StopSignal(signal));
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  // Logs go to stderr (the default destination of every command's logger), through the same
  // guarded stream as everything else written there, so one handler covers a closed stderr and
  // logs stay in order with the progress line and the summary.
  const io: CliIo = {
    env: process.env,
    stdout: process.stdout,
    stderr: process.stderr,
    signal: controller.signal,
    setStopDeadline: (ms) => {
      stopDeadlineMs = ms;
    },
    settleExit: (code) => {
      settled ??= received === undefined ? code : signalExitCode(received);
      return settled;
    },
  };
  const code = await main(process.argv.slice(2), io);
  // Stopped: exit now (a request nobody waits for must not keep the process alive), with the code
  // the summary stated when there is one (a summary that could not be written: main's), else the signal's.
  if (received !== undefined) process.exit(settled === undefined ? signalExitCode(received) : code);
  process.exitCode = code;
}

// Run from source (through tsx: the tests, a developer), as started; the bundle's entry is src/main.ts.
if (isEntryPoint(import.meta.url)) await runAsProcess();
