import { rm } from 'node:fs/promises';
import { afterAll, beforeAll } from 'vitest';
import { startSandbox, type Sandbox, type SandboxOptions } from '../../sandbox/index.js';
import { makeTempDir } from './temp-dir.js';

export interface SandboxAndRoot {
  readonly sandbox: Sandbox;
  /** An empty temp directory, for the tests' workspaces. */
  readonly root: string;
}

/**
 * The set-up most CLI and pipeline tests share: a sandbox and a temp directory for the enclosing
 * file or describe block, started in beforeAll (before the caller's own beforeAll hooks registered
 * after this call) and closed and removed in afterAll, even when one of them failed to start.
 */
export function sandboxAndRootForAll(options: SandboxOptions = {}): SandboxAndRoot {
  let sandbox: Sandbox | undefined;
  let root: string | undefined;
  beforeAll(async () => {
    sandbox = await startSandbox(options);
    root = await makeTempDir();
  });
  afterAll(async () => {
    await sandbox?.close();
    if (root !== undefined) await rm(root, { recursive: true, force: true });
  });
  return {
    get sandbox() {
      if (sandbox === undefined) throw new Error('the sandbox is started in beforeAll: read it from a hook or a test');
      return sandbox;
    },
    get root() {
      if (root === undefined) throw new Error('the temp root is made in beforeAll: read it from a hook or a test');
      return root;
    },
  };
}
