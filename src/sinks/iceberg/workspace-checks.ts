import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import type { SinkWorkspaceChecker, WorkspaceCheckerFactory, WorkspaceProblem } from '../workspace-checks.js';
import { uncheckedPostgresSecrets } from '../postgres/connection-settings.js';
import { catalogDescription } from './iceberg-names.js';

const ENV_REFERENCE = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/;

/**
 * The iceberg sink's checks without the network: the catalog's secrets resolvable here (the REST
 * token's variable set or file readable; the JDBC catalog's as sinks.postgres's), a job's iceberg
 * sink without `sinks.iceberg`, and its target named by catalog and table.
 */
export const icebergWorkspaceChecker: WorkspaceCheckerFactory = async (environment, configFile, jobs): Promise<SinkWorkspaceChecker> => {
  const settings = environment.sinks.iceberg;
  const used = jobs.some((job) => job.sinks.some((sink) => sink.type === 'iceberg'));
  const unchecked: WorkspaceProblem[] = [];
  const invalid: WorkspaceProblem[] = [];
  if (settings !== undefined && used) {
    const { catalog } = settings;
    if (catalog.type === 'jdbc') {
      const found = await uncheckedPostgresSecrets(catalog, configFile, process.env, ['sinks', 'iceberg', 'catalog']);
      unchecked.push(...found.unchecked);
      invalid.push(...found.invalid);
    } else if (catalog.tokenFile !== undefined) {
      const code = await access(catalog.tokenFile, constants.R_OK).then(
        () => undefined,
        (error: NodeJS.ErrnoException) => error.code ?? error.message,
      );
      if (code !== undefined)
        unchecked.push({
          file: configFile,
          path: ['sinks', 'iceberg', 'catalog', 'tokenFile'],
          value: catalog.tokenFile,
          message: `the token file cannot be read here (${code})`,
        });
    } else if (catalog.token !== undefined) {
      const variable = ENV_REFERENCE.exec(catalog.token)?.[1];
      if (variable !== undefined && !process.env[variable])
        unchecked.push({
          file: configFile,
          path: ['sinks', 'iceberg', 'catalog', 'token'],
          value: catalog.token,
          message: `environment variable ${variable} is not set here`,
        });
    }
  }
  return {
    fileSystem: invalid,
    unchecked,
    async target(_job, _index, sink) {
      if (sink.type !== 'iceberg') return undefined;
      const where = settings === undefined ? 'iceberg' : `iceberg ${catalogDescription(settings)}`;
      return { name: `${where} ${sink.table}`, field: 'table', value: sink.table, fileSystem: [], columnLayout: [] };
    },
    jobErrors(job) {
      if (settings !== undefined) return [];
      const index = job.sinks.findIndex((sink) => sink.type === 'iceberg');
      if (index < 0) return [];
      return [{ file: job.file, path: ['sinks', index], message: 'an iceberg sink needs sinks.iceberg in the environment file (catalog, location)' }];
    },
  };
};
