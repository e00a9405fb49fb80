import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { postJson } from './test-client.js';

const MAIN = fileURLToPath(new URL('./main.ts', import.meta.url));

describe('sandbox main', () => {
  it('prints its URL first on stdout, serves, and exits 0 on SIGTERM', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', MAIN, '--port', '0', '--incidents', '50', '--latency-ms', '1'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      let stdout = '';
      child.stdout.setEncoding('utf8');
      const url = await new Promise<string>((resolve, reject) => {
        child.stdout.on('data', (chunk: string) => {
          stdout += chunk;
          if (stdout.includes('\n')) resolve(stdout.split('\n')[0]!);
        });
        child.once('exit', (code) => reject(new Error(`main exited early with ${code}`)));
      });
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const token = await postJson(`${url}/oauth/token`, {
        client_id: 'sandbox-client',
        client_secret: 'sandbox-secret',
        audience: '127.0.0.1',
        grant_type: 'client_credentials',
      });
      expect(token.status).toBe(200);
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      const [code] = await exited;
      expect(code).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });

  it('refuses a non-numeric option with exit code 2', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', MAIN, '--incidents', 'many'], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const [code] = await once(child, 'exit');
    expect(code).toBe(2);
    expect(stderr).toContain("--incidents must be a number, got 'many'");
  });

  const runMain = async (args: string[]) => {
    const child = spawn(process.execPath, ['--import', 'tsx', MAIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const [code] = await once(child, 'exit');
    return { code, stdout, stderr };
  };

  it('--help prints the usage on stdout and exits 0', async () => {
    const result = await runMain(['--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Usage: npx tsx sandbox\/main\.ts/);
    expect(result.stdout).toContain('--replay FILE');
    expect(result.stderr).toBe('');
  });

  it('an unknown flag: one line naming it, the usage, exit 2, no stack trace', async () => {
    const result = await runMain(['--bogus']);
    expect(result.code).toBe(2);
    expect(result.stderr.split('\n')[0]).toBe("sandbox: Unknown option '--bogus'");
    expect(result.stderr).toContain('Usage: ');
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });

  it('refuses an unknown --echo mode and a --replay file that is not a recording, exit 2', async () => {
    const echo = await runMain(['--echo', 'sometimes']);
    expect(echo.code).toBe(2);
    expect(echo.stderr.split('\n')[0]).toBe("sandbox: --echo must be one of request, saved-query, absent, got 'sometimes'");
    const replay = await runMain(['--replay', MAIN]);
    expect(replay.code).toBe(2);
    expect(replay.stderr.split('\n')[0]).toMatch(/^sandbox: --replay .*main\.ts: not JSON/);
    expect(replay.stderr).not.toMatch(/\n\s+at /);
  });
});
