import type { File } from '@google-cloud/storage';
import type { StoredFile } from '../file-bytes.js';

/** A Cloud Storage object to read a format's columns from; undefined when there is none. Loaded by gs:// targets only. */
export async function gcsStoredFile(file: File): Promise<StoredFile | undefined> {
  if (!(await file.exists())[0]) return undefined;
  return {
    location: `gs://${file.bucket.name}/${file.name}`,
    size: async () => Number((await file.getMetadata())[0].size),
    version: async () => String((await file.getMetadata())[0].generation),
    // validation: false, since a range (or a stream cut short after the header) has no whole-object checksum to compare.
    read: (range) => file.createReadStream({ validation: false, ...(range ?? {}) }),
    written: async () => {
      // Loaded here, as window-state.ts loads it: the gs:// plumbing's folder imports this one.
      const [[metadata], { RUN_ID_METADATA_KEY }] = await Promise.all([file.getMetadata(), import('../gcs/temp-objects.js')]);
      const runId = metadata.metadata?.[RUN_ID_METADATA_KEY];
      return { at: String(metadata.updated), ...(typeof runId === 'string' ? { runId } : {}) };
    },
  };
}
