import path from 'node:path';
import type { z } from 'zod';
import { writesOneFilePerWindow } from '../../config/window-rules.js';
import { ConfigError, type ConfigProblem } from '../../config/config-error.js';
import type { EnvironmentConfig } from '../../config/environment-schema.js';
import type { SinkConfig } from '../../config/job-schema.js';
import { supportedUrls } from '../../config/object-store-urls.js';
import { guardSettingsOf, type PublishGuardConfig } from '../../config/publish-guard-schema.js';
import type { SinkKind } from '../sink-kind.js';
import { storeKindOf, storeOptionsFrom } from '../stores/registry.js';
import type { FileFormat, FileSinkConfig } from './file-format.js';
import type { FileSink, FileSinkOptions } from './file-sink.js';
import { templateDirectory } from './path-template.js';
import { fileWindowStateReaders } from './window-state.js';
import { fileWorkspaceChecker } from './workspace-checks.js';

/** What a file format's folder gives to become a sink kind: everything else is this folder's. */
export interface FileSinkKindSpec<C extends FileSinkConfig> {
  format: FileFormat<C>;
  /** Its sinks' config schema (config/<kind>-sink-schema.ts). */
  configSchema: z.ZodType;
  /** Which of its settings decide what lands (SinkKind's `definitionSettings`). */
  definitionSettings: SinkKind['definitionSettings'];
  /** The environment's directory for the kind, `sinks.<kind>.directory`: where relative paths go. */
  directory(environment: EnvironmentConfig): string;
  /** The environment's publish guard for the kind, `sinks.<kind>.guard`. */
  guardDefaults(environment: EnvironmentConfig): PublishGuardConfig;
  /** The kind's sink (CSV: CsvSink, a FileSink of the CSV format). */
  createSink(options: FileSinkOptions<C>): FileSink<C>;
}

/**
 * Where a sink's files land, as far as choosing their store goes: its own path when that names a
 * bucket or is absolute, else the kind's directory, below which a relative path goes.
 */
function storeLocation(sinkPath: string | undefined, directory: string): string {
  return sinkPath !== undefined && (!storeKindOf(sinkPath).onThisMachine || path.posix.isAbsolute(sinkPath)) ? sinkPath : directory;
}

/** A file sink kind (files in one format, in any store: stores/registry.ts), as the rest of tilehouse sees it. */
export function fileSinkKind<C extends FileSinkConfig>(spec: FileSinkKindSpec<C>): SinkKind {
  const { format } = spec;
  const { name, label } = format;
  const ours = (sink: SinkConfig): C | undefined => (sink.type === name ? (sink as unknown as C) : undefined);
  return {
    type: name,
    label,
    configSchema: spec.configSchema,
    definitionSettings: spec.definitionSettings,
    workspaceChecker: fileWorkspaceChecker(format as unknown as FileFormat, spec.directory),
    lineage: { dataset: (target) => storeKindOf(target).lineageDataset(target), filesPerOutput: 1 },
    async build(sink, index, job, environment, options) {
      const config = ours(sink);
      if (config === undefined) throw new Error(`not a ${label} sink: ${sink.type}`);
      try {
        return spec.createSink({
          // Every store's settings and, over them, the seams a test injects (each store reads its own; other kinds' are ignored).
          ...storeOptionsFrom(environment),
          ...options,
          config,
          directory: spec.directory(environment),
          guard: guardSettingsOf(config.guard, spec.guardDefaults(environment)),
          timezone: job.timezone,
          stopDeadlineMs: environment.stopDeadlineMs,
        });
      } catch (error) {
        throw ConfigError.single({ file: job.file, field: `sinks[${index}].path`, value: JSON.stringify(config.path), message: (error as Error).message });
      }
    },
    windowStateReaders: async (job, sinks) => fileWindowStateReaders(format as unknown as FileFormat, job, sinks),
    // One file per window: the path needs {date}, and the default path gets it.
    forWindows(sink, index, job) {
      const problems: ConfigProblem[] = [];
      const config = ours(sink);
      if (config === undefined) return { sink, problems };
      if (config.path === undefined) return { sink: { ...sink, path: format.defaultPathTemplate(config, true) } as SinkConfig, problems };
      if (!writesOneFilePerWindow(config.path)) {
        problems.push({
          file: job.file,
          field: `sinks[${index}].path`,
          value: JSON.stringify(config.path),
          message: 'a backfill writes one file per window: the path needs {date}',
        });
      }
      return { sink, problems };
    },
    takesWindowsOneAtATime: () => false,
    // A store's credentials are the pod's identity (Workload Identity, IRSA) or its mounted files: none of the kind's own.
    secrets: () => [],
    // A finished window is told by its manifest.
    resumeRefusal(job) {
      const withoutManifest = job.sinks.findIndex((sink) => ours(sink) !== undefined && ours(sink)!.manifest !== true);
      if (withoutManifest < 0) return undefined;
      return `backfill: --resume tells a finished ${label} window by its manifest: set manifest: true on sinks[${withoutManifest}] of ${job.name} (then run once without --resume)`;
    },

    // What the store of the sink's files needs on the pods' service account (S3: the IRSA role).
    serviceAccountAnnotations(sink, environment) {
      const config = ours(sink);
      if (config === undefined) return undefined;
      return storeKindOf(storeLocation(config.path, spec.directory(environment))).serviceAccountAnnotations?.();
    },
    // Files in a bucket (the sink's own path, or a relative path under a bucket directory) are
    // streamed there: the pod needs no volume for them.
    localFiles: {
      directory(sink, environment, workdir) {
        const config = ours(sink);
        if (config === undefined) return undefined;
        const directory = spec.directory(environment);
        if (!storeKindOf(storeLocation(config.path, directory)).onThisMachine) return undefined;
        return config.path !== undefined && path.posix.isAbsolute(config.path) ? templateDirectory(config.path) : path.posix.resolve(workdir, directory);
      },
      emptyDirWarning: (directory, jobNames) =>
        `${jobNames.join(', ')} write ${label} under ${directory}: in the pod that is an emptyDir, deleted with the pod. ` +
        `On Kubernetes write ${label} to a bucket (a ${label} path or directory in ${supportedUrls()}), use a bigquery sink, or patch the volume to a PersistentVolumeClaim (k8s/README.md).`,
    },
  };
}
