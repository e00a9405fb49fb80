#!/usr/bin/env node
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { EXIT, UsageError, type CliIo } from './cli/command.js';
import { COMMANDS } from './cli/commands.js';
import { isTilehouseError } from './errors.js';

export { EXIT, type CliIo } from './cli/command.js';

function mainHelp(): string {
  const width = Math.max(...COMMANDS.map((command) => command.name.length));
  return `tilehouse — export incident-report tiles to CSV or BigQuery

Usage: tilehouse <command> [options]

Commands:
${COMMANDS.map((command) => `  ${command.name.padEnd(width)}  ${command.summary}`).join('\n')}

Run "tilehouse <command> --help" for a command's options.
Exit codes: 0 success, 1 a tile failed, 2 bad config or usage.
`;
}

/** Parses arguments, runs a command, and maps every outcome onto an exit code. Never throws. */
export async function main(argv: string[], io: CliIo): Promise<number> {
  const [name, ...args] = argv;
  try {
    if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
      io.stdout.write(mainHelp());
      return name === undefined ? EXIT.usage : EXIT.ok;
    }
    const entry = COMMANDS.find((candidate) => candidate.name === name);
    if (entry === undefined) throw UsageError.of(`unknown command "${name}"; commands: ${COMMANDS.map((c) => c.name).join(', ')}`);
    const command = await entry.load();
    return await command.run(args, io);
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
    return false;
  }
}

/**
 * SIGTERM (Kubernetes stopping the pod) and SIGINT (Ctrl-C) abort the run: in-flight requests are
 * cancelled, sinks remove their temp files, nothing partial is published, and the exit code says
 * which signal it was (128 + signal number, as a shell would report). A second signal exits at once.
 */
async function runAsProcess(): Promise<void> {
  const controller = new AbortController();
  let received: NodeJS.Signals | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    if (received !== undefined) process.exit(signal === 'SIGINT' ? EXIT.sigint : EXIT.sigterm);
    received = signal;
    process.stderr.write(`tilehouse: ${signal} received; stopping cleanly (send again to exit at once)\n`);
    controller.abort(new Error(`stopped by ${signal}`));
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  const code = await main(process.argv.slice(2), { env: process.env, stdout: process.stdout, stderr: process.stderr, signal: controller.signal });
  process.exitCode = received === 'SIGTERM' ? EXIT.sigterm : received === 'SIGINT' ? EXIT.sigint : code;
}

if (isEntryPoint()) await runAsProcess();
