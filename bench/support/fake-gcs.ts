import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { freePort } from '../../test/support/bigquery-emulator-process.js';
import { stopProcess } from '../../test/support/child-process.js';
import { repoRoot } from './repo-root.js';

/** Where the gcs scenario writes: a fake-gcs-server process on loopback with one bucket. */
export interface RunningFakeGcs {
  /** `http://127.0.0.1:PORT`: STORAGE_EMULATOR_HOST of the measured tilehouse process. */
  origin: string;
  bucket: string;
  /** The fake server's process (its CPU and memory are not the scenario's). */
  pid: number;
  stop(): Promise<void>;
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * $FAKE_GCS_SERVER_BIN, the project-local install (`npm run setup:fake-gcs`), or PATH: the tests'
 * lookup (test/support/fake-gcs-server.ts), repeated here because that module imports vitest.
 */
function findFakeGcsBinary(): string | undefined {
  const explicit = process.env.FAKE_GCS_SERVER_BIN;
  if (explicit) return explicit;
  const candidates = [join(repoRoot(), '.tools/bin/fake-gcs-server'), ...(process.env.PATH ?? '').split(delimiter).filter(Boolean).map((dir) => join(dir, 'fake-gcs-server'))];
  return candidates.find(executable);
}

/**
 * fake-gcs-server (the tests' Cloud Storage stand-in), or undefined when it is not installed.
 * Objects go to a temp directory (`-backend filesystem`), not memory: a million-row object and
 * its temp copy held in the server's heap would measure the server, and could exhaust the machine.
 */
export async function startFakeGcsIfInstalled(): Promise<RunningFakeGcs | undefined> {
  const binary = findFakeGcsBinary();
  if (binary === undefined) return undefined;
  const storageRoot = await mkdtemp(join(tmpdir(), 'tilehouse-bench-gcs-'));
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const child = spawn(binary, ['-scheme', 'http', '-backend', 'filesystem', '-filesystem-root', storageRoot, '-host', '127.0.0.1', '-port', String(port), '-external-url', origin, '-log-level', 'error'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let tail = '';
  child.stderr?.on('data', (chunk: Buffer) => (tail = (tail + chunk.toString('utf8')).slice(-4_000)));
  const stop = async () => {
    await stopProcess(child);
    await rm(storageRoot, { recursive: true, force: true });
  };
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`fake-gcs-server exited early (code ${child.exitCode}):\n${tail}`);
    try {
      if ((await fetch(`${origin}/storage/v1/b`, { signal: AbortSignal.timeout(1_000) })).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`fake-gcs-server did not answer on ${origin}:\n${tail}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const bucket = 'tilehouse-bench';
  const created = await fetch(`${origin}/storage/v1/b?project=bench`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: bucket }) });
  if (!created.ok) {
    await stop();
    throw new Error(`fake-gcs-server: creating bucket ${bucket} answered ${created.status}: ${await created.text()}`);
  }
  return { origin, bucket, pid: child.pid!, stop };
}

/** The size of an object in bytes, or undefined when it does not exist. */
export async function objectSize(gcs: RunningFakeGcs, object: string): Promise<number | undefined> {
  const answer = await fetch(`${gcs.origin}/storage/v1/b/${gcs.bucket}/o/${encodeURIComponent(object)}`);
  if (answer.status === 404) return undefined;
  if (!answer.ok) throw new Error(`fake-gcs-server: reading ${object} answered ${answer.status}`);
  return Number(((await answer.json()) as { size: string }).size);
}

export async function deleteObject(gcs: RunningFakeGcs, object: string): Promise<void> {
  await fetch(`${gcs.origin}/storage/v1/b/${gcs.bucket}/o/${encodeURIComponent(object)}`, { method: 'DELETE' });
}
