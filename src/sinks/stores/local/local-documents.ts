import { mkdir, readdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { writeFileAtomically } from '../../../write-file-atomically.js';
import type { StoredDocuments } from '../object-store.js';

const isMissing = (error: unknown) => (error as NodeJS.ErrnoException).code === 'ENOENT';

/** Documents as files below a directory: each replaced whole by the house's one atomic write (temp beside it, renamed). */
export function localDocuments(root: string): StoredDocuments {
  return {
    async put(name, text) {
      const file = path.join(root, name);
      await mkdir(path.dirname(file), { recursive: true });
      await writeFileAtomically(file, text);
    },
    async list(folder) {
      try {
        // A temp file of a write under way starts with a dot: it is not a document yet.
        return (await readdir(path.join(root, folder), { withFileTypes: true }))
          .filter((entry) => entry.isFile() && !entry.name.startsWith('.'))
          .map((entry) => entry.name);
      } catch (error) {
        if (isMissing(error)) return [];
        throw error;
      }
    },
    async get(name) {
      try {
        return await readFile(path.join(root, name), 'utf8');
      } catch (error) {
        if (isMissing(error)) return undefined;
        throw error;
      }
    },
    remove: (name) => rm(path.join(root, name), { force: true }),
  };
}
