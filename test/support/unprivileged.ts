import { chmod } from 'node:fs/promises';
import path from 'node:path';

const NOBODY = { uid: 65534, gid: 65534 };

/**
 * Spawn options for a child that must meet file permissions as an ordinary user does. Root may
 * write a directory of mode 0555 (CI runs as root), so as root the child runs as `nobody`;
 * otherwise as the test's own user, for whom the mode already holds.
 */
export const UNPRIVILEGED: { uid?: number; gid?: number } = process.getuid?.() === 0 ? NOBODY : {};

/**
 * Opens `directory` and the directories above it up to the temp root for reading and traversal
 * (mkdtemp makes them 0700), so that the unprivileged child can reach the files inside.
 */
export async function openToOthers(directory: string, upTo: string): Promise<void> {
  for (let current = directory; ; current = path.dirname(current)) {
    await chmod(current, 0o755);
    if (current === upTo || path.dirname(current) === current) return;
  }
}
