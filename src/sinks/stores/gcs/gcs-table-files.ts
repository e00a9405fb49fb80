import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Storage } from '@google-cloud/storage';
import { parseGcsObjectUrl, splitGcsUrl } from '../../../config/gcs-url.js';
import { createLogger } from '../../../log.js';
import type { ListedTableFile, TableFiles } from '../object-store.js';
import { gcsFailure, statusOf } from './gcs-errors.js';
import { GcsHttp } from './gcs-http.js';
import type { GcsWriteSettings } from './object-publish.js';
import { ResumableUpload } from './resumable-upload.js';

/**
 * A table format's files on Cloud Storage, each a resumable upload straight to its own fresh name
 * under `ifGenerationMatch: 0` (no temp object and rewrite, as a file sink's target needs: nothing
 * names the object until the table's commit does). The object exists only once the upload is
 * finalized, so readers never see a part of it; a failed upload whose final request may have landed
 * has its object deleted, and an unfinished session holds no object and expires on its own (a
 * week after it began, Cloud Storage's documented lifetime): `abortUnfinished` has nothing to end.
 * A listing is read page by page, each page's token asking for the next.
 */
export function gcsTableFiles(storage: Storage, settings: GcsWriteSettings = {}): TableFiles {
  // Its retries are not logged: a table's writer reports the run's outcome, and a failure names the file.
  const logger = createLogger({ level: 'silent' });
  const http = () =>
    new GcsHttp({
      storage,
      logger,
      ...(settings.limits ? { limits: settings.limits } : {}),
      ...(settings.budget ? { budget: settings.budget } : {}),
      ...(settings.requestTimeoutMs !== undefined ? { requestTimeoutMs: settings.requestTimeoutMs } : {}),
    });
  return {
    async writeNew(location, pieces) {
      const { bucket, object } = parseGcsObjectUrl(location);
      const upload = new ResumableUpload({
        http: http(),
        bucket,
        object,
        contentType: 'application/octet-stream',
        metadata: {},
        ifGenerationMatch: 0,
        ...(settings.chunkBytes !== undefined ? { chunkBytes: settings.chunkBytes } : {}),
      });
      try {
        await pipeline(Readable.from(pieces, { objectMode: false }), upload);
        return upload.finished!.size;
      } catch (error) {
        if (upload.mayHaveCreated)
          await storage
            .bucket(bucket)
            .file(object)
            .delete({ ignoreNotFound: true })
            .catch(() => undefined);
        throw gcsFailure(error, { target: location, bucket, operation: 'writing the file', permission: 'storage.objects.create' });
      }
    },
    async read(location) {
      const { bucket, object } = parseGcsObjectUrl(location);
      try {
        return (await storage.bucket(bucket).file(object).download())[0];
      } catch (error) {
        throw gcsFailure(error, { target: location, bucket, operation: 'reading the file', permission: 'storage.objects.get' });
      }
    },
    async remove(location) {
      const { bucket, object } = parseGcsObjectUrl(location);
      try {
        await storage.bucket(bucket).file(object).delete({ ignoreNotFound: true });
      } catch (error) {
        if (statusOf(error) === 404) return;
        throw gcsFailure(error, { target: location, bucket, operation: 'removing the file', permission: 'storage.objects.delete' });
      }
    },
    list: (location) => listObjects(storage, location, settings.listPageSize),
    // A resumable session holds no object, and Cloud Storage ends it a week after it began.
    abortUnfinished: async () => [],
  };
}

/** Every object below the folder `location`, read page by page (`pageSize` objects each, else the service's 1000). */
async function listObjects(storage: Storage, location: string, pageSize: number | undefined): Promise<ListedTableFile[]> {
  const { bucket, rest } = splitGcsUrl(location)!;
  const prefix = `${rest.replace(/\/+$/, '')}/`;
  const files: ListedTableFile[] = [];
  let pageToken: string | undefined;
  try {
    do {
      const [page, next] = await storage.bucket(bucket).getFiles({
        prefix,
        autoPaginate: false,
        ...(pageSize !== undefined ? { maxResults: pageSize } : {}),
        ...(pageToken !== undefined ? { pageToken } : {}),
      });
      for (const file of page) {
        // `updated` moves with a metadata change as well as a write: the later of the two, never too old.
        const modifiedMs = Date.parse(String(file.metadata.updated ?? file.metadata.timeCreated ?? ''));
        files.push({ location: `gs://${bucket}/${file.name}`, modifiedMs: Number.isNaN(modifiedMs) ? Number.POSITIVE_INFINITY : modifiedMs });
      }
      pageToken = (next as { pageToken?: string } | null | undefined)?.pageToken;
    } while (pageToken !== undefined);
  } catch (error) {
    throw gcsFailure(error, { target: location, bucket, operation: 'listing the files', permission: 'storage.objects.list', notFoundIsBucket: true });
  }
  return files;
}
