import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, expect } from 'vitest';
import { ConfigError } from '../../src/config/config-error.js';
import { makeTempDir } from './temp-dir.js';

export interface ConfigFiles {
  /** This test's own empty temp directory. */
  readonly dir: string;
  /** Writes `text` to `name` under `dir` (parent directories made); returns its path. */
  write(name: string, text: string): Promise<string>;
}

/** The config loaders' tests' set-up: a fresh temp directory per test (beforeEach), removed after it (afterEach). */
export function configFilesEachTest(): ConfigFiles {
  let dir: string | undefined;
  beforeEach(async () => {
    dir = await makeTempDir();
  });
  afterEach(async () => {
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
    dir = undefined;
  });
  const current = (): string => {
    if (dir === undefined) throw new Error('the config directory is made in beforeEach: use it from a test');
    return dir;
  };
  return {
    get dir() {
      return current();
    },
    async write(name, text) {
      const file = path.join(current(), name);
      await mkdir(path.dirname(file), { recursive: true });
      await writeFile(file, text);
      return file;
    },
  };
}

/** The ConfigError `load` rejects with; fails the test when it resolves or rejects with anything else. */
export async function configErrorOf(load: Promise<unknown>): Promise<ConfigError> {
  const error = await load.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ConfigError);
  expect(error).toMatchObject({ code: 'config_invalid' });
  return error as ConfigError;
}

/**
 * An environment file that `validate` passes without the network: a loopback source whose
 * credentials are `${TEST_CLIENT_ID}` / `${TEST_CLIENT_SECRET}`, CSV files under `outDir`, then
 * `extra` lines (more sinks' defaults, a `lineage:` section).
 */
export function offlineEnvironmentText(outDir: string, extra: readonly string[] = []): string {
  return [
    'source:',
    '  baseUrl: http://127.0.0.1:9',
    '  authUrl: http://127.0.0.1:9',
    '  clientId: ${TEST_CLIENT_ID}',
    '  clientSecret: ${TEST_CLIENT_SECRET}',
    'sinks:',
    '  csv:',
    `    directory: ${outDir}`,
    ...extra,
    '',
  ].join('\n');
}
