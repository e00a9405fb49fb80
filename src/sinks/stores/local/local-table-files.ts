import { randomUUID } from 'node:crypto';
import { link, mkdir, open, readdir, readFile, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { tempPathFor } from '../file-names.js';
import type { ListedTableFile, TableFiles } from '../object-store.js';

/**
 * A table format's files on this machine: each written to a temp file beside it (the house's temp
 * name, so a killed run's leftovers are swept as a file sink's are), fsynced, and linked into place,
 * which refuses a name already taken; the temp name then goes. Readers never see a part of a file.
 * A killed writer's temp file is a file like any other: listed, so housekeeping sees it.
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
  list: listFiles,
  // An unfinished write is a temp file, which `list` shows.
  abortUnfinished: async () => [],
};

async function listFiles(root: string): Promise<ListedTableFile[]> {
  let entries: string[];
  try {
    entries = await readdir(root, { recursive: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const files: ListedTableFile[] = [];
  for (const entry of entries) {
    const location = join(root, entry);
    // Gone meanwhile (another writer's cleanup): not there to list.
    const info = await stat(location).catch(() => undefined);
    if (info?.isFile()) files.push({ location, modifiedMs: info.mtimeMs });
  }
  return files;
}
