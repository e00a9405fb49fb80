import type { S3Client } from '@aws-sdk/client-s3';
import { parseS3ObjectUrl, splitS3Url } from '../../../config/s3-url.js';
import { s3Documents } from './s3-documents.js';
import type { ObjectStore, StoreOptions } from '../object-store.js';
import { checkBucketWritable } from './check-bucket.js';
import { createS3Client } from './s3-client.js';
import { S3ObjectWriter } from './s3-object-writer.js';
import { s3StoredFile } from './s3-stored-file.js';
import { s3TableFiles } from './s3-table-files.js';
import { s3WindowsHeld } from './s3-window-state.js';
import { vendedS3Credentials } from './vended-identity.js';
import { removeStaleTempKeys, strayTempKeys } from './temp-keys.js';

/** The S3 store of one sink: its client (the injected one, or one made now from `sinks.s3`) and its write settings. */
export async function s3Store(options: StoreOptions): Promise<ObjectStore> {
  const client = options.s3Client ?? (await createS3Client(options.s3));
  // A table's files below a prefix its catalog vended credentials for: one client per prefix, signing with them.
  const vendedClients = new Map<string, Promise<S3Client>>();
  const tableClient = (location: string): Promise<S3Client> => {
    const vended = options.vendedCredentials?.(location);
    if (vended === undefined) return Promise.resolve(client);
    let made = vendedClients.get(vended.prefix);
    if (made === undefined) {
      made = createS3Client(options.s3, process.env, vendedS3Credentials(vended));
      vendedClients.set(vended.prefix, made);
    }
    return made;
  };
  return {
    openWriter: ({ retryBudget, ...writer }) =>
      S3ObjectWriter.open({
        ...writer,
        ...(options.stopDeadlineMs !== undefined ? { stopDeadlineMs: options.stopDeadlineMs } : {}),
        client,
        // The tile run's budget unless the settings bring one: a sick bucket and a sick source draw on one allowance.
        retry: {
          ...(retryBudget ? { budget: retryBudget } : {}),
          ...(options.s3?.requestTimeoutMs ? { requestTimeoutMs: options.s3.requestTimeoutMs } : {}),
          ...options.s3Write,
        },
      }),
    storedFile(location) {
      const { bucket, key } = parseS3ObjectUrl(location);
      return s3StoredFile(client, bucket, key);
    },
    sweep: (root, { recursive, logger }) => removeStaleTempKeys(client, root, { recursive, logger }),
    strays: (root, { recursive, logger }) => strayTempKeys(client, root, { recursive, logger }),
    checkAccess(root, { jobName, format, logger }) {
      const { bucket, rest } = splitS3Url(root)!;
      return checkBucketWritable(client, bucket, rest, { jobName, format: format.name }, logger);
    },
    heldWindows: (windows, targets, context) => s3WindowsHeld(client, windows, targets, context),
    documents: (root) => s3Documents(client, root),
    tableFiles: s3TableFiles(tableClient, { s3Write: options.s3Write, requestTimeoutMs: options.s3?.requestTimeoutMs }),
  };
}
