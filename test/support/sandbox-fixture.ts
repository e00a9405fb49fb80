import { rm } from 'node:fs/promises';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { startSandbox, type Sandbox, type SandboxOptions } from '../../sandbox/index.js';
import { writeWorkspace, type Workspace } from './cli-harness.js';
import { tempDirForAll } from './temp-dir-hooks.js';
import { makeTempDir } from './temp-dir.js';

export interface SandboxForAll {
  readonly sandbox: Sandbox;
}

/** A sandbox for the enclosing file or describe block: started in beforeAll, closed in afterAll. */
export function sandboxForAll(options: SandboxOptions = {}): SandboxForAll {
  let sandbox: Sandbox | undefined;
  beforeAll(async () => {
    sandbox = await startSandbox(options);
  });
  afterAll(async () => {
    await sandbox?.close();
  });
  return {
    get sandbox() {
      if (sandbox === undefined) throw new Error('the sandbox is started in beforeAll: read it from a hook or a test');
      return sandbox;
    },
  };
}

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
  const started = sandboxForAll(options);
  const root = tempDirForAll();
  return {
    get sandbox() {
      return started.sandbox;
    },
    get root() {
      return root.path;
    },
  };
}

/** `extra`, with the fixture's sandbox and root read through it (lazily, as the fixture's own getters are): a fixture built on sandboxAndRootForAll. */
export function withSandboxAndRoot<T extends object>(fixture: SandboxAndRoot, extra: T): SandboxAndRoot & T {
  return Object.defineProperties(extra, {
    sandbox: { get: () => fixture.sandbox, enumerable: true },
    root: { get: () => fixture.root, enumerable: true },
  }) as SandboxAndRoot & T;
}

export interface SandboxWorkspace extends SandboxAndRoot {
  /** The workspace written into `root` for the jobs given, pointing at the sandbox. */
  readonly workspace: Workspace;
}

/** sandboxAndRootForAll, and a workspace (writeWorkspace) for `jobs` in its root, written once in beforeAll. */
export function sandboxWorkspaceForAll(options: SandboxOptions, jobs: Array<Record<string, unknown>>, source: Record<string, unknown> = {}): SandboxWorkspace {
  const fixture = sandboxAndRootForAll(options);
  let workspace: Workspace | undefined;
  beforeAll(async () => {
    workspace = await writeWorkspace(fixture.root, fixture.sandbox, jobs, source);
  });
  return withSandboxAndRoot(fixture, {
    get workspace() {
      if (workspace === undefined) throw new Error('the workspace is written in beforeAll: read it from a hook or a test');
      return workspace;
    },
  });
}

export interface EachTestResources {
  /** Starts a sandbox, closed after this test. */
  sandbox(options?: SandboxOptions): Promise<Sandbox>;
  /** Makes an empty temp directory, removed after this test. */
  tempDir(): Promise<string>;
  /** Runs `close` after this test (the last registered first), as the two above do. */
  afterThisTest(close: () => Promise<unknown>): void;
}

/**
 * For tests that each need their own sandbox (a clock of their own, a latency) or temp roots:
 * whatever a test starts through these is closed after it, even when it failed, newest first.
 */
export function sandboxesEachTest(): EachTestResources {
  const cleanup: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const close of cleanup.splice(0).reverse()) await close();
  });
  return {
    async sandbox(options = {}) {
      const sandbox = await startSandbox(options);
      cleanup.push(() => sandbox.close());
      return sandbox;
    },
    async tempDir() {
      const root = await makeTempDir();
      cleanup.push(() => rm(root, { recursive: true, force: true }));
      return root;
    },
    afterThisTest(close) {
      cleanup.push(close);
    },
  };
}
