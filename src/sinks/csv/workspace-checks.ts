import path from 'node:path';
import { looksLikeGcsUrl } from '../../config/gcs-url.js';
import type { LoadedJob } from '../../config/load-config.js';
import { unwritableReason } from '../writable-directory.js';
import type { SinkWorkspaceChecker, WorkspaceCheckerFactory, WorkspaceProblem } from '../workspace-checks.js';
import { CsvPathTemplate, defaultCsvPathTemplate, isGcsTarget, toFileNameSafe } from './csv-path.js';

/** A CSV path template with what is known before a run filled in ({name}, {tile}), as an absolute path. */
function csvTargetKey(template: string, job: LoadedJob, directory: string): string {
  const filled = template.replaceAll('{name}', toFileNameSafe(job.name)).replaceAll('{tile}', toFileNameSafe(job.tile));
  // Cloud Storage objects: the URL is the key (node:path would make `<cwd>/gs:/…` of it).
  if (isGcsTarget(filled)) return filled;
  if (looksLikeGcsUrl(directory) && !path.isAbsolute(filled)) return `${directory.replace(/\/+$/, '')}/${filled}`;
  return path.isAbsolute(filled) ? path.resolve(filled) : path.resolve(directory, filled);
}

/**
 * The CSV sink's checks without the network: the environment's directory and each template's
 * directory can be written (a gs:// directory is checked by its URL, in the environment schema,
 * and by `check`, the bucket); the target is the filled template.
 */
export const csvWorkspaceChecker: WorkspaceCheckerFactory = async (environment, configFile, jobs): Promise<SinkWorkspaceChecker> => {
  const csvDirectory = environment.sinks.csv.directory;
  const usesCsv = jobs.some((job) => job.sinks.some((sink) => sink.type === 'csv'));
  const directoryReason = usesCsv && !looksLikeGcsUrl(csvDirectory) ? await unwritableReason(csvDirectory) : undefined;
  const fileSystem: WorkspaceProblem[] = [];
  if (directoryReason !== undefined) fileSystem.push({ file: configFile, path: ['sinks', 'csv', 'directory'], value: csvDirectory, message: `CSV files cannot be written there: ${directoryReason}` });
  return {
    fileSystem,
    async target(job, index, sink) {
      if (sink.type !== 'csv') return undefined;
      const template = sink.path ?? defaultCsvPathTemplate(sink.gzip);
      const name = csvTargetKey(template, job, csvDirectory);
      let scope: string;
      try {
        scope = new CsvPathTemplate(template).sweepScope(csvDirectory).root;
      } catch {
        return undefined; // a bad template is reported when the sinks are built
      }
      const problems: WorkspaceProblem[] = [];
      if (directoryReason === undefined && !isGcsTarget(scope) && (looksLikeGcsUrl(csvDirectory) || path.resolve(scope) !== path.resolve(csvDirectory))) {
        const reason = await unwritableReason(scope);
        if (reason !== undefined) problems.push({ file: job.file, path: ['sinks', index, 'path'], value: template, message: `CSV files cannot be written there: ${reason}` });
      }
      return { name, field: 'path', value: template, fileSystem: problems, columnLayout: [] };
    },
    jobErrors: () => [],
  };
};
