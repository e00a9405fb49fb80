import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import type { SinkWorkspaceChecker, WorkspaceCheckerFactory, WorkspaceProblem } from '../workspace-checks.js';
import { uncheckedPostgresSecrets, unparsableUrlFile } from '../postgres/connection-settings.js';
import { catalogDescription } from './iceberg-names.js';

const ENV_REFERENCE = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/;

/**
 * The iceberg sink's checks without the network: the catalog's secrets resolvable here (the REST
 * token's or OAuth2 client secret's variable set or file readable; the JDBC catalog's as sinks.postgres's), a job's iceberg
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
    } else if (catalog.auth?.type !== 'sigv4' && catalog.auth?.type !== 'google') {
      // sigv4 and google take their credentials from the machine's identity, resolved when they sign.
      const field =
        catalog.auth === undefined
          ? { file: 'tokenFile', reference: 'token', what: 'token' }
          : { file: 'clientSecretFile', reference: 'clientSecret', what: 'client secret' };
      const file = catalog.auth === undefined ? catalog.tokenFile : catalog.auth.clientSecretFile;
      const reference = catalog.auth === undefined ? catalog.token : catalog.auth.clientSecret;
      const path = ['sinks', 'iceberg', 'catalog', ...(catalog.auth === undefined ? [] : ['auth'])];
      if (file !== undefined) {
        const code = await access(file, constants.R_OK).then(
          () => undefined,
          (error: NodeJS.ErrnoException) => error.code ?? error.message,
        );
        if (code !== undefined)
          unchecked.push({ file: configFile, path: [...path, field.file], value: file, message: `the ${field.what} file cannot be read here (${code})` });
      } else if (reference !== undefined) {
        const variable = ENV_REFERENCE.exec(reference)?.[1];
        if (variable !== undefined && !process.env[variable])
          unchecked.push({ file: configFile, path: [...path, field.reference], value: reference, message: `environment variable ${variable} is not set here` });
      }
    }
  }
  return {
    fileSystem: [],
    invalid,
    invalidWhenConnecting: async () =>
      settings !== undefined && used && settings.catalog.type === 'jdbc'
        ? await unparsableUrlFile(settings.catalog, configFile, ['sinks', 'iceberg', 'catalog'])
        : [],
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
