import { chmod, chown, mkdir, readdir, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SANDBOX_TILE, startSandbox, type Sandbox } from '../../sandbox/index.js';
import { sandboxEnv, writeWorkspace, type Workspace } from '../support/cli-harness.js';
import { readCsv } from '../support/csv-read.js';
import { detailQuery } from '../support/queries.js';
import { spawnCli } from '../support/spawn-cli.js';
import { makeTempDir } from '../support/temp-dir.js';
import { DEAD_PID, startLiveProcess, tagOf, type LiveProcess } from '../support/temp-owners.js';
import { describeUnless } from '../support/skip.js';

// The suite runs as root, for whom no directory is unreadable; the CLI runs here as `nobody`, as the
// non-root image does. The repository and node_modules are world-readable (checked in beforeAll).
const NOBODY = { uid: 65534, gid: 65534 };
const INCIDENTS = 60;
const asRoot = process.getuid?.() === 0;

let sandbox: Sandbox;
let root: string;
let workspace: Workspace;
let home: string;
// A live process of another user (root): signalling it gives the run EPERM, which must mean alive.
let rootProcess: LiveProcess;

const jobs = [
  // A placeholder in a directory part: the sweep walks the whole CSV directory, recursively.
  { name: 'nested', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv', path: '{name}/{date}.csv' }] },
  { name: 'flat', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv', path: '{name}.csv' }] },
];

/** A temp file of a run that died on this host (the sweep should remove it where it can read). */
const deadTemp = (target: string) => `.${target}.tilehouse-20260101T000000Z-abcdef+${tagOf({ pid: DEAD_PID, start: '5' })}.tmp`;

const liveTemp = () => `.flat.csv.tilehouse-20260101T000000Z-abcdef+${rootProcess.tag}.tmp`;

beforeAll(async () => {
  if (!asRoot) return;
  sandbox = await startSandbox({ incidents: INCIDENTS });
  root = await makeTempDir('tilehouse-nonroot-');
  await chmod(root, 0o755);
  home = path.join(root, 'home');
  await mkdir(home);
  await chown(home, NOBODY.uid, NOBODY.gid);
  workspace = await writeWorkspace(root, sandbox, jobs, { itemsPerPage: 20 });
  for (const dir of [workspace.jobsDir, workspace.root]) await chmod(dir, 0o755);
  // The CSV directory belongs to the run's user, and holds directories it cannot read.
  await mkdir(workspace.outDir);
  await chown(workspace.outDir, NOBODY.uid, NOBODY.gid);
  for (const sealed of ['lost+found', 'other-team']) {
    await mkdir(path.join(workspace.outDir, sealed), { mode: 0o700 });
    await chmod(path.join(workspace.outDir, sealed), 0o700);
    // Inside, a temp file the sweep would remove if it could look: it must stay.
    await writeFile(path.join(workspace.outDir, sealed, deadTemp('flat.csv')), 'left over');
  }
  await writeFile(path.join(workspace.outDir, deadTemp('flat.csv')), 'left over');
  rootProcess = await startLiveProcess();
  const weekAgo = new Date(Date.now() - 7 * 24 * 3_600_000);
  await writeFile(path.join(workspace.outDir, liveTemp()), 'being written');
  await utimes(path.join(workspace.outDir, liveTemp()), weekAgo, weekAgo);
  await mkdir(path.join(workspace.outDir, 'nested'));
  await writeFile(path.join(workspace.outDir, 'nested', deadTemp('2026-01-01.csv')), 'left over');
  await chown(path.join(workspace.outDir, 'nested'), NOBODY.uid, NOBODY.gid);
});
afterAll(async () => {
  if (!asRoot) return;
  await rootProcess.stop();
  await sandbox.close();
  await rm(root, { recursive: true, force: true });
});

describeUnless(asRoot ? null : 'only root can give the CSV directory to another user and run tilehouse as that user (CI runs as root)')(
  'tilehouse run as a non-root user, with unreadable directories in the CSV directory',
  () => {
    it('can read the repository as that user (otherwise this test proves nothing)', async () => {
      const result = await spawnCli(['--version'], { env: { HOME: home }, timeoutMs: 30_000, spawn: NOBODY });
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
    });

    it("skips lost+found and the other unreadable directory, sweeps the rest (not a live root process's file), exits 0 and writes both files", async () => {
      const result = await spawnCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir], {
        env: { ...sandboxEnv(sandbox), HOME: home },
        timeoutMs: 45_000,
        spawn: NOBODY,
      });
      expect(result.timedOut).toBe(false);
      expect(result.code, result.stderr).toBe(0);
      expect(result.stderr).toMatch(/2 succeeded, 0 failed/);
      // The sweep did not give up on the first unreadable directory: it went on and removed what it could.
      expect(result.stdout).not.toContain('could not sweep');
      expect(result.stdout).not.toContain('EACCES');

      const date = new Date().toISOString().slice(0, 10);
      expect((await readCsv(path.join(workspace.outDir, 'flat.csv'))).rows).toHaveLength(INCIDENTS);
      expect((await readCsv(path.join(workspace.outDir, 'nested', `${date}.csv`))).rows).toHaveLength(INCIDENTS);
      expect((await readdir(workspace.outDir)).sort()).toEqual([liveTemp(), 'flat.csv', 'lost+found', 'nested', 'other-team'].sort());
      expect(await readdir(path.join(workspace.outDir, 'nested'))).toEqual([`${date}.csv`]);
      for (const sealed of ['lost+found', 'other-team']) expect(await readdir(path.join(workspace.outDir, sealed))).toEqual([deadTemp('flat.csv')]);
    });

    it('fails a job whose target directory the user cannot write with permission_denied, and runs the other', async () => {
      const denied = await writeWorkspace(
        path.join(root, 'denied'),
        sandbox,
        [{ ...jobs[1]!, sinks: [{ type: 'csv', path: 'other-team/{name}.csv' }] }, jobs[0]!],
        {
          itemsPerPage: 20,
        },
      );
      await chmod(denied.root, 0o755);
      await chmod(denied.jobsDir, 0o755);
      await writeFile(denied.configFile, (await readFile(denied.configFile, 'utf8')).replace(denied.outDir, workspace.outDir));
      const result = await spawnCli(['run', '--config', denied.configFile, '--jobs', denied.jobsDir], {
        env: { ...sandboxEnv(sandbox), HOME: home },
        timeoutMs: 45_000,
        spawn: NOBODY,
      });
      expect(result.code, result.stderr).toBe(1);
      expect(result.stderr).toMatch(/^  FAIL flat \(.*\): permission_denied: /m);
      expect(result.stderr).toMatch(/^  ok {3}nested /m);
    });
  },
);
