import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { StoredFile } from '../file-bytes.js';

/** A local file to read a format's columns from; undefined when there is none. */
export async function localStoredFile(path: string): Promise<StoredFile | undefined> {
  let size: number;
  let modified: Date;
  try {
    ({ size, mtime: modified } = await stat(path));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  return {
    location: path,
    size: () => Promise.resolve(size),
    // A fresh stream per read, closed when it ends or is destroyed: the caller holds no handle.
    read: (range) => createReadStream(path, range ?? {}),
    // A local file records no run: only when it was last changed.
    written: () => Promise.resolve({ at: modified.toISOString() }),
  };
}
