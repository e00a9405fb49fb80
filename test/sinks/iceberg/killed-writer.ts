import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import type { KilledWriterRequest } from './killed-writer-child.js';

const CHILD = fileURLToPath(new URL('./killed-writer-child.ts', import.meta.url));

/**
 * Runs killed-writer-child.ts (through tsx) and kills it with SIGKILL once it says it has paused
 * at `request.pause`; fails when it finishes or dies before pausing.
 */
export async function killWriterAt(request: KilledWriterRequest): Promise<void> {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, JSON.stringify(request)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr.on('data', (chunk: Buffer) => {
    err = (err + chunk.toString('utf8')).slice(-4_000);
  });
  const exited = once(child, 'exit');
  const paused = new Promise<boolean>((resolve) => {
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      if (out.includes('paused\n')) resolve(true);
    });
    void exited.then(() => resolve(false));
  });
  if (!(await paused)) throw new Error(`the writer exited before pausing at ${request.pause}:\n${out}\n${err}`);
  child.kill('SIGKILL');
  const [, signal] = (await exited) as [number | null, NodeJS.Signals | null];
  if (signal !== 'SIGKILL') throw new Error(`the writer was not killed (${String(signal)})`);
}
