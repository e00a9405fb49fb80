import { rm } from 'node:fs/promises';
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import { makeTempDir } from './temp-dir.js';

/** A temp directory registered with vitest's hooks; `path` is the current one. */
export interface TempDirectory {
  readonly path: string;
}

function tempDirectory(make: (hook: () => Promise<void>) => void, remove: (hook: () => Promise<void>) => void, prefix: string): TempDirectory {
  let current: string | undefined;
  make(async () => {
    current = await makeTempDir(prefix);
  });
  remove(async () => {
    if (current !== undefined) await rm(current, { recursive: true, force: true });
    current = undefined;
  });
  return {
    get path() {
      if (current === undefined) throw new Error('the temp directory is made in a before hook: read it from a test');
      return current;
    },
  };
}

/** A fresh temp directory for each test: made in beforeEach, removed in afterEach. */
export function tempDirEachTest(prefix = 'tilehouse-test-'): TempDirectory {
  return tempDirectory(beforeEach, afterEach, prefix);
}

/** One temp directory for the enclosing file or describe block: made in beforeAll, removed in afterAll. */
export function tempDirForAll(prefix = 'tilehouse-test-'): TempDirectory {
  return tempDirectory(beforeAll, afterAll, prefix);
}
