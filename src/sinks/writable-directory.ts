import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import path from 'node:path';

/** Why files cannot be written below a directory, and the errno that says so (ENOTDIR: a file is in the way). */
export interface Unwritable {
  reason: string;
  errno: string;
}

/**
 * Why files cannot be written below `directory` (which need not exist yet: the CSV sink creates
 * it), or undefined. Walks up to the deepest part that exists: it must be a writable directory.
 */
export async function unwritableDirectory(directory: string): Promise<Unwritable | undefined> {
  let current = path.resolve(directory);
  for (;;) {
    const info = await stat(current).catch((error: NodeJS.ErrnoException) => error);
    if (!(info instanceof Error)) {
      if (!info.isDirectory()) {
        return {
          errno: 'ENOTDIR',
          reason: current === path.resolve(directory) ? `${current} is a file, not a directory` : `${current} is a file, so ${directory} cannot be created`,
        };
      }
      try {
        await access(current, constants.W_OK);
        return undefined;
      } catch (error) {
        const errno = (error as NodeJS.ErrnoException).code ?? 'EACCES';
        return { errno, reason: `${current} is not writable (${errno})` };
      }
    }
    // A path below a regular file: stat says ENOTDIR; walk up to name the file itself.
    if (info.code !== 'ENOENT' && info.code !== 'ENOTDIR') return { errno: info.code ?? 'EIO', reason: `${current} cannot be read (${info.code})` };
    const parent = path.dirname(current);
    if (parent === current) return undefined;
    current = parent;
  }
}

/** unwritableDirectory's reason alone, for `tilehouse validate`'s problem lines. */
export async function unwritableReason(directory: string): Promise<string | undefined> {
  return (await unwritableDirectory(directory))?.reason;
}
