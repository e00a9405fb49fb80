import type { SinkKind } from '../sink-kind.js';
import type { ConfigProblem } from '../../config/config-error.js';
import { csvWorkspaceChecker } from './workspace-checks.js';
import { csvWindowStateReaders } from './window-state.js';

/** The CSV sink (local files or gs:// objects), as the rest of tilehouse sees it. */
export const csvSinkKind: SinkKind = {
  type: 'csv',
  workspaceChecker: csvWorkspaceChecker,
  windowStateReaders: async (job, sinks) => csvWindowStateReaders(job, sinks),
  // One file per window: the path needs {date}, and the default path gets it.
  forWindows(sink, index, job) {
    const problems: ConfigProblem[] = [];
    if (sink.type !== 'csv') return { sink, problems };
    if (sink.path === undefined) return { sink: { ...sink, path: sink.gzip ? '{name}/{date}.csv.gz' : '{name}/{date}.csv' }, problems };
    if (!sink.path.includes('{date}')) {
      problems.push({ file: job.file, field: `sinks[${index}].path`, value: JSON.stringify(sink.path), message: 'a backfill writes one file per window: the path needs {date}' });
    }
    return { sink, problems };
  },
  takesWindowsOneAtATime: () => false,
  // A finished CSV window is told by its manifest.
  resumeRefusal(job) {
    const withoutManifest = job.sinks.findIndex((sink) => sink.type === 'csv' && sink.manifest !== true);
    if (withoutManifest < 0) return undefined;
    return `backfill: --resume tells a finished CSV window by its manifest: set manifest: true on sinks[${withoutManifest}] of ${job.name} (then run once without --resume)`;
  },
};
