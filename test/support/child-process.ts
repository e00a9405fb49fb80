import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import type { Readable } from 'node:stream';

/** Stops a helper process (emulator, sandbox): SIGTERM, then SIGKILL if it lingers 5 s. */
export async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}

/** The CLI's entry point in the source tree, run through tsx as `node --import tsx CLI_ENTRY …`. */
export const CLI_ENTRY = path.resolve('src/cli.ts');

/** Spawns the real CLI from source (through tsx), as a user's shell would run it. */
export function spawnCli(args: readonly string[], options: SpawnOptions): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', CLI_ENTRY, ...args], options);
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Milliseconds from the call to the exit. */
  elapsedMs: number;
}

/**
 * Waits for `child` to exit, at most `limitMs`: then it (its whole process group, when spawned
 * with `detached: true`) is SIGKILLed and the wait fails. Every child a test starts is bounded so.
 */
export async function exitWithin(child: ChildProcess, limitMs: number): Promise<Exit> {
  const started = Date.now();
  if (child.exitCode !== null || child.signalCode !== null) return { code: child.exitCode, signal: child.signalCode, elapsedMs: 0 };
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    try {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    } catch {
      child.kill('SIGKILL'); // not a group leader
    }
  }, limitMs);
  const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
  clearTimeout(timer);
  if (timedOut) throw new Error(`pid ${child.pid} did not exit within ${limitMs} ms; killed`);
  return { code, signal, elapsedMs: Date.now() - started };
}

/** What a stopped run printed and how it ended. */
export interface StoppedRun {
  exit: Exit;
  stdout: string;
  stderr: string;
}

/**
 * A stop sent at a chosen moment: spawns `tilehouse <args>`, sends SIGTERM once `ready()` holds
 * (looked at every 20 ms, for 60 s at most: a run that ends or never gets there is killed and
 * fails the test, naming `awaited`), and waits at most `exitWithinMs` for it to exit. `beforeStop`
 * runs just before the signal (a proxy that holds every request from then on).
 */
export async function runStoppedWhen(
  args: readonly string[],
  options: { env: NodeJS.ProcessEnv; detached?: boolean; ready: () => boolean; awaited: string; exitWithinMs: number; beforeStop?: () => void },
): Promise<StoppedRun> {
  const child = spawnCli(args, { env: options.env, stdio: ['ignore', 'pipe', 'pipe'], detached: options.detached ?? false });
  const stdout = textOf(child.stdout);
  const stderr = textOf(child.stderr);
  const until = Date.now() + 60_000;
  while (!options.ready()) {
    if (Date.now() > until || child.exitCode !== null) {
      if (child.exitCode === null) await stopProcess(child);
      throw new Error(`${options.awaited} never came before the run ended: ${await stderr}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  options.beforeStop?.();
  child.kill('SIGTERM');
  const exit = await exitWithin(child, options.exitWithinMs);
  return { exit, stdout: await stdout, stderr: await stderr };
}

/** Everything `stream` yields until it ends, as text; read concurrently with the child running. */
export function textOf(stream: Readable | null | undefined): Promise<string> {
  if (!stream) return Promise.resolve('');
  return new Promise((resolve, reject) => {
    let text = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => (text += chunk));
    stream.on('end', () => resolve(text));
    stream.on('close', () => resolve(text));
    stream.on('error', reject);
  });
}

/**
 * A child's stderr split into its JSON log lines (off a terminal every log event is one JSON
 * object on one line) and the other lines, in order; every line is one or the other, and a line
 * that starts with `{` but is not JSON fails the parse (so a broken log line cannot hide).
 */
export function splitStderr(stderr: string): { logs: Array<Record<string, unknown>>; text: string[] } {
  const logs: Array<Record<string, unknown>> = [];
  const text: string[] = [];
  for (const line of stderr.split('\n')) {
    if (line.startsWith('{')) logs.push(JSON.parse(line) as Record<string, unknown>);
    else text.push(line);
  }
  return { logs, text };
}
