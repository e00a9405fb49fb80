import type { GetObjectCommandOutput, HeadObjectCommandOutput, S3Client } from '@aws-sdk/client-s3';
import { GetObjectCommand, HeadObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { parseS3ObjectUrl } from '../../../config/s3-url.js';
import { manifestPathOf } from '../manifest.js';
import { objectWindowsHeld } from '../window-open.js';
import { WindowStateUnreadableError, type HeldWindow, type WindowHoldings } from '../../window-state.js';
import { s3CodeOf, s3StatusOf } from './s3-errors.js';
import { RUN_ID_METADATA_KEY } from './temp-keys.js';

/**
 * An s3:// file target holds a window when the manifest object beside the window's object
 * describes that object (`objectWindowsHeld`): its run id is user metadata, kept by the copy that
 * publishes it. A missing object or manifest is "not done"; any other failure (permission,
 * network, bucket gone) is an error, not a guess.
 */
export async function s3WindowsHeld(
  s3: S3Client,
  windows: readonly HeldWindow[],
  targets: readonly string[],
  context: { jobName: string; template: string; timezone: string },
): Promise<WindowHoldings> {
  const unreadable = (what: string, error: unknown) =>
    new WindowStateUnreadableError(`job ${context.jobName}: cannot read ${context.template}'s state: ${what}: ${(error as Error).message}`, { cause: error });
  // A bucket gone is not a day never written: asked once, first.
  for (const bucket of new Set(targets.map((target) => parseS3ObjectUrl(target).bucket))) {
    try {
      await s3.send(new ListObjectsV2Command({ Bucket: bucket, MaxKeys: 1 }));
    } catch (error) {
      if (s3CodeOf(error) === 'NoSuchBucket' || s3StatusOf(error) === 404)
        throw new WindowStateUnreadableError(
          `job ${context.jobName}: cannot read ${context.template}'s state: the bucket s3://${bucket} does not exist (or these credentials cannot see it)`,
          { cause: error },
        );
      throw unreadable(`bucket s3://${bucket}`, error);
    }
  }
  const read = async <T>(url: string, request: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await request();
    } catch (error) {
      if (s3StatusOf(error) === 404) return undefined;
      throw unreadable(url, error);
    }
  };
  return objectWindowsHeld(windows, targets, context.timezone, {
    manifestText: (target) => {
      const { bucket, key } = parseS3ObjectUrl(target);
      return read(manifestPathOf(target), async () => {
        const answer: GetObjectCommandOutput = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: manifestPathOf(key) }));
        return answer.Body!.transformToString('utf8');
      });
    },
    stored: async (target) => {
      const { bucket, key } = parseS3ObjectUrl(target);
      const head = await read<HeadObjectCommandOutput>(target, () => s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key })));
      return head === undefined ? undefined : { runId: head.Metadata?.[RUN_ID_METADATA_KEY], size: head.ContentLength ?? Number.NaN };
    },
  });
}
