import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { access, constants } from 'node:fs/promises';
import { createServer } from 'node:net';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stopProcess } from './child-process.js';

/** Where `npm run setup:emulator` installs the pinned build. */
export const PROJECT_LOCAL_EMULATOR = fileURLToPath(new URL('../../.tools/bin/bigquery-emulator', import.meta.url));
export const EMULATOR_PROJECT_ID = 'test';

export interface RunningEmulator {
  apiEndpoint: string;
  projectId: string;
  binary: string;
  stop(): Promise<void>;
}

/**
 * The emulator binary: $BIGQUERY_EMULATOR_BIN, else the project-local install, else PATH.
 * An explicit $BIGQUERY_EMULATOR_BIN that does not exist is an error, not a reason to look elsewhere.
 */
export async function findEmulatorBinary(env: NodeJS.ProcessEnv = process.env, projectLocal: string = PROJECT_LOCAL_EMULATOR): Promise<string | undefined> {
  const explicit = env.BIGQUERY_EMULATOR_BIN;
  if (explicit) {
    if (await isExecutable(explicit)) return explicit;
    throw new Error(`BIGQUERY_EMULATOR_BIN=${explicit} is not an executable file`);
  }
  if (await isExecutable(projectLocal)) return projectLocal;
  for (const directory of (env.PATH ?? '').split(delimiter).filter(Boolean)) {
    const candidate = join(directory, 'bigquery-emulator');
    if (await isExecutable(candidate)) return candidate;
  }
  return undefined;
}

/**
 * Starts the emulator on loopback with free ports, data in memory, and resolves once its REST API
 * answers. Ports are picked just before the start, so a rare clash with another process is retried.
 */
export async function startEmulator(binary: string, options: { readyTimeoutMs?: number } = {}): Promise<RunningEmulator> {
  let lastError: unknown;
  for (let attempt = 1; attempt <= 3; attempt++) {
    try {
      return await startOnce(binary, options.readyTimeoutMs ?? 30_000);
    } catch (error) {
      lastError = error;
    }
  }
  throw lastError;
}

async function startOnce(binary: string, readyTimeoutMs: number): Promise<RunningEmulator> {
  const [httpPort, grpcPort] = [await freePort(), await freePort()];
  const child = spawn(binary, [`--project=${EMULATOR_PROJECT_ID}`, '--host=127.0.0.1', `--port=${httpPort}`, `--grpc-port=${grpcPort}`, '--log-level=error'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output = captureTail(child);
  const apiEndpoint = `http://127.0.0.1:${httpPort}`;
  try {
    await waitUntilAnswering(child, `${apiEndpoint}/bigquery/v2/projects/${EMULATOR_PROJECT_ID}/datasets`, readyTimeoutMs);
  } catch (error) {
    await stopProcess(child);
    throw new Error(`bigquery-emulator (${binary}) did not start: ${(error as Error).message}\n${output()}`, { cause: error });
  }
  return { apiEndpoint, projectId: EMULATOR_PROJECT_ID, binary, stop: () => stopProcess(child) };
}

async function waitUntilAnswering(child: ChildProcess, url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`exited early (code ${child.exitCode ?? child.signalCode})`);
    }
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(1_000) });
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`no answer from ${url} within ${timeoutMs} ms`);
}

export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  server.close();
  await once(server, 'close');
  if (address === null || typeof address === 'string') throw new Error('could not determine a free port');
  return address.port;
}

/** Keeps the last few KB of the emulator's output for the error message of a failed start. */
function captureTail(child: ChildProcess): () => string {
  let tail = '';
  const keep = (chunk: Buffer) => {
    tail = (tail + chunk.toString('utf8')).slice(-4_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  return () => tail;
}

async function isExecutable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
