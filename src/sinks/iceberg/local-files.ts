import { mkdir, open, readdir, readFile, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The table's files on this machine: a table location is a `file:` URI (the REST server answers
 * `file:/…`, one slash; pyiceberg and Java write `file:///…`), a file's location is the table's
 * plus a relative path, kept in the table's own spelling so every reader resolves it alike.
 * (gs:// and s3:// come through the stores' seam later.)
 */
export function localPathOf(location: string): string {
  if (location.startsWith('/')) return location;
  if (!location.startsWith('file:')) throw new Error(`${location}: only file: table locations are written yet`);
  return fileURLToPath(new URL(location));
}

export function childLocation(location: string, relative: string): string {
  return `${location.replace(/\/+$/, '')}/${relative}`;
}

/** Writes a new file whole and fsyncs it; refuses to replace one (every name is fresh). */
export async function writeNewFile(location: string, pieces: AsyncIterable<Uint8Array> | Iterable<Uint8Array>): Promise<number> {
  const path = localPathOf(location);
  await mkdir(dirname(path), { recursive: true });
  const handle = await open(path, 'wx');
  let size = 0;
  try {
    for await (const piece of pieces) {
      await handle.write(piece);
      size += piece.length;
    }
    await handle.sync();
  } catch (error) {
    await handle.close();
    await rm(path, { force: true });
    throw error;
  }
  await handle.close();
  return size;
}

export function readLocation(location: string): Promise<Buffer> {
  return readFile(localPathOf(location));
}

export async function removeLocation(location: string): Promise<void> {
  await rm(localPathOf(location), { force: true });
}

/** A file under a location, as housekeeping sees it: its local path and when it was last written. */
export interface ListedFile {
  path: string;
  modifiedMs: number;
}

/** Every file under `location` (recursively); none when the folder does not exist. */
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
