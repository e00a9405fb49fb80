import path from 'node:path';
import type { EnvironmentConfig } from '../../config/environment-schema.js';
import { unwritableReason } from '../writable-directory.js';
import type { SinkWorkspaceChecker, WorkspaceCheckerFactory, WorkspaceProblem } from '../workspace-checks.js';
import type { FileFormat, FileSinkConfig } from './file-format.js';
import { storeKindOf } from '../stores/registry.js';
import { FilePathTemplate } from './path-template.js';

/**
 * A file sink kind's checks without the network: the environment's directory for the kind and
 * each template's directory, when on this machine, can be written (a bucket's prefix is checked
 * by its URL, in the environment schema, and by `check`, the bucket); the target is the filled template.
 */
export function fileWorkspaceChecker(format: FileFormat, directoryOf: (environment: EnvironmentConfig) => string): WorkspaceCheckerFactory {
  return async (environment, configFile, jobs): Promise<SinkWorkspaceChecker> => {
    const directory = directoryOf(environment);
    const uses = jobs.some((job) => job.sinks.some((sink) => sink.type === format.name));
    const onThisMachine = (location: string) => storeKindOf(location).onThisMachine;
    const directoryReason = uses && onThisMachine(directory) ? await unwritableReason(directory) : undefined;
    const cannot = (reason: string) => `${format.label} files cannot be written there: ${reason}`;
    const fileSystem: WorkspaceProblem[] = [];
    if (directoryReason !== undefined)
      fileSystem.push({ file: configFile, path: ['sinks', format.name, 'directory'], value: directory, message: cannot(directoryReason) });
    return {
      fileSystem,
      async target(job, index, sink) {
        if (sink.type !== format.name) return undefined;
        const config = sink as FileSinkConfig;
        const template = config.path ?? format.defaultPathTemplate(config, false);
        let scope: string;
        let name: string;
        try {
          const parsed = new FilePathTemplate(format, template);
          scope = parsed.sweepScope(directory).root;
          name = parsed.targetKey({ name: job.name, tile: job.tile }, directory);
        } catch {
          return undefined; // a bad template is reported when the sinks are built
        }
        const problems: WorkspaceProblem[] = [];
        if (directoryReason === undefined && onThisMachine(scope) && (!onThisMachine(directory) || path.resolve(scope) !== path.resolve(directory))) {
          const reason = await unwritableReason(scope);
          if (reason !== undefined) problems.push({ file: job.file, path: ['sinks', index, 'path'], value: template, message: cannot(reason) });
        }
        return { name, field: 'path', value: template, fileSystem: problems, columnLayout: [] };
      },
      jobErrors: () => [],
    };
  };
}
