import { postgresIdentifierProblem } from '../../config/postgres-sink-schema.js';
import type { SinkWorkspaceChecker, WorkspaceCheckerFactory, WorkspaceProblem } from '../workspace-checks.js';
import { uncheckedPostgresSecrets, unparsableUrlFile } from './connection-settings.js';
import { configuredTarget } from './postgres-plan.js';

/**
 * The postgres sink's checks without the network: the secrets of `sinks.postgres` resolvable
 * here (a variable set, a file readable, a url that parses), the target named `schema.table`,
 * and the columns the job's files predict usable as PostgreSQL names (at most 63 bytes).
 */
export const postgresWorkspaceChecker: WorkspaceCheckerFactory = async (environment, configFile, jobs): Promise<SinkWorkspaceChecker> => {
  const settings = environment.sinks.postgres;
  const used = jobs.some((job) => job.sinks.some((sink) => sink.type === 'postgres'));
  const secrets = settings !== undefined && used ? await uncheckedPostgresSecrets(settings, configFile) : { unchecked: [], invalid: [] };
  return {
    fileSystem: [],
    invalid: secrets.invalid,
    invalidWhenConnecting: async () => (settings !== undefined && used ? await unparsableUrlFile(settings, configFile) : []),
    unchecked: secrets.unchecked,
    async target(job, index, sink, predictedColumns) {
      if (sink.type !== 'postgres') return undefined;
      const { schema, table } = configuredTarget(sink, settings?.schema ?? 'public', job.name);
      const columnLayout: WorkspaceProblem[] = [];
      for (const column of predictedColumns() ?? []) {
        const problem = postgresIdentifierProblem(column.name);
        if (problem !== undefined)
          columnLayout.push({ file: job.file, path: ['sinks', index], value: column.name, message: `column ${column.name} ${problem}` });
      }
      // A job named past 63 bytes gives a table name PostgreSQL would cut.
      const tableProblem = sink.table === undefined ? postgresIdentifierProblem(table) : undefined;
      if (tableProblem !== undefined)
        columnLayout.push({
          file: job.file,
          path: ['sinks', index, 'table'],
          value: table,
          message: `the table name (the job's name) ${tableProblem}: set table`,
        });
      return { name: `postgres:${schema}.${table}`, field: 'table', value: table, fileSystem: [], columnLayout };
    },
    jobErrors: () => [],
  };
};
