import type { Storage } from '@google-cloud/storage';
import { parseGcsObjectUrl } from '../../../config/gcs-url.js';
import { WindowStateUnreadableError, type HeldWindow, type WindowHoldings } from '../../window-state.js';
import { manifestPathOf } from '../manifest.js';
import { objectWindowsHeld } from '../window-open.js';
import { statusOf } from './gcs-errors.js';
import { RUN_ID_METADATA_KEY } from './temp-objects.js';

/**
 * A gs:// file target holds a window when the manifest object beside the window's object describes
 * that object (`objectWindowsHeld`): its run id is custom metadata, kept by the rewrite that
 * publishes it. A missing object or manifest is "not done"; any other failure (permission,
 * network, bucket gone) is an error, not a guess.
 */
export async function gcsWindowsHeld(
  storage: Storage,
  windows: readonly HeldWindow[],
  targets: readonly string[],
  context: { jobName: string; template: string; timezone: string },
): Promise<WindowHoldings> {
  const unreadable = `job ${context.jobName}: cannot read ${context.template}'s state`;
  // A missing bucket is asked about first, once: an object's 404 does not always say whether
  // the object or its bucket is missing, and a bucket gone is not a day never written.
  for (const bucket of new Set(targets.map((target) => parseGcsObjectUrl(target).bucket))) {
    let exists: boolean;
    try {
      [exists] = await storage.bucket(bucket).exists();
    } catch (error) {
      throw new WindowStateUnreadableError(`${unreadable}: bucket gs://${bucket}: ${(error as Error).message}`, { cause: error });
    }
    if (!exists) throw new WindowStateUnreadableError(`${unreadable}: the bucket gs://${bucket} does not exist (or these credentials cannot see it)`);
  }
  const read = async <T>(url: string, request: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await request();
    } catch (error) {
      if (statusOf(error) === 404) return undefined;
      throw new WindowStateUnreadableError(`${unreadable}: ${url}: ${(error as Error).message}`, { cause: error });
    }
  };
  const file = (url: string) => {
    const { bucket, object } = parseGcsObjectUrl(url);
    return storage.bucket(bucket).file(object);
  };
  return objectWindowsHeld(windows, targets, context.timezone, {
    manifestText: (target) => read(manifestPathOf(target), async () => String((await file(manifestPathOf(target)).download())[0])),
    stored: async (target) => {
      const metadata = await read(target, async () => (await file(target).getMetadata())[0]);
      return metadata === undefined ? undefined : { runId: metadata.metadata?.[RUN_ID_METADATA_KEY], size: Number(metadata.size) };
    },
  });
}
