import { execFile } from 'node:child_process';
import { copyFile, mkdir, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import packageJson from '../../package.json' with { type: 'json' };
import { tempDirForAll } from '../support/temp-dir-hooks.js';

/**
 * Issue 11: right after `npm ci` in a checkout, `npx tilehouse` is the real command. npm resolves
 * it to this package's own bin (bin/tilehouse.js), which runs the bundle when it is built and
 * current, else src/cli.ts through tsx.
 */

const run = promisify(execFile);
const ROOT = path.resolve('.');

describe('npx tilehouse in the checkout', () => {
  it('prints the version: the bin resolves inside the package without a build or a download', async () => {
    // CI=1 and no terminal: were npx to look for a registry package instead, it would refuse, not download.
    const { stdout } = await run('npx', ['--no-install', 'tilehouse', '--version'], { cwd: ROOT, env: { ...process.env, CI: '1' }, timeout: 60_000 });
    expect(stdout).toBe(`tilehouse ${packageJson.version}\n`);
  }, 70_000);

  it('runs a command end to end: validate --help through the bin', async () => {
    const { stdout } = await run(process.execPath, [path.join(ROOT, 'bin', 'tilehouse.js'), 'validate', '--help'], { cwd: ROOT, timeout: 60_000 });
    expect(stdout.split('\n')[0]).toBe('Usage: tilehouse validate [--config FILE] [--jobs DIR] [--strict]');
  }, 70_000);
});

describe('bin/tilehouse.js chooses', () => {
  const fake = tempDirForAll();
  beforeAll(async () => {
    // A package laid out like this one, whose bundle and source each say which one ran.
    await mkdir(path.join(fake.path, 'bin'));
    await mkdir(path.join(fake.path, 'dist', 'bundle'), { recursive: true });
    await mkdir(path.join(fake.path, 'src'));
    await copyFile(path.join(ROOT, 'bin', 'tilehouse.js'), path.join(fake.path, 'bin', 'tilehouse.js'));
    await writeFile(path.join(fake.path, 'package.json'), '{"type":"module"}\n');
    await symlink(path.join(ROOT, 'node_modules'), path.join(fake.path, 'node_modules'));
    await writeFile(path.join(fake.path, 'dist', 'bundle', 'tilehouse.js'), "export async function runAsProcess() { process.stdout.write('bundle\\n'); }\n");
    await writeFile(path.join(fake.path, 'src', 'cli.ts'), "export async function runAsProcess(): Promise<void> { process.stdout.write('source\\n'); }\n");
    // Each side's relaunch under node's flags (src/node-flags.ts), a no-op here.
    await writeFile(path.join(fake.path, 'dist', 'bundle', 'node-flags.js'), 'export function relaunchWithNodeFlags() {}\n');
    await writeFile(path.join(fake.path, 'src', 'node-flags.ts'), 'export function relaunchWithNodeFlags(): void {}\n');
  });

  const which = async () => (await run(process.execPath, [path.join(fake.path, 'bin', 'tilehouse.js')], { timeout: 60_000 })).stdout;
  const age = (file: string, secondsAgo: number) =>
    utimes(path.join(fake.path, file), new Date(Date.now() - secondsAgo * 1000), new Date(Date.now() - secondsAgo * 1000));

  it('the bundle when it is newer than every source file', async () => {
    await age('src/cli.ts', 100);
    await age('src/node-flags.ts', 100);
    await age('package.json', 100);
    await age('dist/bundle/tilehouse.js', 10);
    expect(await which()).toBe('bundle\n');
  });

  it('the source through tsx when a source file changed after the build', async () => {
    await age('dist/bundle/tilehouse.js', 100);
    await age('src/cli.ts', 10);
    expect(await which()).toBe('source\n');
  });

  it('the source when there is no bundle', async () => {
    await rm(path.join(fake.path, 'dist'), { recursive: true });
    expect(await which()).toBe('source\n');
  });
});
