import type { LoadedJob } from '../../config/load-config.js';
import type { Sink } from '../sink.js';
import type { WindowStateReader } from '../window-state.js';
import { FileSink } from './file-sink.js';
import type { FileFormat, FileSinkConfig } from './file-format.js';

/**
 * The readers of a job's sinks of one format, in the job's sink order: each asks its sink's store
 * which windows' files the manifests beside them describe (stores/object-store.ts, `heldWindows`).
 * A sink without a path reads under the format's windowed default, the one the job's windows are
 * written with.
 */
export function fileWindowStateReaders(format: FileFormat, job: LoadedJob, sinks: readonly Sink[]): WindowStateReader[] {
  const readers: WindowStateReader[] = [];
  let index = 0;
  const configs = job.sinks.filter((sink) => sink.type === format.name) as FileSinkConfig[];
  for (const sink of sinks) {
    if (!(sink instanceof FileSink) || sink.format !== format) continue;
    const config = configs[index++];
    const template = config?.path ?? format.defaultPathTemplate(config ?? { type: format.name }, true);
    readers.push({
      target: template,
      heldWindows: (windows) => sink.heldWindows(windows, { jobName: job.name, tileId: job.tile, template, timezone: job.timezone }),
    });
  }
  return readers;
}
