import { execFileSync } from 'node:child_process';
import { underCi } from './ci.js';

/**
 * A real full disk: mounts a tmpfs of `size` on `directory`. Mounting needs root (CI here runs as
 * root, and there a failed mount throws, failing the test); elsewhere it returns why it could not,
 * so the test can say so instead of passing vacuously. Undefined: mounted (unmount it after).
 */
export function tryMountTinyFs(directory: string, size = '64k'): string | undefined {
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', directory], { stdio: 'pipe' });
    return undefined;
  } catch (error) {
    if (underCi()) throw new Error(`CI=true: a tmpfs must be mountable for the disk-full tests: ${(error as Error).message}`);
    return (error as Error).message;
  }
}
