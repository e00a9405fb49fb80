import type { Bucket, File, Storage } from '@google-cloud/storage';
import type { Logger } from 'pino';
import { howStrayTempGoes, isAbandoned, ownerStateOfTag, type StrayTemp } from '../../owned-temp-files.js';
import type { Leftover } from '../../sink.js';
import { formatOwnerTag } from '../../../temp-owner.js';
import { tempFileOwnerTag } from '../file-names.js';
import { lendLoggerToGoogleCredentials, withFreshTokenOn401 } from '../../google/google-credentials.js';
import { gcsFailure } from './gcs-errors.js';
import { splitGcsUrl } from '../../../config/gcs-url.js';

/**
 * Custom metadata of every object tilehouse writes: the writing process's owner tag (see
 * temp-owner.ts) and run id. On a temp object the owner decides whether a sweep may delete it; on
 * a published object (a copy keeps its source's metadata) it names the run that wrote it, so a
 * run that finds the target replaced under it can say by whom.
 */
export const OWNER_METADATA_KEY = 'tilehouse-owner';
export const RUN_ID_METADATA_KEY = 'tilehouse-run-id';
export const JOB_METADATA_KEY = 'tilehouse-job';

export function ownerMetadata(jobName: string, runId: string): Record<string, string> {
  return { [OWNER_METADATA_KEY]: formatOwnerTag(), [RUN_ID_METADATA_KEY]: runId, [JOB_METADATA_KEY]: jobName };
}

/** `a/b/` of `a/b/c.csv`, '' for `c.csv`. */
export function objectFolder(object: string): string {
  return object.slice(0, object.lastIndexOf('/') + 1);
}

export function objectBaseName(object: string): string {
  return object.slice(object.lastIndexOf('/') + 1);
}

/**
 * Deletes the temp objects of dead runs below `root` (`gs://bucket/prefix/`), by the same rule as
 * local temp files (owned-temp-files.ts): the owner in the object's metadata (else in its name) is
 * provably gone, or cannot be known (another pod) and the object is older than a day. Only
 * objects named like our temp files are looked at; a live owner's object is never touched.
 *
 * Temp objects exist only between a run's prepare and its publish (an upload that never finished
 * creates no object; its session expires on its own), so this sweep is for runs killed in that
 * window; the bucket lifecycle rule in docs/cloud-storage.md is the backstop for everything else.
 */
export async function removeStaleTempObjects(
  storage: Storage,
  root: string,
  options: {
    recursive: boolean;
    logger: Logger;
    now?: number /** Look only: every stray goes here, nothing is deleted (`strayTempObjects`). */;
    strays?: StrayTemp[];
  },
): Promise<string[]> {
  // The sweep is a run's first Google request: the credentials' waiting warning goes to its log.
  lendLoggerToGoogleCredentials(options.logger);
  const { bucket: bucketName, rest: prefix } = splitGcsUrl(root)!;
  const bucket: Bucket = storage.bucket(bucketName);
  let files: File[];
  try {
    [files] = await withFreshTokenOn401(`listing temp objects below gs://${bucketName}/${prefix}`, () =>
      bucket.getFiles({ prefix, ...(options.recursive ? {} : { delimiter: '/' }), autoPaginate: true }),
    );
  } catch (error) {
    throw gcsFailure(error, {
      target: root,
      bucket: bucketName,
      operation: 'listing temp objects for the sweep',
      permission: 'storage.objects.list',
      notFoundIsBucket: true,
    });
  }
  const removed: string[] = [];
  const now = options.now ?? Date.now();
  for (const file of files) {
    const name = objectBaseName(file.name);
    const nameTag = tempFileOwnerTag(name);
    if (nameTag === undefined) continue;
    const metadataTag = file.metadata.metadata?.[OWNER_METADATA_KEY];
    const tag = typeof metadataTag === 'string' ? metadataTag : nameTag;
    const updated = Date.parse(String(file.metadata.updated ?? file.metadata.timeCreated ?? ''));
    const owner = ownerStateOfTag(tag);
    if (options.strays !== undefined) {
      if (owner !== 'self' && owner !== 'alive')
        options.strays.push({ location: `gs://${bucketName}/${file.name}`, owner, modifiedMs: Number.isNaN(updated) ? now : updated });
      continue;
    }
    if (!isAbandoned(owner, Number.isNaN(updated) ? now : updated, now)) continue;
    try {
      // The generation seen in the listing: an object re-created since then is not the one judged here.
      await file.delete({ ignoreNotFound: true, ...(file.metadata.generation === undefined ? {} : { ifGenerationMatch: file.metadata.generation }) });
      removed.push(`gs://${bucketName}/${file.name}`);
    } catch (error) {
      options.logger.warn({ err: error, object: file.name }, 'could not delete an abandoned temp object; the bucket lifecycle rule removes it later');
    }
  }
  return removed;
}

/** The temp objects below `root` a sweep removes (now, or once old enough), with how each goes; lists only, deletes nothing (`status`). */
export async function strayTempObjects(storage: Storage, root: string, options: { recursive: boolean; logger: Logger }): Promise<Leftover[]> {
  const strays: StrayTemp[] = [];
  await removeStaleTempObjects(storage, root, { ...options, strays });
  const now = Date.now();
  return strays.map((stray) => ({
    what: `Cloud Storage temp object ${stray.location}`,
    goes: `${howStrayTempGoes(stray, now)} (or the bucket lifecycle rule)`,
  }));
}
