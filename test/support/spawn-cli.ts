import { spawn, type SpawnOptions } from 'node:child_process';
import path from 'node:path';

export const CLI = path.resolve('src/cli.ts');

export interface ChildResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

/**
 * Runs the real CLI (`node --import tsx src/cli.ts ...`) as a child process, killed with SIGKILL
 * after `timeoutMs` so a hung run fails its test instead of the whole suite.
 */
export function spawnCli(args: string[], options: { env: Record<string, string>; timeoutMs: number; spawn?: SpawnOptions }): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], {
      ...options.spawn,
      env: { ...process.env, CI: '', ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, options.timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, timedOut });
    });
  });
}
