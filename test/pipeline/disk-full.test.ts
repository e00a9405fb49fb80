import { execFileSync } from 'node:child_process';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SANDBOX_TILE, startSandbox, type Sandbox } from '../../sandbox/index.js';
import { listFiles, runCli, sandboxEnv, writeWorkspace, type Workspace } from '../support/cli-harness.js';
import { detailQuery } from '../support/queries.js';
import { makeTempDir } from '../support/temp-dir.js';

// A real full disk: a 64 KiB tmpfs as the CSV directory. Mounting needs root (CI here runs as
// root); elsewhere the test says why it cannot run instead of passing vacuously.
function tryMountTinyFs(directory: string): string | undefined {
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', directory], { stdio: 'pipe' });
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

let sandbox: Sandbox;
let root: string;
let workspace: Workspace;
let mountFailure: string | undefined;
const PREVIOUS = 'previous run\r\n';

beforeAll(async () => {
  sandbox = await startSandbox({ incidents: 2000 });
  root = await makeTempDir();
  workspace = await writeWorkspace(root, sandbox, [{ name: 'incident_detail', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }] }], { itemsPerPage: 500 });
  await mkdir(workspace.outDir, { recursive: true });
  mountFailure = tryMountTinyFs(workspace.outDir);
});
afterAll(async () => {
  await sandbox.close();
  if (mountFailure === undefined) execFileSync('umount', [workspace.outDir]);
  await rm(root, { recursive: true, force: true });
});

describe('a run onto a full disk', () => {
  it('fails with disk_full naming the path, keeps the previous file and leaves no temp file', async (context) => {
    if (mountFailure !== undefined) context.skip(`cannot mount a tmpfs here: ${mountFailure}`);
    const target = path.join(workspace.outDir, 'incident_detail.csv');
    await writeFile(target, PREVIOUS);

    const result = await runCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir], { env: sandboxEnv(sandbox) });

    expect(result.exitCode).toBe(1);
    const finished = result.logs.find((line) => line.msg === 'run finished') as { summary: { tiles: Array<{ error: { code: string; message: string } }> } };
    expect(finished.summary.tiles[0]!.error.code).toBe('disk_full');
    expect(finished.summary.tiles[0]!.error.message).toContain(target);
    expect(result.stderr).toContain('disk_full');
    expect(await readFile(target, 'utf8')).toBe(PREVIOUS);
    expect(await listFiles(workspace.outDir)).toEqual(['incident_detail.csv']);
  });
});
