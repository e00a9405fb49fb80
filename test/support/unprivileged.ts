import { chmod } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

const NOBODY = { uid: 65534, gid: 65534 };

/**
 * Spawn options for a child that must meet file permissions as an ordinary user does. Root may
 * write a directory of mode 0555 (CI runs as root), so as root the child runs as `nobody`;
 * otherwise as the test's own user, for whom the mode already holds.
 */
export const UNPRIVILEGED: { uid?: number; gid?: number } = process.getuid?.() === 0 ? NOBODY : {};

/**
 * Opens `directory` and the directories above it up to `upTo` (the test's own mkdtemp directory)
 * for reading and traversal (mkdtemp makes them 0700), so that the unprivileged child can reach
 * the files inside. Never the machine's temp root or anything above it: chmod 0755 there takes
 * /tmp's sticky, world-writable mode away from every other user of the machine (a conformance test
 * once did, and six later tests' `nobody` children failed EACCES on /tmp).
 */
export async function openToOthers(directory: string, upTo: string): Promise<void> {
  const tempRoot = path.resolve(os.tmpdir());
  const stop = path.resolve(upTo);
  if (!stop.startsWith(`${tempRoot}${path.sep}`)) throw new Error(`openToOthers: ${upTo} is not a directory below ${tempRoot}`);
  for (let current = path.resolve(directory); ; current = path.dirname(current)) {
    if (current === tempRoot || path.dirname(current) === current) throw new Error(`openToOthers: ${directory} is not below ${upTo}`);
    await chmod(current, 0o755);
    if (current === stop) return;
  }
}
