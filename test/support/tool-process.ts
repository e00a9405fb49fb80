import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import { freePort } from './bigquery-emulator-process.js';
import { stopProcess } from './child-process.js';

/** A tool server the tests start on loopback (fake-gcs-server, moto). */
export interface RunningTool {
  /** `http://127.0.0.1:PORT`. */
  origin: string;
  /** The server's process (the benchmark reports its CPU apart from tilehouse's). */
  pid: number;
  stop(): Promise<void>;
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** `$<envVar>` (which must be executable), else the project-local install, else `fileName` on PATH; undefined when absent. */
export function findToolBinary(envVar: string, fileName: string, env: NodeJS.ProcessEnv, projectLocal: string): string | undefined {
  const explicit = env[envVar];
  if (explicit) {
    if (isExecutable(explicit)) return explicit;
    throw new Error(`${envVar}=${explicit} is not an executable file`);
  }
  return [
    projectLocal,
    ...(env.PATH ?? '')
      .split(delimiter)
      .filter(Boolean)
      .map((directory) => join(directory, fileName)),
  ].find(isExecutable);
}

/**
 * Starts `binary` with `args(port, origin)` on a free loopback port and waits until `answers`
 * says it listens (every `pollMs`, at most `readyTimeoutMs`); its last stderr is in the error
 * when it exits early or never answers.
 */
export async function startLoopbackTool(
  name: string,
  binary: string,
  args: (port: number, origin: string) => string[],
  options: { readyTimeoutMs: number; pollMs: number; answers: (origin: string) => Promise<boolean> },
): Promise<RunningTool> {
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const child = spawn(binary, args(port, origin), { stdio: ['ignore', 'ignore', 'pipe'] });
  let tail = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    tail = (tail + chunk.toString('utf8')).slice(-4_000);
  });
  const deadline = Date.now() + options.readyTimeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited early (code ${child.exitCode}):\n${tail}`);
    try {
      if (await options.answers(origin)) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await stopProcess(child);
      throw new Error(`${name} did not answer on ${origin}:\n${tail}`);
    }
    await new Promise((resolve) => setTimeout(resolve, options.pollMs));
  }
  return { origin, pid: child.pid!, stop: () => stopProcess(child) };
}
