import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Storage } from '@google-cloud/storage';
import { afterAll, beforeAll, describe } from 'vitest';
import { createStorageClient } from '../../src/sinks/gcs/storage-client.js';
import { freePort } from './bigquery-emulator-process.js';
import { stopProcess } from './child-process.js';

/** Where `npm run setup:fake-gcs` installs the pinned build. */
export const PROJECT_LOCAL_FAKE_GCS = fileURLToPath(new URL('../../.tools/bin/fake-gcs-server', import.meta.url));

export interface RunningFakeGcs {
  /** `http://127.0.0.1:PORT`, the value STORAGE_EMULATOR_HOST takes in its conventional form. */
  origin: string;
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

/**
 * The fake-gcs-server binary: $FAKE_GCS_SERVER_BIN, else the project-local install, else PATH;
 * null when absent. Under CI a missing server fails (as the BigQuery emulator does), so the gs://
 * tests can never pass as skipped in a green build.
 */
export function fakeGcsBinaryOrSkip(env: NodeJS.ProcessEnv = process.env, projectLocal: string = PROJECT_LOCAL_FAKE_GCS): string | null {
  const explicit = env.FAKE_GCS_SERVER_BIN;
  if (explicit) {
    if (isExecutable(explicit)) return explicit;
    throw new Error(`FAKE_GCS_SERVER_BIN=${explicit} is not an executable file`);
  }
  const found = [projectLocal, ...(env.PATH ?? '').split(delimiter).filter(Boolean).map((directory) => join(directory, 'fake-gcs-server'))].find(isExecutable);
  if (found !== undefined) return found;
  if (env.CI) throw new Error('CI is set but fake-gcs-server is not installed: run `npm run setup:fake-gcs` (builds .tools/bin/fake-gcs-server).');
  return null;
}

/**
 * Starts fake-gcs-server on 127.0.0.1 with a free port, objects in memory. `-external-url` makes
 * the resumable-upload session URIs it returns point back at it (they are built from it, or from
 * the request's Host header without it).
 */
export async function startFakeGcs(binary: string, options: { readyTimeoutMs?: number } = {}): Promise<RunningFakeGcs> {
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const child = spawn(binary, ['-scheme', 'http', '-backend', 'memory', '-host', '127.0.0.1', '-port', String(port), '-external-url', origin, '-log-level', 'error'], {
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
  return { origin, stop: () => stopProcess(child) };
}

/**
 * A real @google-cloud/storage client for a fake server, built exactly as production builds one
 * from `STORAGE_EMULATOR_HOST=<origin>` (the conventional form): the mapping under test too.
 */
export function fakeGcsClient(origin: string): Promise<Storage> {
  return createStorageClient({ STORAGE_EMULATOR_HOST: origin });
}

/** A bucket name no other test uses. */
export function uniqueBucketName(prefix = 'tilehouse-test'): string {
  return `${prefix}-${randomUUID().slice(0, 12)}`;
}

export interface FakeGcs {
  /** Filled in by beforeAll; read in hooks and tests. */
  origin: string;
  storage: Storage;
  /** Creates a fresh bucket and returns its name. */
  newBucket(prefix?: string): Promise<string>;
}

/**
 * `describe` for tests that need fake-gcs-server: the title says so, the block gets a server of
 * its own (started in beforeAll, stopped in afterAll), and it is skipped, never silently passed,
 * when the server is not installed outside CI.
 */
export function describeWithFakeGcs(title: string, body: (gcs: FakeGcs) => void): void {
  const binary = fakeGcsBinaryOrSkip();
  const fullTitle = `${title} (fake-gcs-server)`;
  if (binary === null) {
    describe.skip(fullTitle, () => undefined);
    return;
  }
  describe(fullTitle, () => {
    let running: RunningFakeGcs | undefined;
    const gcs: FakeGcs = {
      origin: '',
      storage: undefined as unknown as Storage,
      async newBucket(prefix) {
        const name = uniqueBucketName(prefix);
        await gcs.storage.createBucket(name);
        return name;
      },
    };
    beforeAll(async () => {
      running = await startFakeGcs(binary);
      gcs.origin = running.origin;
      gcs.storage = await fakeGcsClient(running.origin);
    });
    afterAll(async () => {
      await running?.stop();
    });
    body(gcs);
  });
}
