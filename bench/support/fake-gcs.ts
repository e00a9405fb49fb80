import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findFakeGcsBinary, startFakeGcs, type RunningFakeGcs as RunningServer } from '../../test/support/fake-gcs-process.js';
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

/**
 * fake-gcs-server (the tests' Cloud Storage stand-in), or undefined when it is not installed.
 * Objects go to a temp directory (`-backend filesystem`), not memory: a million-row object and
 * its temp copy held in the server's heap would measure the server, and could exhaust the machine.
 */
export async function startFakeGcsIfInstalled(): Promise<RunningFakeGcs | undefined> {
  // The project-local install, found from the repository root: compiled, this runs from dist/.
  const binary = findFakeGcsBinary(process.env, join(repoRoot(), '.tools/bin/fake-gcs-server'));
  if (binary === undefined) return undefined;
  const storageRoot = await mkdtemp(join(tmpdir(), 'tilehouse-bench-gcs-'));
  let server: RunningServer;
  try {
    server = await startFakeGcs(binary, { filesystemRoot: storageRoot });
  } catch (error) {
    await rm(storageRoot, { recursive: true, force: true });
    throw error;
  }
  const { origin, pid } = server;
  const stop = async () => {
    await server.stop();
    await rm(storageRoot, { recursive: true, force: true });
  };
  const bucket = 'tilehouse-bench';
  const created = await fetch(`${origin}/storage/v1/b?project=bench`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: bucket }),
  });
  if (!created.ok) {
    await stop();
    throw new Error(`fake-gcs-server: creating bucket ${bucket} answered ${created.status}: ${await created.text()}`);
  }
  return { origin, bucket, pid, stop };
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
