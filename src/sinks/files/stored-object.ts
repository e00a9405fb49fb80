import type { File } from '@google-cloud/storage';
import type { StoredFile } from './file-format.js';

/** A Cloud Storage object to read a format's columns from; undefined when there is none. Loaded by gs:// targets only. */
export async function objectStoredFile(file: File): Promise<StoredFile | undefined> {
  if (!(await file.exists())[0]) return undefined;
  return {
    location: `gs://${file.bucket.name}/${file.name}`,
    size: async () => Number((await file.getMetadata())[0].size),
    version: async () => String((await file.getMetadata())[0].generation),
    // validation: false, since a range (or a stream cut short after the header) has no whole-object checksum to compare.
    read: (range) => file.createReadStream({ validation: false, ...(range ?? {}) }),
  };
}
