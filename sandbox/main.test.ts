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
});
