import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach } from 'vitest';

/** A fresh directory per test, removed afterwards. */
export function useTempDir(prefix = 'tilehouse-test-'): () => string {
  let current: string | undefined;
  const created: string[] = [];
  afterEach(async () => {
    await Promise.all(created.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
    current = undefined;
  });
  return () => {
    if (current === undefined) throw new Error('call make() first');
    return current;
  };
}

export async function makeTempDir(prefix = 'tilehouse-test-'): Promise<string> {
  return mkdtemp(path.join(os.tmpdir(), prefix));
}
