/**
 * One Node for the image, CI and the tests: .node-version names it, scripts/install-node.sh
 * installs it for .ci/run, and scripts/check-node-version.mjs (run first by `npm test`) refuses
 * another major under CI=true.
 */
import { spawnSync } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

const runningMajor = Number(process.versions.node.split('.')[0]);
const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

/** Runs a copy of the check beside a .node-version holding `pinned`, as `npm test` runs it. */
async function runCheck(pinned: string, ci: boolean): Promise<{ status: number | null; stderr: string }> {
  const dir = await mkdtemp(path.join(tmpdir(), 'tilehouse-node-version-'));
  dirs.push(dir);
  await mkdir(path.join(dir, 'scripts'));
  await copyFile('scripts/check-node-version.mjs', path.join(dir, 'scripts', 'check-node-version.mjs'));
  await writeFile(path.join(dir, '.node-version'), pinned);
  const env = { ...process.env };
  delete env.CI;
  if (ci) env.CI = 'true';
  const child = spawnSync(process.execPath, [path.join(dir, 'scripts', 'check-node-version.mjs')], { env, encoding: 'utf8' });
  return { status: child.status, stderr: child.stderr };
}

describe('check-node-version', () => {
  it('refuses under CI=true a Node of another major than .node-version, naming both', async () => {
    const result = await runCheck(`${runningMajor + 1}.0.0\n`, true);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain(`Node v${process.versions.node}`);
    expect(result.stderr).toContain(`Node ${runningMajor + 1}.0.0 (.node-version)`);
    expect(result.stderr).toContain('scripts/install-node.sh');
  });

  it('only warns outside CI, so a quick local run still runs', async () => {
    const result = await runCheck(`${runningMajor - 1}.9.9\n`, false);
    expect(result.status).toBe(0);
    expect(result.stderr).toMatch(/^check-node-version: warning: /);
  });

  it('accepts the same major at another minor and patch, silently', async () => {
    const result = await runCheck(`${runningMajor}.999.999\n`, true);
    expect(result).toEqual({ status: 0, stderr: '' });
  });

  it('refuses a .node-version that is not a version, quoting it', async () => {
    const result = await runCheck('lts/krypton\n', true);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('"lts/krypton"');
  });
});

describe('.node-version', () => {
  it('is the Node that engines, @types/node, the installer and CI agree on', async () => {
    const pinned = (await readFile('.node-version', 'utf8')).trim();
    expect(pinned).toMatch(/^\d+\.\d+\.\d+$/);
    const major = pinned.split('.')[0]!;
    const pkg = JSON.parse(await readFile('package.json', 'utf8')) as {
      engines: { node: string };
      devDependencies: Record<string, string>;
      scripts: Record<string, string>;
    };
    expect(pkg.engines.node).toBe(`>=${major}`);
    expect(pkg.devDependencies['@types/node']).toMatch(new RegExp(`^\\^${major}\\.`));
    expect(pkg.scripts.test).toMatch(/^node scripts\/check-node-version\.mjs && /);
    // The installer refuses a version it pins no tarball integrity for.
    expect(await readFile('scripts/install-node.sh', 'utf8')).toMatch(new RegExp(`\\[${pinned.replaceAll('.', '\\.')}\\]='sha512-[A-Za-z0-9+/]+=*'`));
    expect(await readFile('.ci/run', 'utf8')).toMatch(/node_bin="\$\(bash scripts\/install-node\.sh\)"\nexport PATH="\$node_bin:\$PATH"/);
  });
});
