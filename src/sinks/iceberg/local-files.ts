import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { localPathOf } from './table-files.js';

// The table's files were local only here first; they go through the stores' seam now (table-files.ts),
// and these names stay for the modules that import them.
export { childLocation, fileKeyOf, isLocalLocation, localPathOf, readLocation, removeLocation, withTableFileStores, writeNewFile } from './table-files.js';

/** A file under a location, as housekeeping sees it: its local path and when it was last written. */
export interface ListedFile {
  path: string;
  modifiedMs: number;
}

/**
 * Every file under `location` (recursively); none when the folder does not exist. Local tables
 * only: a gs:// or s3:// location throws, and housekeeping looks for orphans in local tables only.
 */
export async function listLocation(location: string): Promise<ListedFile[]> {
  const root = localPathOf(location);
  let entries: string[];
  try {
    entries = await readdir(root, { recursive: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const files: ListedFile[] = [];
  for (const entry of entries) {
    const path = join(root, entry);
    // Gone meanwhile (another writer's cleanup): not there to list.
    const info = await stat(path).catch(() => undefined);
    if (info?.isFile()) files.push({ path, modifiedMs: info.mtimeMs });
  }
  return files;
}
