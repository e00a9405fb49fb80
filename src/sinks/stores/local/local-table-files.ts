import { randomUUID } from 'node:crypto';
import { link, mkdir, open, readFile, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { tempPathFor } from '../file-names.js';
import type { TableFiles } from '../object-store.js';

/**
 * A table format's files on this machine: each written to a temp file beside it (the house's temp
 * name, so a killed run's leftovers are swept as a file sink's are), fsynced, and linked into place,
 * which refuses a name already taken; the temp name then goes. Readers never see a part of a file.
 */
export const localTableFiles: TableFiles = {
  async writeNew(path, pieces) {
    await mkdir(dirname(path), { recursive: true });
    const temp = tempPathFor(path, randomUUID());
    const handle = await open(temp, 'wx');
    let size = 0;
    try {
      try {
        for await (const piece of pieces) {
          await handle.write(piece);
          size += piece.length;
        }
        await handle.sync();
      } finally {
        await handle.close();
      }
      await link(temp, path);
    } finally {
      await rm(temp, { force: true });
    }
    return size;
  },
  read: (path) => readFile(path),
  remove: (path) => rm(path, { force: true }),
};
