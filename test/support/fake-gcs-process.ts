import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from './bigquery-emulator-process.js';
import { stopProcess } from './child-process.js';

/**
 * The fake-gcs-server process, without vitest: the tests (fake-gcs-server.ts) and the benchmark
 * (bench/support/fake-gcs.ts) find and start it through this one module.
 */

/** Where `npm run setup:fake-gcs` installs the pinned build. */
export const PROJECT_LOCAL_FAKE_GCS = fileURLToPath(new URL('../../.tools/bin/fake-gcs-server', import.meta.url));

export interface RunningFakeGcs {
  /** `http://127.0.0.1:PORT`, the value STORAGE_EMULATOR_HOST takes in its conventional form. */
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

/** $FAKE_GCS_SERVER_BIN (which must be executable), else the project-local install, else PATH; undefined when absent. */
export function findFakeGcsBinary(env: NodeJS.ProcessEnv = process.env, projectLocal: string = PROJECT_LOCAL_FAKE_GCS): string | undefined {
  const explicit = env.FAKE_GCS_SERVER_BIN;
  if (explicit) {
    if (isExecutable(explicit)) return explicit;
    throw new Error(`FAKE_GCS_SERVER_BIN=${explicit} is not an executable file`);
  }
  return [
    projectLocal,
    ...(env.PATH ?? '')
      .split(delimiter)
      .filter(Boolean)
      .map((directory) => join(directory, 'fake-gcs-server')),
  ].find(isExecutable);
}

/**
 * Starts fake-gcs-server on 127.0.0.1 with a free port: objects in memory, or under
 * `filesystemRoot` (the benchmark: a million-row object held in the server's heap would measure
 * the server). `-external-url` makes the resumable-upload session URIs it returns point back at
 * it (they are built from it, or from the request's Host header without it).
 */
export async function startFakeGcs(binary: string, options: { readyTimeoutMs?: number; filesystemRoot?: string } = {}): Promise<RunningFakeGcs> {
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const backend = options.filesystemRoot === undefined ? ['-backend', 'memory'] : ['-backend', 'filesystem', '-filesystem-root', options.filesystemRoot];
  const child = spawn(binary, ['-scheme', 'http', ...backend, '-host', '127.0.0.1', '-port', String(port), '-external-url', origin, '-log-level', 'error'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let tail = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    tail = (tail + chunk.toString('utf8')).slice(-4_000);
  });
  const deadline = Date.now() + (options.readyTimeoutMs ?? 20_000);
  for (;;) {
    if (child.exitCode !== null) throw new Error(`fake-gcs-server exited early (code ${child.exitCode}):\n${tail}`);
    try {
      if ((await fetch(`${origin}/storage/v1/b`, { signal: AbortSignal.timeout(1_000) })).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await stopProcess(child);
      throw new Error(`fake-gcs-server did not answer on ${origin}:\n${tail}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { origin, pid: child.pid!, stop: () => stopProcess(child) };
}
