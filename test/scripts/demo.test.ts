import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { runCli, refusalCode } from '../support/cli-harness.js';
import { tempDirForAll } from '../support/temp-dir-hooks.js';

/**
 * Issue 25 item 5: `npm run demo -- schedule` printed a usage error ("needs a stop signal") and
 * then hung with the sandbox closed, its cron timers keeping the process alive. The demo now gives
 * the command a stop signal as the `tilehouse` process does, and `schedule` without one refuses
 * before anything is scheduled.
 */

const temp = tempDirForAll();

/** A port nothing listens on now: the demo's sandbox must not meet another demo on 8787. */
async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

describe('tilehouse schedule without a stop signal', () => {
  it('refuses with exit 2 before scheduling anything', async () => {
    // With credentials, so that before the fix it got as far as starting the scheduler.
    const result = await runCli(['schedule', '--config', 'config/default.yaml', '--jobs', 'jobs'], {
      env: { TILEHOUSE_CLIENT_ID: 'id', TILEHOUSE_CLIENT_SECRET: 'secret' },
    });
    expect(result.exitCode).toBe(2);
    expect(refusalCode(result)).toBe('usage_invalid');
    expect(result.stderr).toContain('schedule: needs a stop signal (run it as a process)');
    // Nothing scheduled: no croner timer was left behind to keep a process alive.
    expect(result.logs.filter((line) => String(line.msg).startsWith('scheduled '))).toEqual([]);
  });
});

describe('npm run demo -- schedule', () => {
  it('(tsx scripts/demo.ts schedule) runs the worker against the sandbox and stops on SIGTERM with exit 143, promptly', async () => {
    const port = await freePort();
    const configFile = path.join(temp.path, 'demo.yaml');
    const text = (await readFile('config/default.yaml', 'utf8'))
      .replaceAll('127.0.0.1:8787', `127.0.0.1:${port}`)
      .replace('directory: out', `directory: ${path.join(temp.path, 'out')}`);
    await writeFile(configFile, text);
    // What `npm run demo -- schedule` runs (package.json: tsx scripts/demo.ts), without npm in
    // between: npm re-raises a child's signal on itself, which would hide the demo's exit code.
    const child = spawn(process.execPath, [path.resolve('node_modules/tsx/dist/cli.mjs'), 'scripts/demo.ts', 'schedule'], {
      env: { ...process.env, TILEHOUSE_CONFIG: configFile, CI: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
    try {
      const deadline = Date.now() + 60_000;
      while (!stderr.includes('"msg":"scheduled tag_postmortem_breakdown"')) {
        if (Date.now() > deadline || child.exitCode !== null) throw new Error(`the demo's worker did not start:\n${stderr}`);
        await sleep(100);
      }
      expect(stderr).not.toContain('usage_invalid');
      child.kill('SIGTERM'); // tsx relays it to the demo's node process
      // A worker that does not stop shows as no exit (null) here, not as a slow one. It finishes
      // its running tile first (the demo's are small): seconds, more on a busy machine, so 60 s.
      const [code, signal] = await Promise.race([exited, sleep(60_000).then(() => [null, null] as const)]);
      expect({ code, signal }).toEqual({ code: 143, signal: null });
      expect(stderr).toContain('stopped: every running tile finished');
    } finally {
      if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGKILL');
    }
  }, 150_000);
});
