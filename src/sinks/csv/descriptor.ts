import path from 'node:path';
import { looksLikeGcsUrl } from '../../config/gcs-url.js';
import { csvSinkSchema } from '../../config/csv-sink-schema.js';
import { ConfigError } from '../../config/config-error.js';
import type { SinkKind } from '../sink-kind.js';
import { CsvSink } from './csv-sink.js';
import type { ConfigProblem } from '../../config/config-error.js';
import { csvWorkspaceChecker } from './workspace-checks.js';
import { csvWindowStateReaders } from './window-state.js';

/** The fixed directory part of an absolute CSV path template: `/exports/{tile}/{date}.csv` → `/exports`. */
function templateDirectory(template: string): string {
  const segments = template.split('/');
  const fixed = segments.slice(0, -1);
  const firstPlaceholder = fixed.findIndex((segment) => segment.includes('{'));
  const kept = firstPlaceholder < 0 ? fixed : fixed.slice(0, firstPlaceholder);
  return kept.join('/') || '/';
}

/** The CSV sink (local files or gs:// objects), as the rest of tilehouse sees it. */
export const csvSinkKind: SinkKind = {
  type: 'csv',
  configSchema: csvSinkSchema,
  workspaceChecker: csvWorkspaceChecker,
  async build(config, index, job, environment, options) {
    if (config.type !== 'csv') throw new Error(`not a CSV sink: ${config.type}`);
    try {
      return new CsvSink({ config, directory: environment.sinks.csv.directory, timezone: job.timezone, stopDeadlineMs: environment.stopDeadlineMs, ...(options.storageClient ? { storageClient: options.storageClient } : {}), ...(options.gcsWrite ? { gcsWrite: options.gcsWrite } : {}) });
    } catch (error) {
      throw ConfigError.single({ file: job.file, field: `sinks[${index}].path`, value: JSON.stringify(config.path), message: (error as Error).message });
    }
  },
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

  // A gs:// target (its own path, or a relative path under a gs:// CSV directory) is an object in
  // a bucket: the pod streams it there and needs no volume for it.
  localFiles: {
    directory(sink, environment, workdir) {
      if (sink.type !== 'csv') return undefined;
      if (sink.path !== undefined && looksLikeGcsUrl(sink.path)) return undefined;
      const absolute = sink.path !== undefined && path.posix.isAbsolute(sink.path);
      if (!absolute && looksLikeGcsUrl(environment.sinks.csv.directory)) return undefined;
      return absolute ? templateDirectory(sink.path!) : path.posix.resolve(workdir, environment.sinks.csv.directory);
    },
    emptyDirWarning: (directory, jobNames) =>
      `${jobNames.join(', ')} write CSV under ${directory}: in the pod that is an emptyDir, deleted with the pod. ` +
      'On Kubernetes write CSV to Cloud Storage (a gs:// path or CSV directory), use a bigquery sink, or patch the volume to a PersistentVolumeClaim (k8s/README.md).',
  },
};
