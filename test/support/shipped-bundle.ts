import { execFile } from 'node:child_process';
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll } from 'vitest';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { sandboxEnv, writeWorkspace } from './cli-harness.js';
import { detailQuery } from './queries.js';
import { sandboxAndRootForAll, withSandboxAndRoot, type SandboxAndRoot } from './sandbox-fixture.js';

export const runFile = promisify(execFile);
const RECORD_IMPORTS = path.resolve('test/support/record-imports.mjs');

export interface RecordedRun {
  stderr: string;
  /** Every module the run loaded (record-imports.mjs), one URL a line. */
  loaded: string;
  outDir: string;
}

export interface ShippedBundle extends SandboxAndRoot {
  /** The bundle's directory (tilehouse.js and its chunks). */
  readonly dir: string;
  /**
   * `tilehouse run` through the bundle of a one-job workspace (the detail query into `sinks`),
   * recording every module it loads. `env` is the process's environment (default: this one's),
   * the sandbox's credentials added; `configure` edits the environment file first.
   */
  runRecorded(
    name: string,
    sinks: Array<Record<string, unknown>>,
    options?: { env?: NodeJS.ProcessEnv; configure?: (configFile: string) => Promise<void> },
  ): Promise<RecordedRun>;
}

/**
 * The shipped bundle (scripts/bundle.mjs) built once for the enclosing file, inside the repository
 * (so its external packages resolve from node_modules as in the image) under `.tmp/<tag>-<pid>`,
 * with sandboxAndRootForAll; removed after the file.
 */
export function shippedBundleForAll(tag: string): ShippedBundle {
  const fixture = sandboxAndRootForAll({ incidents: 150 });
  const dir = path.resolve('.tmp', `${tag}-${process.pid}`);
  beforeAll(async () => {
    await runFile(process.execPath, ['scripts/bundle.mjs', dir]);
  }, 60_000);
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });
  return withSandboxAndRoot<Omit<ShippedBundle, keyof SandboxAndRoot>>(fixture, {
    dir,
    async runRecorded(name, sinks, options = {}) {
      const job = { name: 'incident_detail', tile: SANDBOX_TILE, query: detailQuery, sinks };
      const workspace = await writeWorkspace(path.join(fixture.root, name), fixture.sandbox, [job], { itemsPerPage: 40 });
      await options.configure?.(workspace.configFile);
      const record = path.join(fixture.root, `${name}.imports`);
      await writeFile(record, '');
      const result = await runFile(
        process.execPath,
        ['--import', RECORD_IMPORTS, path.join(dir, 'tilehouse.js'), 'run', '--config', workspace.configFile, '--jobs', workspace.jobsDir],
        { env: { ...(options.env ?? process.env), ...sandboxEnv(fixture.sandbox), TILEHOUSE_RECORD_IMPORTS: record } },
      );
      return { stderr: result.stderr, loaded: await readFile(record, 'utf8'), outDir: workspace.outDir };
    },
  });
}
