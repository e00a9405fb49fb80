// The file kinds' conformance backends on a local directory: a file's columns read back on their
// own (a CSV's first line; DuckDB's parquet_schema for Parquet), a directory's mode as an ordinary
// user (the CLI spawned as `nobody` when the tests run as root, who may write any directory).
import { createHash } from 'node:crypto';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import type { CliResult } from '../../support/cli-harness.js';
import { spawnCli } from '../../support/spawn-cli.js';
import { openToOthers, UNPRIVILEGED } from '../../support/unprivileged.js';
import { leafSchema } from '../parquet/parquet-test-support.js';
import type { ConformanceBackend } from './scenarios.js';

/** A file's bytes as one text: their SHA-256 and length. */
export async function fileContents(target: string): Promise<string> {
  const bytes = await readFile(target);
  return `${bytes.length} bytes, sha256 ${createHash('sha256').update(bytes).digest('hex')}`;
}

/** `check` and `plan` run as an ordinary user once the output directory is 0555. */
async function withReadOnlyDirectory(workspace: { root: string; outDir: string; configFile: string; jobsDir: string }, env: Record<string, string>) {
  await openToOthers(workspace.outDir, workspace.root);
  // The child's own temp directory (tsx caches there): this machine's /tmp may not be open to others.
  const childTemp = path.join(workspace.root, 'child-tmp');
  await mkdir(childTemp, { recursive: true });
  await chmod(childTemp, 0o777);
  await chmod(workspace.outDir, 0o555);
  try {
    const as = async (command: string): Promise<CliResult> => {
      const child = await spawnCli([command, '--config', workspace.configFile, '--jobs', workspace.jobsDir], {
        env: { ...env, TMPDIR: childTemp },
        timeoutMs: 60_000,
        spawn: UNPRIVILEGED,
      });
      return { exitCode: child.code ?? -1, stdout: child.stdout, stderr: child.stderr, logs: [] };
    };
    return { check: await as('check'), plan: await as('plan') };
  } finally {
    await chmod(workspace.outDir, 0o755);
  }
}

export const localCsv: ConformanceBackend = {
  kind: 'csv',
  name: 'a local directory',
  sink: () => ({ type: 'csv', manifest: true }),
  configure: async () => ({}),
  async storedColumns(target) {
    const header = (await readFile(target, 'utf8')).split(/\r?\n/)[0]!;
    // The suite's headers have no quotes or commas: the first record is the names.
    return header.split(',').map((name) => ({ name }));
  },
  losePermission: withReadOnlyDirectory,
  contents: fileContents,
};

export const localParquet: ConformanceBackend = {
  kind: 'parquet',
  name: 'a local directory',
  sink: () => ({ type: 'parquet', manifest: true }),
  async configure(workspace) {
    const config = parse(await readFile(workspace.configFile, 'utf8')) as { sinks: Record<string, unknown> };
    config.sinks.parquet = { directory: workspace.outDir };
    await writeFile(workspace.configFile, stringify(config));
    return {};
  },
  async storedColumns(target) {
    return [...(await leafSchema(target)).keys()].map((name) => ({ name }));
  },
  losePermission: withReadOnlyDirectory,
  contents: fileContents,
};
