import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { cp, mkdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NODE_ARGS, NODE_OPTIONS, RELAUNCHED_ENV, relaunchFor } from '../src/node-flags.js';
import { sandboxEnv } from './support/cli-harness.js';
import { exitWithin, textOf } from './support/child-process.js';
import { detailCsvJob } from './support/queries.js';
import { sandboxWorkspaceForAll } from './support/sandbox-fixture.js';
import { itUnless, NO_PROC } from './support/skip.js';

const base = { execPath: '/usr/bin/node', execArgv: [] as string[], argv: ['/usr/bin/node', '/app/tilehouse.js', 'run', '--jobs', 'j'] };
/** What bin/tilehouse.js's `#!` line passes node: the node arguments, then NODE_OPTIONS' flags. */
const SHEBANG_FLAGS = [...NODE_ARGS, ...NODE_OPTIONS.split(' ')];

describe('relaunchFor', () => {
  it("adds the flags a process runs without: node arguments before the script, NODE_OPTIONS after the user's own", () => {
    const relaunch = relaunchFor({ ...base, execArgv: ['--import', 'x.js'], env: { PATH: '/bin', NODE_OPTIONS: '--trace-warnings' } });
    expect(relaunch?.argv).toEqual(['/usr/bin/node', '--import', 'x.js', ...NODE_ARGS, '/app/tilehouse.js', 'run', '--jobs', 'j']);
    expect(relaunch?.env).toEqual({ PATH: '/bin', NODE_OPTIONS: `--trace-warnings ${NODE_OPTIONS}`, [RELAUNCHED_ENV]: '1' });
  });

  it('leaves a process alone that runs with every flag, or was relaunched once', () => {
    expect(relaunchFor({ ...base, execArgv: [...NODE_ARGS], env: { NODE_OPTIONS } })).toBeUndefined();
    expect(relaunchFor({ ...base, env: { [RELAUNCHED_ENV]: '1' } })).toBeUndefined();
  });

  it("leaves alone a process bin/tilehouse.js's #! line started with every flag", () => {
    expect(relaunchFor({ ...base, execArgv: [...SHEBANG_FLAGS], env: { PATH: '/bin' } })).toBeUndefined();
  });

  it("relaunches without the #! line's value of a flag the user's NODE_OPTIONS gives another, so the user's wins", () => {
    const relaunch = relaunchFor({ ...base, execArgv: [...SHEBANG_FLAGS], env: { NODE_OPTIONS: '--max_semi_space_size=16' } });
    expect(relaunch?.argv).toEqual(['/usr/bin/node', ...NODE_ARGS, '--max-old-space-size=2048', '/app/tilehouse.js', 'run', '--jobs', 'j']);
    expect(relaunch?.env).toEqual({ NODE_OPTIONS: '--max_semi_space_size=16', [RELAUNCHED_ENV]: '1' });
    // The same value is no override: nothing to do.
    expect(relaunchFor({ ...base, execArgv: [...SHEBANG_FLAGS], env: { NODE_OPTIONS: '--max-semi-space-size=8' } })).toBeUndefined();
  });

  it("bin/tilehouse.js's #! line gives node exactly these flags", async () => {
    const [line] = (await readFile('bin/tilehouse.js', 'utf8')).split('\n');
    expect(line).toBe(`#!/usr/bin/env -S node ${SHEBANG_FLAGS.join(' ')}`);
  });

  it('keeps a value the user gave for one of the flags (by name, either spelling)', () => {
    const relaunch = relaunchFor({ ...base, execArgv: [...NODE_ARGS], env: { NODE_OPTIONS: '--max_semi_space_size=16' } });
    expect(relaunch?.env.NODE_OPTIONS).toBe('--max_semi_space_size=16 --max-old-space-size=2048');
    expect(relaunchFor({ ...base, execArgv: ['--max-old-space-size=512'], env: { NODE_OPTIONS: '--max-semi-space-size=4' } })?.env.NODE_OPTIONS).toBe(
      '--max-semi-space-size=4',
    );
  });
});

/**
 * The relaunch as a user meets it: the shipped bundle and bin/tilehouse.js of an installed package
 * (no src/), started by plain `node` without any flag, over real pipes.
 */
const run = promisify(execFile);
// Inside the repository, so the bundle's external packages resolve from node_modules.
const PACKAGE = path.resolve('.tmp', `node-flags-test-${process.pid}`);
const BIN = path.join(PACKAGE, 'bin', 'tilehouse.js');
const BUNDLE = path.join(PACKAGE, 'dist', 'bundle', 'tilehouse.js');
/** An environment without any of the flags, as a laptop's shell has. */
const plainEnv = () => {
  const env: NodeJS.ProcessEnv = { ...process.env, CI: '' };
  delete env.NODE_OPTIONS;
  delete env[RELAUNCHED_ENV];
  return env;
};

// 30 pages at 60 ms each, one at a time: long enough to look at the process and stop it mid-run.
const fixture = sandboxWorkspaceForAll({ incidents: 600, latencyMs: 60 }, [detailCsvJob], { itemsPerPage: 20, concurrency: 1 });

beforeAll(async () => {
  await rm(PACKAGE, { recursive: true, force: true });
  await mkdir(PACKAGE, { recursive: true });
  await run(process.execPath, ['scripts/bundle.mjs', path.join(PACKAGE, 'dist', 'bundle')]);
  await cp(path.resolve('bin'), path.join(PACKAGE, 'bin'), { recursive: true });
  await writeFile(path.join(PACKAGE, 'package.json'), '{"type":"module"}\n');
  await symlink(path.resolve('node_modules'), path.join(PACKAGE, 'node_modules'));
}, 60_000);
afterAll(async () => {
  await rm(PACKAGE, { recursive: true, force: true });
});

async function untilExporting(child: ChildProcess, before: number): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (fixture.sandbox.requests.slice(before).filter((request) => request.endpoint === 'export').length < 3) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error('the run never got going');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function procOf(pid: number): Promise<{ argv: string[]; env: Record<string, string> }> {
  const argv = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0').filter((word) => word !== '');
  const env = Object.fromEntries(
    (await readFile(`/proc/${pid}/environ`, 'utf8'))
      .split('\0')
      .filter((entry) => entry.includes('='))
      .map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]),
  );
  return { argv, env };
}

describe.each([
  ['bin/tilehouse.js of an installed package', () => BIN],
  ['the bundle started by hand', () => BUNDLE],
])('%s, started without node flags', (_name, entry) => {
  itUnless(NO_PROC)(
    "runs under the image's flags in the same process, and SIGTERM still stops it with 143",
    async () => {
      const before = fixture.sandbox.requests.length;
      const child = spawn(process.execPath, [entry(), 'run', '--config', fixture.workspace.configFile, '--jobs', fixture.workspace.jobsDir], {
        env: { ...plainEnv(), ...sandboxEnv(fixture.sandbox) },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const stderr = textOf(child.stderr);
      const stdout = textOf(child.stdout);
      const exited = exitWithin(child, 30_000);
      await untilExporting(child, before);
      // The spawned pid itself runs the relaunched image: nothing in between to pass signals on.
      const { argv, env } = await procOf(child.pid!);
      expect(argv.slice(1, 1 + NODE_ARGS.length)).toEqual([...NODE_ARGS]);
      expect(env.NODE_OPTIONS).toBe(NODE_OPTIONS);
      expect(env[RELAUNCHED_ENV]).toBe('1');
      child.kill('SIGTERM');
      expect((await exited).code).toBe(143);
      expect(await stderr).toContain('SIGTERM received; stopping cleanly');
      expect(await stdout).toBe('');
    },
    40_000,
  );

  it('passes standard input, output and the exit code through', async () => {
    const version = await run(process.execPath, [entry(), '--version'], { env: plainEnv() });
    expect(version.stdout).toMatch(/^tilehouse \d+\.\d+\.\d+\n$/);
    const child = spawn(
      process.execPath,
      [entry(), 'init', '--from-request', '-', '--jobs', path.join(fixture.root, 'init-jobs'), '--config', fixture.workspace.configFile],
      {
        env: plainEnv(),
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    const stderr = textOf(child.stderr);
    child.stdin!.end('not a request at all\n');
    const { code } = await exitWithin(child, 30_000);
    // What init says of the text it read from stdin: it arrived.
    expect({ code, stderr: await stderr }).toMatchObject({ code: 2, stderr: expect.stringContaining('stdin') });
  }, 40_000);

  it('survives a reader that closed stdout before anything was written', async () => {
    const child = spawn(process.execPath, [entry(), '--help'], { env: plainEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.destroy();
    const stderr = textOf(child.stderr);
    const { code, signal } = await exitWithin(child, 30_000);
    expect({ code, signal, stderr: await stderr }).toEqual({ code: 0, signal: null, stderr: '' });
  }, 40_000);

  itUnless(NO_PROC)(
    `runs as started when ${RELAUNCHED_ENV} is set`,
    async () => {
      const before = fixture.sandbox.requests.length;
      const child = spawn(process.execPath, [entry(), 'run', '--config', fixture.workspace.configFile, '--jobs', fixture.workspace.jobsDir], {
        env: { ...plainEnv(), ...sandboxEnv(fixture.sandbox), [RELAUNCHED_ENV]: 'no' },
        stdio: ['ignore', 'ignore', 'ignore'],
      });
      const exited = exitWithin(child, 30_000);
      await untilExporting(child, before);
      const { argv, env } = await procOf(child.pid!);
      expect(argv.slice(1, 2)).toEqual([entry()]);
      expect(env.NODE_OPTIONS).toBeUndefined();
      child.kill('SIGTERM');
      expect((await exited).code).toBe(143);
    },
    40_000,
  );
});

describe('bin/tilehouse.js of an installed package, started as a command', () => {
  itUnless(NO_PROC)(
    "started as a command (its #! line), runs under the image's flags in one start, never relaunched",
    async () => {
      const before = fixture.sandbox.requests.length;
      const env = { ...plainEnv(), ...sandboxEnv(fixture.sandbox), PATH: `${path.dirname(process.execPath)}:${process.env.PATH ?? ''}` };
      const child = spawn(BIN, ['run', '--config', fixture.workspace.configFile, '--jobs', fixture.workspace.jobsDir], {
        env,
        stdio: ['ignore', 'ignore', 'ignore'],
      });
      const exited = exitWithin(child, 30_000);
      await untilExporting(child, before);
      const { argv, env: seen } = await procOf(child.pid!);
      expect(argv.slice(1, 1 + SHEBANG_FLAGS.length)).toEqual(SHEBANG_FLAGS);
      expect(seen[RELAUNCHED_ENV]).toBeUndefined();
      expect(seen.NODE_OPTIONS).toBeUndefined();
      child.kill('SIGTERM');
      expect((await exited).code).toBe(143);
    },
    40_000,
  );
});
