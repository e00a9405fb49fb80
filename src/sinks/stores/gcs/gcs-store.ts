import type { Storage } from '@google-cloud/storage';
import { parseGcsObjectUrl, splitGcsUrl } from '../../../config/gcs-url.js';
import { gcsDocuments } from './gcs-documents.js';
import type { ObjectStore, StoreOptions } from '../object-store.js';
import { checkBucketWritable } from './check-bucket.js';
import { GcsObjectWriter } from './gcs-object-writer.js';
import { gcsStoredFile } from './gcs-stored-file.js';
import { gcsTableFiles } from './gcs-table-files.js';
import { gcsWindowsHeld } from './gcs-window-state.js';
import { createStorageClient } from './storage-client.js';
import { removeStaleTempObjects, strayTempObjects } from './temp-objects.js';

/** The Cloud Storage store of one sink: its client (the injected one, or one made now) and its write settings. */
export async function gcsStore(options: StoreOptions): Promise<ObjectStore> {
  const storage: Storage = options.storageClient ?? (await createStorageClient(process.env, options.gcsClient));
  return {
    openWriter: ({ retryBudget, ...writer }) =>
      GcsObjectWriter.open({
        ...writer,
        ...(options.stopDeadlineMs !== undefined ? { stopDeadlineMs: options.stopDeadlineMs } : {}),
        storage,
        // The tile run's budget unless the settings bring one: a sick bucket and a sick source draw on one allowance.
        retry: { ...(retryBudget ? { budget: retryBudget } : {}), ...options.gcsWrite },
      }),
    storedFile(location) {
      const { bucket, object } = parseGcsObjectUrl(location);
      return gcsStoredFile(storage.bucket(bucket).file(object));
    },
    sweep: (root, { recursive, logger }) => removeStaleTempObjects(storage, root, { recursive, logger }),
    strays: (root, { recursive, logger }) => strayTempObjects(storage, root, { recursive, logger }),
    checkAccess(root, { jobName, format, logger }) {
      const { bucket, rest } = splitGcsUrl(root)!;
      return checkBucketWritable(storage, bucket, rest, { jobName, format: format.name }, logger);
    },
    heldWindows: (windows, targets, context) => gcsWindowsHeld(storage, windows, targets, context),
    documents: (root) => gcsDocuments(storage, root),
    tableFiles: gcsTableFiles(storage, options.gcsWrite),
  };
}
