import type { PostgresDefaults } from '../../config/environment-schema.js';
import { ConfigError, type ConfigProblem } from '../../config/config-error.js';
import { guardSettingsOf } from '../../config/publish-guard-schema.js';
import { postgresSinkSchema, postgresTakesWindows, type PostgresSinkConfig } from '../../config/postgres-sink-schema.js';
import type { KindSecret, SinkKind } from '../sink-kind.js';
import { postgresWorkspaceChecker } from './workspace-checks.js';
import { postgresWindowStateReaders } from './window-state.js';

/** Where a postgres sink's table is, for lineage (`postgres://host:port`, `database.schema.table`). */
export interface PostgresTargetAddress {
  host: string;
  port: number;
  database: string;
  schema: string;
  table: string;
}

/**
 * A postgres sink's target as the environment names it, or undefined when the environment gives
 * its host and database only through a url (read from a secret at run time, never here).
 */
export function postgresTargetOf(sink: PostgresSinkConfig, settings: PostgresDefaults, jobName: string): PostgresTargetAddress | undefined {
  if (settings.host === undefined || settings.database === undefined) return undefined;
  return {
    host: settings.host,
    port: settings.port ?? 5432,
    database: settings.database,
    schema: sink.postgresSchema ?? settings.schema,
    table: sink.table ?? jobName,
  };
}

/** Its keys in the credentials Secret (kubectl create secret generic tilehouse-credentials --from-file=postgres-password=…). */
export const POSTGRES_SECRET_KEYS = { password: 'postgres-password', url: 'postgres-url' } as const;

/** The PostgreSQL sink, as the rest of tilehouse sees it. */
export const postgresSinkKind: SinkKind = {
  type: 'postgres',
  configSchema: postgresSinkSchema,
  async build(config, index, job, environment) {
    if (config.type !== 'postgres') throw new Error(`not a PostgreSQL sink: ${config.type}`);
    const settings = environment.sinks.postgres;
    if (settings === undefined) {
      throw ConfigError.single({
        file: job.file,
        field: `sinks[${index}]`,
        message: 'a postgres sink needs sinks.postgres in the environment file (host, database, user, password or url)',
      });
    }
    // Loaded on demand: pg and pg-copy-streams are only for runs that write PostgreSQL.
    const { PostgresSink } = await import('./postgres-sink.js');
    return new PostgresSink({
      config,
      settings,
      environmentFile: 'the environment file',
      timezone: job.timezone,
      stopDeadlineMs: environment.stopDeadlineMs,
      guard: guardSettingsOf(config.guard, settings.guard),
    });
  },
  workspaceChecker: postgresWorkspaceChecker,
  windowStateReaders: (job, _sinks, environment, _options, logger) => postgresWindowStateReaders(job, environment, logger),
  forWindows(sink, index, job) {
    const problems: ConfigProblem[] = [];
    if (sink.type === 'postgres' && !postgresTakesWindows(sink.writeMode)) {
      problems.push({
        file: job.file,
        field: `sinks[${index}].writeMode`,
        value: JSON.stringify(sink.writeMode),
        message: "a backfill replaces each window's days, or merges each window by key: use writeMode: partition or merge",
      });
    }
    return { sink, problems };
  },
  // Two merges into one table serialize on its lock anyway, and a key two windows hold must end with the later window's values.
  takesWindowsOneAtATime: (sink) => sink.type === 'postgres' && sink.writeMode === 'merge',
  // The ledger is written in every publish's own transaction: it cannot be turned off, so --resume can always read it.
  resumeRefusal: () => undefined,
  // The password (or the url that holds one) from the credentials Secret: an env var, or a file in its mount.
  secrets(environment, jobs) {
    const settings = environment.sinks.postgres;
    if (settings === undefined || !jobs.some((job) => job.sinks.some((sink) => sink.type === 'postgres'))) return [];
    const secrets: KindSecret[] = [];
    if (settings.urlFile !== undefined) secrets.push({ field: 'sinks.postgres.urlFile', key: POSTGRES_SECRET_KEYS.url, file: settings.urlFile });
    else if (settings.url !== undefined) secrets.push({ field: 'sinks.postgres.url', key: POSTGRES_SECRET_KEYS.url, reference: settings.url });
    if (settings.passwordFile !== undefined)
      secrets.push({ field: 'sinks.postgres.passwordFile', key: POSTGRES_SECRET_KEYS.password, file: settings.passwordFile });
    else if (settings.password !== undefined)
      secrets.push({ field: 'sinks.postgres.password', key: POSTGRES_SECRET_KEYS.password, reference: settings.password });
    return secrets;
  },
};
