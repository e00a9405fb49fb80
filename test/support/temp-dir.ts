import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/** A fresh directory under the OS temp directory; the caller removes it. */
export async function makeTempDir(prefix = 'tilehouse-test-'): Promise<string> {
  return mkdtemp(path.join(os.tmpdir(), prefix));
}
