import { readFile } from 'node:fs/promises';
import type { LoadedJob } from '../../config/load-config.js';
import type { Sink } from '../sink.js';
import { holdings, WindowStateUnreadableError, type WindowStateReader } from '../window-state.js';
import { FileSink } from './file-sink.js';
import type { FileFormat, FileSinkConfig } from './file-format.js';
import { isGcsTarget, isS3Target } from './path-template.js';
import { manifestPathOf, sha256Of } from '../stores/manifest.js';
import { type ManifestFields, objectWindowsHeld, wasOpen } from '../stores/window-open.js';

/**
 * A local file target holds a window when the manifest beside the window's file matches the file
 * (sha256): the manifest is renamed in right after the file, so a file without its manifest, or
 * beside the previous run's, is a window that did not finish. A missing file or manifest is "not
 * done"; any other read error is an error, not a guess.
 */
export function localManifestState(job: LoadedJob, sink: FileSink, template: string): WindowStateReader {
  const absent = (error: unknown): undefined => {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new WindowStateUnreadableError(`job ${job.name}: cannot read ${template}'s state: ${(error as Error).message}`, { cause: error });
  };
  return {
    target: template,
    async heldWindows(windows) {
      const held = holdings();
      for (const window of windows) {
        const target = sink.targetFor({ jobName: job.name, tileId: job.tile, runId: '', startedAt: new Date(), window });
        const text = await readFile(manifestPathOf(target), 'utf8').catch(absent);
        if (text === undefined) continue;
        let manifest: ManifestFields & { sha256?: unknown };
        try {
          manifest = JSON.parse(text) as ManifestFields & { sha256?: unknown };
        } catch {
          continue; // a manifest cut short by a crash mid-write: that window did not finish
        }
        if (typeof manifest.sha256 === 'string' && manifest.sha256 === (await sha256Of(target).catch(absent))) {
          (wasOpen(manifest, window, job.timezone) ? held.open : held.done).add(window.from);
        }
      }
      return held;
    },
  };
}

/**
 * A gs:// file target holds a window when the manifest object beside the window's object describes
 * that object (`objectWindowsHeld`): its run id is custom metadata, kept by the rewrite that
 * publishes it. A missing object or manifest is "not done"; any other failure (permission,
 * network, bucket gone) is an error, not a guess.
 */
export function objectManifestState(job: LoadedJob, sink: FileSink, template: string): WindowStateReader {
  return {
    target: template,
    async heldWindows(windows) {
      // Loaded here, as the sink loads them: a local run never pays for the storage client.
      const [{ parseGcsObjectUrl }, { statusOf }, { RUN_ID_METADATA_KEY }] = await Promise.all([
        import('../../config/gcs-url.js'),
        import('../stores/gcs/gcs-errors.js'),
        import('../stores/gcs/temp-objects.js'),
      ]);
      const storage = await sink.storageClient();
      const targets = windows.map((window) => sink.targetFor({ jobName: job.name, tileId: job.tile, runId: '', startedAt: new Date(), window }));
      // A missing bucket is asked about first, once: an object's 404 does not always say whether
      // the object or its bucket is missing, and a bucket gone is not a day never written.
      for (const bucket of new Set(targets.map((target) => parseGcsObjectUrl(target).bucket))) {
        let exists: boolean;
        try {
          [exists] = await storage.bucket(bucket).exists();
        } catch (error) {
          throw new WindowStateUnreadableError(`job ${job.name}: cannot read ${template}'s state: bucket gs://${bucket}: ${(error as Error).message}`, {
            cause: error,
          });
        }
        if (!exists)
          throw new WindowStateUnreadableError(
            `job ${job.name}: cannot read ${template}'s state: the bucket gs://${bucket} does not exist (or these credentials cannot see it)`,
          );
      }
      const read = async <T>(url: string, request: () => Promise<T>): Promise<T | undefined> => {
        try {
          return await request();
        } catch (error) {
          if (statusOf(error) === 404) return undefined;
          throw new WindowStateUnreadableError(`job ${job.name}: cannot read ${template}'s state: ${url}: ${(error as Error).message}`, { cause: error });
        }
      };
      const file = (url: string) => {
        const { bucket, object } = parseGcsObjectUrl(url);
        return storage.bucket(bucket).file(object);
      };
      return objectWindowsHeld(windows, targets, job.timezone, {
        manifestText: (target) => read(manifestPathOf(target), async () => String((await file(manifestPathOf(target)).download())[0])),
        stored: async (target) => {
          const metadata = await read(target, async () => (await file(target).getMetadata())[0]);
          return metadata === undefined ? undefined : { runId: metadata.metadata?.[RUN_ID_METADATA_KEY], size: Number(metadata.size) };
        },
      });
    },
  };
}

/**
 * The readers of a job's sinks of one format, in the job's sink order: manifests beside local
 * files or gs:// objects. A sink without a path reads under the format's windowed default, the
 * one the job's windows are written with.
 */
export async function fileWindowStateReaders(format: FileFormat, job: LoadedJob, sinks: readonly Sink[]): Promise<WindowStateReader[]> {
  const readers: WindowStateReader[] = [];
  let index = 0;
  const configs = job.sinks.filter((sink) => sink.type === format.name) as FileSinkConfig[];
  for (const sink of sinks) {
    if (!(sink instanceof FileSink) || sink.format !== format) continue;
    const config = configs[index++];
    const template = config?.path ?? format.defaultPathTemplate(config ?? { type: format.name }, true);
    const sample = sink.targetFor({ jobName: job.name, tileId: job.tile, runId: '', startedAt: new Date(), window: { from: '2000-01-01', to: '2000-01-02' } });
    if (isS3Target(sample)) {
      // Loaded here, as the sink loads it: a run without s3:// targets never loads the AWS SDK.
      const { s3ManifestState } = await import('../stores/s3/window-state.js');
      readers.push(
        s3ManifestState(
          job,
          template,
          () => sink.s3Client(),
          (window) => sink.targetFor({ jobName: job.name, tileId: job.tile, runId: '', startedAt: new Date(), window }),
        ),
      );
      continue;
    }
    readers.push(isGcsTarget(sample) ? objectManifestState(job, sink, template) : localManifestState(job, sink, template));
  }
  return readers;
}
