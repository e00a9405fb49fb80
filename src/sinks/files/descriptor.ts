import path from 'node:path';
import type { z } from 'zod';
import { writesOneFilePerWindow } from '../../config/window-rules.js';
import { ConfigError, type ConfigProblem } from '../../config/config-error.js';
import type { EnvironmentConfig } from '../../config/environment-schema.js';
import type { SinkConfig } from '../../config/job-schema.js';
import { guardSettingsOf, type PublishGuardConfig } from '../../config/publish-guard-schema.js';
import type { SinkFactoryOptions, SinkKind } from '../sink-kind.js';
import type { FileFormat, FileSinkConfig } from './file-format.js';
import type { FileSink, FileSinkOptions } from './file-sink.js';
import { looksLikeObjectUrl, templateDirectory } from './path-template.js';
import { looksLikeS3Url } from '../../config/s3-url.js';
import { fileWindowStateReaders } from './window-state.js';
import { fileWorkspaceChecker } from './workspace-checks.js';
import { fileLineageDataset } from './lineage-dataset.js';

/** What a file format's folder gives to become a sink kind: everything else is this folder's. */
export interface FileSinkKindSpec<C extends FileSinkConfig> {
  format: FileFormat<C>;
  /** Its sinks' config schema (config/<kind>-sink-schema.ts). */
  configSchema: z.ZodType;
  /** The environment's directory for the kind, `sinks.<kind>.directory`: where relative paths go. */
  directory(environment: EnvironmentConfig): string;
  /** The environment's publish guard for the kind, `sinks.<kind>.guard`. */
  guardDefaults(environment: EnvironmentConfig): PublishGuardConfig;
  /** The kind's sink (CSV: CsvSink, a FileSink of the CSV format). */
  createSink(options: FileSinkOptions<C>): FileSink<C>;
}

/** IRSA (IAM roles for service accounts, EKS): the pods' service account names the role they assume. */
const IRSA_ROLE_ANNOTATION = 'eks.amazonaws.com/role-arn';
export const IRSA_ROLE_PLACEHOLDER = 'arn:aws:iam::ACCOUNT_ID:role/tilehouse';

/** The s3:// settings a file sink gets: the environment's `sinks.s3`, and what tests inject. */
function s3Options(environment: EnvironmentConfig, options: SinkFactoryOptions): Pick<FileSinkOptions, 's3' | 's3Client' | 's3Write'> {
  return {
    ...(environment.sinks?.s3 !== undefined ? { s3: environment.sinks.s3 } : {}),
    ...(options.s3Client ? { s3Client: options.s3Client } : {}),
    ...(options.s3Write ? { s3Write: options.s3Write } : {}),
  };
}

/** A file sink kind (local files, gs:// or s3:// objects, in one format), as the rest of tilehouse sees it. */
export function fileSinkKind<C extends FileSinkConfig>(spec: FileSinkKindSpec<C>): SinkKind {
  const { format } = spec;
  const { name, label } = format;
  const ours = (sink: SinkConfig): C | undefined => (sink.type === name ? (sink as unknown as C) : undefined);
  return {
    type: name,
    configSchema: spec.configSchema,
    workspaceChecker: fileWorkspaceChecker(format as unknown as FileFormat, spec.directory),
    lineage: { dataset: fileLineageDataset, filesPerOutput: 1 },
    async build(sink, index, job, environment, options) {
      const config = ours(sink);
      if (config === undefined) throw new Error(`not a ${label} sink: ${sink.type}`);
      try {
        return spec.createSink({
          config,
          directory: spec.directory(environment),
          guard: guardSettingsOf(config.guard, spec.guardDefaults(environment)),
          timezone: job.timezone,
          stopDeadlineMs: environment.stopDeadlineMs,
          gcsClient: { apiEndpoint: environment.sinks.gcs?.apiEndpoint, credentialsWaitMs: environment.googleCredentialsWaitMs },
          ...(options.storageClient ? { storageClient: options.storageClient } : {}),
          ...(options.gcsWrite ? { gcsWrite: options.gcsWrite } : {}),
          ...s3Options(environment, options),
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
    // A finished window is told by its manifest.
    resumeRefusal(job) {
      const withoutManifest = job.sinks.findIndex((sink) => ours(sink) !== undefined && ours(sink)!.manifest !== true);
      if (withoutManifest < 0) return undefined;
      return `backfill: --resume tells a finished ${label} window by its manifest: set manifest: true on sinks[${withoutManifest}] of ${job.name} (then run once without --resume)`;
    },

    // An s3:// target's credentials come from IRSA on EKS: the role the service account maps to.
    serviceAccountAnnotations(sink, environment) {
      const config = ours(sink);
      if (config === undefined) return undefined;
      const own = config.path !== undefined && (looksLikeObjectUrl(config.path) || path.posix.isAbsolute(config.path));
      const s3 = own ? looksLikeS3Url(config.path!) : looksLikeS3Url(spec.directory(environment));
      return s3 ? { [IRSA_ROLE_ANNOTATION]: IRSA_ROLE_PLACEHOLDER } : undefined;
    },
    // A gs:// or s3:// target (its own path, or a relative path under such a directory) is an object in
    // a bucket: the pod streams it there and needs no volume for it.
    localFiles: {
      directory(sink, environment, workdir) {
        const config = ours(sink);
        if (config === undefined) return undefined;
        const directory = spec.directory(environment);
        if (config.path !== undefined && looksLikeObjectUrl(config.path)) return undefined;
        const absolute = config.path !== undefined && path.posix.isAbsolute(config.path);
        if (!absolute && looksLikeObjectUrl(directory)) return undefined;
        return absolute ? templateDirectory(config.path!) : path.posix.resolve(workdir, directory);
      },
      emptyDirWarning: (directory, jobNames) =>
        `${jobNames.join(', ')} write ${label} under ${directory}: in the pod that is an emptyDir, deleted with the pod. ` +
        `On Kubernetes write ${label} to Cloud Storage or S3 (a gs:// or s3:// path or ${label} directory), use a bigquery sink, or patch the volume to a PersistentVolumeClaim (k8s/README.md).`,
    },
  };
}
