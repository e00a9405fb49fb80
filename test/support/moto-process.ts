import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from './bigquery-emulator-process.js';
import { stopProcess } from './child-process.js';

/**
 * The moto server process (an S3-compatible stand-in, `npm run setup:moto`), without vitest: the
 * tests (s3-server.ts) and the benchmark find and start it through this one module.
 */

/** Where `npm run setup:moto` installs the launcher of the pinned moto. */
export const PROJECT_LOCAL_MOTO = fileURLToPath(new URL('../../.tools/bin/moto_server', import.meta.url));

export interface RunningMoto {
  /** `http://127.0.0.1:PORT`: the endpoint (`sinks.s3.endpoint`), path-style. */
  origin: string;
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

/** $MOTO_SERVER_BIN (which must be executable), else the project-local install, else PATH; undefined when absent. */
export function findMotoBinary(env: NodeJS.ProcessEnv = process.env, projectLocal: string = PROJECT_LOCAL_MOTO): string | undefined {
  const explicit = env.MOTO_SERVER_BIN;
  if (explicit) {
    if (isExecutable(explicit)) return explicit;
    throw new Error(`MOTO_SERVER_BIN=${explicit} is not an executable file`);
  }
  return [
    projectLocal,
    ...(env.PATH ?? '')
      .split(delimiter)
      .filter(Boolean)
      .map((directory) => join(directory, 'moto_server')),
  ].find(isExecutable);
}

/** Starts moto's server on 127.0.0.1 with a free port; its objects live in its memory. */
export async function startMoto(binary: string, options: { readyTimeoutMs?: number } = {}): Promise<RunningMoto> {
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const child = spawn(binary, ['-H', '127.0.0.1', '-p', String(port)], { stdio: ['ignore', 'ignore', 'pipe'] });
  let tail = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    tail = (tail + chunk.toString('utf8')).slice(-4_000);
  });
  const deadline = Date.now() + (options.readyTimeoutMs ?? 30_000);
  for (;;) {
    if (child.exitCode !== null) throw new Error(`moto_server exited early (code ${child.exitCode}):\n${tail}`);
    try {
      // Any answer (moto refuses unsigned calls with 403 once it has seen one) means it listens.
      await fetch(`${origin}/moto-api/`, { signal: AbortSignal.timeout(1_000) });
      break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await stopProcess(child);
      throw new Error(`moto_server did not answer on ${origin}:\n${tail}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { origin, pid: child.pid!, stop: () => stopProcess(child) };
}
