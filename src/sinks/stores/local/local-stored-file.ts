import { createReadStream } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import type { StoredFile } from '../file-bytes.js';

/** As a read stream's chunks: big enough that a read costs little more than its copy. */
const SCAN_BUFFER_BYTES = 64 * 1024;

/** A local file to read a format's columns from; undefined when there is none. */
export async function localStoredFile(path: string): Promise<StoredFile | undefined> {
  let size: number;
  let version: string;
  let modified: Date;
  try {
    const stats = await stat(path, { bigint: true });
    size = Number(stats.size);
    version = `${stats.ino}:${stats.size}:${stats.mtimeNs}`;
    modified = new Date(Number(stats.mtimeMs));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  return {
    location: path,
    size: () => Promise.resolve(size),
    version: () => Promise.resolve(version),
    // A fresh stream per read, closed when it ends or is destroyed: the caller holds no handle.
    read: (range) => createReadStream(path, range ?? {}),
    // A local file records no run: only when it was last changed.
    written: () => Promise.resolve({ at: modified.toISOString() }),
    async scan(visit) {
      const handle = await open(path, 'r');
      try {
        const buffer = Buffer.allocUnsafe(SCAN_BUFFER_BYTES);
        for (;;) {
          const { bytesRead } = await handle.read(buffer, 0, buffer.length, null);
          if (bytesRead === 0) return;
          visit(bytesRead === buffer.length ? buffer : buffer.subarray(0, bytesRead));
        }
      } finally {
        await handle.close();
      }
    },
  };
}
