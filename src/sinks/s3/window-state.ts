import type { GetObjectCommandOutput, HeadObjectCommandOutput, S3Client } from '@aws-sdk/client-s3';
import { GetObjectCommand, HeadObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import type { LoadedJob } from '../../config/load-config.js';
import { parseS3ObjectUrl } from '../../config/s3-url.js';
import { mapWithConcurrency } from '../../map-with-concurrency.js';
import { manifestPathOf } from '../files/manifest.js';
import { wasOpen } from '../files/window-open.js';
import { holdings, WindowStateUnreadableError, type HeldWindow, type WindowStateReader } from '../window-state.js';
import { s3CodeOf, s3StatusOf } from './s3-errors.js';
import { RUN_ID_METADATA_KEY } from './temp-keys.js';

/** Manifests and objects of this many windows are read at a time (each window: two small requests). */
const CONCURRENCY = 8;

/**
 * An s3:// file target holds a window when the manifest object beside the window's object
 * describes that object: the object's run id (user metadata every object tilehouse writes
 * carries, kept by the copy that publishes it) and size are the manifest's. The manifest is
 * copied into place right after the object, so a new object beside the previous run's manifest
 * (a run that died between the two) has another run id: not done. A missing object or manifest is
 * "not done"; any other failure (permission, network, bucket gone) is an error, not a guess.
 */
export function s3ManifestState(
  job: LoadedJob,
  template: string,
  client: () => Promise<S3Client>,
  targetOf: (window: HeldWindow) => string,
): WindowStateReader {
  return {
    target: template,
    async heldWindows(windows) {
      const s3 = await client();
      const targets = windows.map(targetOf);
      const unreadable = (what: string, error: unknown) =>
        new WindowStateUnreadableError(`job ${job.name}: cannot read ${template}'s state: ${what}: ${(error as Error).message}`, { cause: error });
      // A bucket gone is not a day never written: asked once, first.
      for (const bucket of new Set(targets.map((target) => parseS3ObjectUrl(target).bucket))) {
        try {
          await s3.send(new ListObjectsV2Command({ Bucket: bucket, MaxKeys: 1 }));
        } catch (error) {
          if (s3CodeOf(error) === 'NoSuchBucket' || s3StatusOf(error) === 404)
            throw new WindowStateUnreadableError(
              `job ${job.name}: cannot read ${template}'s state: the bucket s3://${bucket} does not exist (or these credentials cannot see it)`,
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
      const stateOf = async (target: string, window: HeldWindow): Promise<'done' | 'open' | 'not'> => {
        const { bucket, key } = parseS3ObjectUrl(target);
        const text = await read(manifestPathOf(target), async () => {
          const answer: GetObjectCommandOutput = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: manifestPathOf(key) }));
          return answer.Body!.transformToString('utf8');
        });
        if (text === undefined) return 'not';
        let manifest: { runId?: unknown; bytes?: unknown; window?: { open?: unknown }; preparedAt?: unknown };
        try {
          manifest = JSON.parse(text) as typeof manifest;
        } catch {
          return 'not';
        }
        const head = await read<HeadObjectCommandOutput>(target, () => s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key })));
        if (head === undefined || typeof manifest.runId !== 'string') return 'not';
        if (head.Metadata?.[RUN_ID_METADATA_KEY] !== manifest.runId || head.ContentLength !== manifest.bytes) return 'not';
        return wasOpen(manifest, window, job.timezone) ? 'open' : 'done';
      };
      const results = await mapWithConcurrency(
        targets.map((target, index) => ({ target, window: windows[index]! })),
        CONCURRENCY,
        ({ target, window }) => stateOf(target, window),
      );
      const held = holdings();
      windows.forEach((window, index) => {
        const state = results[index];
        if (state === 'done' || state === 'open') held[state].add(window.from);
      });
      return held;
    },
  };
}
