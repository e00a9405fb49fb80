import { randomUUID } from 'node:crypto';
import type { Storage } from '@google-cloud/storage';
import { afterAll, beforeAll, describe } from 'vitest';
import { createStorageClient } from '../../src/sinks/stores/gcs/storage-client.js';
import { findFakeGcsBinary, PROJECT_LOCAL_FAKE_GCS, startFakeGcs, type RunningFakeGcs } from './fake-gcs-process.js';
import { startGcsPreconditionProxy, type GcsPreconditionProxy } from './gcs-precondition-proxy.js';
import { describeUnless } from './skip.js';
import { underCi } from './ci.js';

export { PROJECT_LOCAL_FAKE_GCS, startFakeGcs, type RunningFakeGcs };

/**
 * The fake-gcs-server binary, or null when absent. Under CI a missing server fails (as the
 * BigQuery emulator does), so the gs:// tests can never pass as skipped in a green build.
 */
export function fakeGcsBinaryOrSkip(env: NodeJS.ProcessEnv = process.env, projectLocal: string = PROJECT_LOCAL_FAKE_GCS): string | null {
  const found = findFakeGcsBinary(env, projectLocal);
  if (found !== undefined) return found;
  if (underCi(env)) throw new Error('CI is set but fake-gcs-server is not installed: run `npm run setup:fake-gcs` (builds .tools/bin/fake-gcs-server).');
  return null;
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
    describeUnless('fake-gcs-server is not installed (npm run setup:fake-gcs)')(fullTitle, () => undefined);
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

/** The precondition proxy in front of a block's fake server, and a storage client that goes through it. */
export interface ThroughPreconditionProxy {
  /** Filled in by beforeAll. */
  proxy: GcsPreconditionProxy;
  storage: Storage;
}

/**
 * Inside a describeWithFakeGcs block: starts gcs-precondition-proxy.ts in front of its server
 * (beforeAll) and closes it (afterAll), for tests that need Cloud Storage's precondition and IAM
 * answers the fake server does not give.
 */
export function usePreconditionProxy(gcs: FakeGcs): ThroughPreconditionProxy {
  const through = {} as ThroughPreconditionProxy;
  beforeAll(async () => {
    through.proxy = await startGcsPreconditionProxy(gcs.origin);
    through.storage = await fakeGcsClient(through.proxy.origin);
  });
  afterAll(async () => {
    await through.proxy?.close();
  });
  return through;
}
