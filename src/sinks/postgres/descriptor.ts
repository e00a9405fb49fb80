// src/sinks/postgres/, module by module (ARCHITECTURE.md gives the folder one paragraph): the
// PostgreSQL sink, loaded with its driver (`pg`, `pg-copy-streams`) only when a job has one:
// `descriptor.ts` (this module: what the registry knows of it), `connection-settings.ts`
// (`sinks.postgres` resolved: password or `DATABASE_URL`-style url from `${ENV}` or a mounted file,
// registered with the scrubber; `uncheckedPostgresSecrets` for `validate`), `postgres-client.ts`
// (one connection as PgBouncer's transaction pooling allows: libpq's sslmode meanings,
// `application_name` `tilehouse <job>`, every setting `SET LOCAL` in `begin`), `postgres-plan.ts`
// (the target, columns with their PostgreSQL types, lineage, merge key, partition column, resolved
// before anything is sent), `postgres-sink.ts` (`PostgresSink`: open, sweep of staging tables whose
// run is gone, plan, `checkAccess`: server version, read-only, missing privileges), `postgres-
// writer.ts` (open = one transaction: UNLOGGED staging table + `COPY … FROM STDIN` streamed with
// backpressure; prepare = row count, `staging-checks.ts`, COMMIT; abort = CopyFail or DROP), `copy-
// encoder.ts` (a row as COPY text, exact), `publish.ts` (the one short publishing transaction:
// advisory xact lock, ledger read, table ready, rows moved, ledger row, staging dropped, COMMIT;
// retried on 40001/40P01/55P03/lost connection within `publishBudgetMs`, a lost COMMIT judged by
// the ledger), `publish-statements.ts` (each write mode's statements: replace = DELETE + INSERT,
// never TRUNCATE or a swap), `run-ledger.ts` (`_tilehouse_runs`, written in the publishing
// transaction), `table-columns.ts` (the table's columns from the catalogue, the schema contract),
// `target-holding.ts` (the publish guard's read), `window-state.ts` (the windows the ledger holds,
// for `--resume` and incremental runs), `workspace-checks.ts`, `sql-names.ts` (quoting, the type
// map, the ledger and staging names), `postgres-errors.ts` (failures by what they are: the SQLSTATE
// of a server's own error, Node's socket codes, a connection the client saw end; `disk_full`,
// `permission_denied`, `postgres_read_only`, `postgres_auth_failed`, `publish_outcome_unknown`, ...)

import { ConfigError } from '../../config/config-error.js';
import { keyedWindowsProblems } from '../../config/merge-key-options.js';
import { guardSettingsOf } from '../../config/publish-guard-schema.js';
import { postgresSinkSchema } from '../../config/postgres-sink-schema.js';
import type { KindSecret, SinkKind } from '../sink-kind.js';
import { postgresWorkspaceChecker } from './workspace-checks.js';
import { postgresWindowStateReaders } from './window-state.js';

/** Its keys in the credentials Secret (kubectl create secret generic tilehouse-credentials --from-file=postgres-password=…). */
export const POSTGRES_SECRET_KEYS = { password: 'postgres-password', url: 'postgres-url' } as const;

/** The PostgreSQL sink, as the rest of tilehouse sees it. */
export const postgresSinkKind: SinkKind = {
  type: 'postgres',
  label: 'PostgreSQL',
  configSchema: postgresSinkSchema,
  // Which table and which rows it keeps (mode, key, the days replaced, new columns or not); not the guard.
  definitionSettings: {
    decides: ['type', 'table', 'postgresSchema', 'writeMode', 'schema', 'partitionBy', 'primaryKey', 'latestBy'],
    decidesNot: ['guard'],
  },
  // Every postgres writer names its dataset with its server (PostgresWriter.lineageDataset); the
  // target's `schema.table` alone cannot, so this is only what a writer that never opened leaves.
  lineage: { dataset: (target) => ({ namespace: 'postgres', name: target }) },
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
    return { sink, problems: sink.type === 'postgres' ? keyedWindowsProblems(sink, index, job.file) : [] };
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
