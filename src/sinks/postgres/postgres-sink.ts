import type { Logger } from 'pino';
import type { PostgresDefaults } from '../../config/environment-schema.js';
import type { PostgresSinkConfig } from '../../config/postgres-sink-schema.js';
import { countNoun } from '../../count-noun.js';
import { isTilehouseError, messageOf } from '../../errors.js';
import { DEFAULT_STOP_DEADLINE_MS } from '../../stop-deadline.js';
import { howStrayTempGoes } from '../owned-temp-files.js';
import { FOREIGN_TEMP_MAX_AGE_MS, ownerState, parseOwnerTag } from '../../temp-owner.js';
import type { GuardSettings } from '../../config/publish-guard-schema.js';
import type { GuardCheck } from '../publish-guard.js';
import type {
  AccessCheckContext,
  LeftoverSurvey,
  PlannedDataset,
  PlannedDatasetContext,
  Sink,
  SinkPlan,
  SinkRunContext,
  SinkWriter,
  StoredSchema,
  TargetPublication,
} from '../sink.js';
import { type PostgresConnection, postgresLineageDataset, resolvePostgresConnection } from './connection-settings.js';
import { copyRowEncoder } from './copy-encoder.js';
import { closeQuietly, connectPostgres } from './postgres-client.js';
import { PostgresPermissionError, PostgresReadOnlyError } from './postgres-errors.js';
import { configuredTarget, type PostgresPlan, resolvePlan, tableColumns } from './postgres-plan.js';
import { PostgresWriter } from './postgres-writer.js';
import { latestPublish } from './run-ledger.js';
import { LEDGER_TABLE, qualifiedName, STAGING_PREFIX } from './sql-names.js';
import { contractDecision, readTableColumns } from './table-columns.js';
import { postgresHolding } from './target-holding.js';

export interface PostgresSinkOptions {
  config: PostgresSinkConfig;
  settings: PostgresDefaults;
  /** The environment file, for the errors that locate a secret. */
  environmentFile: string;
  /** The job's IANA zone: a TIMESTAMP partition column's days. */
  timezone: string;
  stopDeadlineMs?: number;
  guard: GuardSettings | undefined;
  /** Where `${ENV}` references are read; default process.env. */
  env?: Readonly<Record<string, string | undefined>>;
}

/** What a ledger row's `rows` counted, by the run's write mode: `merged 0 changed rows`, `appended 120 rows`. */
function ledgerRowsSaid(writeMode: string, rows: number): string {
  switch (writeMode) {
    case 'merge':
      return `merged ${countNoun(rows, 'changed row')}`;
    case 'append':
      return `appended ${countNoun(rows, 'row')}`;
    case 'partition':
      return `wrote ${countNoun(rows, 'row')} into the days it replaced`;
    default:
      return `wrote ${countNoun(rows, 'row')} (${writeMode})`;
  }
}

/**
 * Writes each tile run into a PostgreSQL table: COPY into a staging table as pages arrive, then
 * one short publishing transaction with the run ledger row (postgres-writer.ts, publish.ts).
 * The connection's secrets are read on first use, so `validate` never needs them.
 */
export class PostgresSink implements Sink {
  readonly kind = 'postgres' as const;
  // A remote transaction under lock and statement timeouts is likelier to fail than a local rename: it publishes first.
  readonly publishRank = 0;
  private connection: Promise<PostgresConnection> | undefined;

  constructor(private readonly options: PostgresSinkOptions) {}

  private resolved(): Promise<PostgresConnection> {
    this.connection ??= resolvePostgresConnection(this.options.settings, this.options.environmentFile, this.options.env);
    return this.connection;
  }

  private planOf(context: Pick<SinkRunContext, 'jobName' | 'columns' | 'window'>): PostgresPlan {
    return resolvePlan(this.options.config, context, { schema: this.options.settings.schema, timezone: this.options.timezone });
  }

  async open(context: SinkRunContext): Promise<SinkWriter> {
    const plan = this.planOf(context);
    return PostgresWriter.open(plan, {
      connection: await this.resolved(),
      context,
      encodeRow: copyRowEncoder(plan.columns),
      stopDeadlineMs: this.options.stopDeadlineMs ?? DEFAULT_STOP_DEADLINE_MS,
      guard: this.options.guard,
    });
  }

  /**
   * Drops the staging tables of runs that are gone: their owner process provably ended (same
   * machine), or older than a day (another machine's). A staging table outlives its run only when
   * the process died between prepare's COMMIT and the publish.
   */
  async sweep(logger: Logger): Promise<string[]> {
    const connection = await this.resolved();
    // The schema this sink's staging tables go to (the sink's own, else the environment's).
    const schema = this.options.config.postgresSchema ?? connection.schema;
    const removed: string[] = [];
    let client: Awaited<ReturnType<typeof connectPostgres>> | undefined;
    try {
      // Connecting inside: a server out of reach is this one warning line, not a second with a stack from sweepSinks.
      client = await connectPostgres(connection, { jobName: 'sweep', target: `${schema}.${STAGING_PREFIX}*` }, { connectTimeoutMs: 10_000 });
      const found = await client.query<{ name: string; note: string | null }>(
        `SELECT c.relname AS name, obj_description(c.oid, 'pg_class') AS note FROM pg_catalog.pg_class c
           JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r' AND starts_with(c.relname, $2)`,
        [schema, STAGING_PREFIX],
      );
      for (const { name, note } of found.rows) {
        if (!stagingIsStale(note)) continue;
        await client.query(`DROP TABLE IF EXISTS ${qualifiedName(schema, name)}`);
        removed.push(`${schema}.${name}`);
      }
    } catch (error) {
      logger.warn({ schema, error: messageOf(error) }, 'could not sweep PostgreSQL staging tables');
    } finally {
      await closeQuietly(client);
    }
    if (removed.length > 0) logger.info({ removed }, 'dropped PostgreSQL staging tables of runs that are gone');
    return removed;
  }

  /**
   * The staging tables in this sink's schema that no live run owns (a run killed between
   * prepare's COMMIT and its publish, a drop that failed), with how each goes: the next run's
   * sweep, or DROP TABLE by hand. Staging tables do not name their job: every job of the schema's. Reads only.
   */
  async leftovers({ logger }: { logger: Logger }): Promise<LeftoverSurvey> {
    let schema = this.options.config.postgresSchema ?? this.options.settings.schema;
    let client: Awaited<ReturnType<typeof connectPostgres>> | undefined;
    try {
      const connection = await this.resolved();
      schema = this.options.config.postgresSchema ?? connection.schema;
      client = await connectPostgres(connection, { jobName: 'status', target: `${schema}.${STAGING_PREFIX}*` }, { connectTimeoutMs: 10_000 });
      const found = await client.query<{ name: string; note: string | null }>(
        `SELECT c.relname AS name, obj_description(c.oid, 'pg_class') AS note FROM pg_catalog.pg_class c
           JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r' AND starts_with(c.relname, $2)
           ORDER BY c.relname`,
        [schema, STAGING_PREFIX],
      );
      const left = found.rows.flatMap(({ name, note }) => {
        const goes = howStagingGoes(note);
        const qualified = qualifiedName(schema, name);
        return goes === undefined
          ? []
          : [{ what: `PostgreSQL staging table ${schema}.${name}`, goes: `${goes}; or by hand, in the database: DROP TABLE ${qualified};` }];
      });
      return { where: `schema ${schema}`, found: left };
    } catch (error) {
      logger.debug({ schema, error: messageOf(error) }, 'could not look for PostgreSQL staging tables');
      return { where: `schema ${schema}`, unchecked: messageOf(error) };
    } finally {
      await closeQuietly(client);
    }
  }

  /** The table's columns against the tile's, under the contract. Reads only. */
  async plan(context: SinkRunContext): Promise<SinkPlan> {
    const { schema, table } = configuredTarget(this.options.config, this.options.settings.schema, context.jobName);
    let plan: PostgresPlan;
    try {
      plan = this.planOf(context);
    } catch (error) {
      if (!isTilehouseError(error)) throw error;
      return { sink: 'postgres', target: `${schema}.${table}`, action: 'refuse', details: [`${error.code}: ${error.message}`] };
    }
    const client = await connectPostgres(await this.resolved(), { jobName: context.jobName, target: plan.target });
    try {
      const decision = contractDecision(await readTableColumns(client, plan.schema, plan.table), tableColumns(plan), plan.contract);
      const mode = plan.merge ? { mode: `merge on ${plan.merge.keys.join(', ')}${plan.merge.latestBy ? `, latest by ${plan.merge.latestBy}` : ''}` } : {};
      switch (decision.action) {
        case 'create':
          return {
            sink: 'postgres',
            target: plan.target,
            ...mode,
            action: 'create',
            details: tableColumns(plan).map((column) => `+ ${column.name} ${column.postgresType}`),
          };
        case 'unchanged':
          return { sink: 'postgres', target: plan.target, ...mode, action: 'unchanged', details: [] };
        case 'add':
          return {
            sink: 'postgres',
            target: plan.target,
            ...mode,
            action: 'change',
            details: decision.columns.map((column) => `+ ${column.name} ${column.postgresType}`),
          };
        case 'mismatch':
          return { sink: 'postgres', target: plan.target, ...mode, action: 'refuse', details: [...decision.differences, decision.hint] };
      }
    } finally {
      await closeQuietly(client);
    }
  }

  /**
   * Connects, and says the server's version and what the run may do there: a read-only server
   * (a replica) and each missing privilege (CREATE on the schema for a new table and the staging
   * tables; INSERT, SELECT and, by write mode, DELETE or UPDATE on an existing table) fail here,
   * named, before the first page is fetched. Reads only.
   */
  async checkAccess(context: AccessCheckContext): Promise<string | undefined> {
    const connection = await this.resolved();
    const { schema, table } = configuredTarget(this.options.config, connection.schema, context.jobName);
    const target = `${schema}.${table}`;
    const client = await connectPostgres(connection, { jobName: context.jobName, target });
    try {
      const server = await client.query<{
        version: string;
        read_only: string;
        schema_exists: boolean;
        can_create: boolean | null;
        table_exists: boolean;
        ledger_exists: boolean;
      }>(
        `SELECT current_setting('server_version') AS version, current_setting('transaction_read_only') AS read_only,
                EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = $1) AS schema_exists,
                CASE WHEN EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = $1) THEN has_schema_privilege($1, 'CREATE') END AS can_create,
                to_regclass($2) IS NOT NULL AS table_exists, to_regclass($3) IS NOT NULL AS ledger_exists`,
        // has_schema_privilege takes the schema's name as it is; to_regclass and has_table_privilege
        // parse their text as SQL does, so a table is its quoted qualified name.
        [schema, qualifiedName(schema, table), qualifiedName(schema, LEDGER_TABLE)],
      );
      const row = server.rows[0]!;
      const where = `postgres ${connection.host}:${connection.port}/${connection.database} ${target}`;
      if (row.read_only === 'on') throw new PostgresReadOnlyError(context.jobName, target, new Error('transaction_read_only is on'));
      const missing: string[] = [];
      if (!row.schema_exists) missing.push(`schema ${schema} does not exist`);
      else if (row.can_create !== true)
        missing.push(`CREATE on schema ${schema} (the staging tables${row.table_exists ? '' : ', the table'}${row.ledger_exists ? '' : ', the run ledger'})`);
      const lacksOn = async (relation: string, wanted: readonly string[]) => {
        const granted = await client.query<{ privilege: string; granted: boolean }>(
          'SELECT privilege, has_table_privilege($1, privilege) AS granted FROM unnest($2::text[]) AS privilege',
          [relation, wanted],
        );
        return granted.rows.filter((grant) => !grant.granted).map((grant) => grant.privilege);
      };
      // The run ledger, written by every publish in its transaction (absent: created, under CREATE on the schema).
      if (row.ledger_exists) {
        const lacking = await lacksOn(qualifiedName(schema, LEDGER_TABLE), ['SELECT', 'INSERT']);
        if (lacking.length > 0) missing.push(`${lacking.join(', ')} on table ${schema}.${LEDGER_TABLE} (the run ledger)`);
      }
      if (row.table_exists) {
        const wanted = [
          'SELECT',
          'INSERT',
          ...(this.options.config.writeMode === 'merge' ? ['UPDATE'] : []),
          ...(['replace', 'partition'].includes(this.options.config.writeMode) ? ['DELETE'] : []),
        ];
        const lacking = await lacksOn(qualifiedName(schema, table), wanted);
        if (lacking.length > 0) missing.push(`${lacking.join(', ')} on table ${target}`);
      }
      if (missing.length > 0)
        throw new PostgresPermissionError(context.jobName, target, new Error(`user ${connection.user} lacks ${missing.join('; ')}`), missing.join('; '));
      return `${where}: PostgreSQL ${row.version}; ${row.table_exists ? 'table exists' : 'table absent; a run creates it'}; user ${connection.user} has the privileges a ${this.options.config.writeMode} needs`;
    } finally {
      await closeQuietly(client);
    }
  }

  /**
   * The table a run writes, named by its server as the open writer names it (postgresLineageDataset:
   * `lineageNamespace` / `lineageDatabase` over host:port and database). Settings that name the
   * server in the clear name it without reading a secret (a run refused for an unset password still
   * names its table); a `url` holds the server inside the secret: one that does not resolve (a
   * `${ENV}` not set) cannot be named, and the run fails on that and says why.
   */
  async plannedDataset(context: PlannedDatasetContext): Promise<PlannedDataset> {
    const { settings } = this.options;
    const table = configuredTarget(this.options.config, settings.schema, context.jobName);
    const { lineageNamespace, lineageDatabase } = settings;
    if (settings.url === undefined && settings.urlFile === undefined && settings.host !== undefined && settings.database !== undefined)
      return postgresLineageDataset(
        { host: settings.host, port: settings.port ?? 5432, database: settings.database, lineageNamespace, lineageDatabase },
        table,
      );
    try {
      return postgresLineageDataset(await this.resolved(), table);
    } catch (error) {
      if (!isTilehouseError(error)) throw error;
      return { unknown: `the server is named in sinks.postgres.url, which does not resolve: ${error.code}` };
    }
  }

  /** The table's columns as a run creates them: the tile's, then the lineage columns, in PostgreSQL's types (`bigint`, `numeric(38,9)`). */
  storedSchema(context: Pick<SinkRunContext, 'jobName' | 'columns' | 'window'>): StoredSchema {
    try {
      return { fields: tableColumns(this.planOf(context)).map((column) => ({ name: column.name, type: column.postgresType })) };
    } catch (error) {
      if (!isTilehouseError(error)) throw error;
      return { unknown: `no table is written for these columns: ${error.message}` };
    }
  }

  /**
   * Which run wrote the table, for `status`: the run ledger's latest row for it (written in the
   * publish's own transaction, so it names the run whose rows are there), with the definition that
   * run recorded; a table the ledger names no run of: its rows counted, no run. The rows are what
   * the table holds: the ledger's for a replace, else counted (the ledger's are what that run moved).
   */
  async publication(context: SinkRunContext): Promise<TargetPublication> {
    const configured = configuredTarget(this.options.config, this.options.settings.schema, context.jobName);
    let target = `${configured.schema}.${configured.table}`;
    try {
      const connection = await this.resolved();
      const { schema, table } = configuredTarget(this.options.config, connection.schema, context.jobName);
      target = `${schema}.${table}`;
      const client = await connectPostgres(connection, { jobName: context.jobName, target }, { connectTimeoutMs: 10_000 });
      try {
        const exists = (await readTableColumns(client, schema, table)) !== undefined;
        if (!exists) return { sink: this.kind, target, state: 'none', readFrom: 'no table yet' };
        const run = await latestPublish(client, schema, target);
        const countRows = async () =>
          Number((await client.query<{ rows: string }>(`SELECT count(*)::text AS rows FROM ${qualifiedName(schema, table)}`)).rows[0]?.rows ?? 0);
        if (run !== undefined) {
          const written = {
            sink: this.kind,
            target,
            state: 'written',
            runId: run.runId,
            at: run.at,
            ...(run.definition === undefined ? {} : { definition: run.definition }),
          } as const;
          // A replace's ledger row counts what the table then held; any other mode's counts what the
          // run moved (a merge's changed rows, an append's, a window's days): not what the table holds.
          if (run.writeMode === 'replace') return { ...written, rows: run.rows, readFrom: 'the run ledger' };
          return { ...written, rows: await countRows(), readFrom: `rows counted; the run ledger: that run ${ledgerRowsSaid(run.writeMode, run.rows)}` };
        }
        return {
          sink: this.kind,
          target,
          state: 'unrecorded',
          rows: await countRows(),
          readFrom: 'rows counted',
          note: `no ${schema}.${LEDGER_TABLE} row names its run (a table tilehouse did not write, or emptied)`,
        };
      } finally {
        await closeQuietly(client);
      }
    } catch (error) {
      return { sink: this.kind, target, state: 'unreadable', readFrom: 'unreadable', note: messageOf(error) };
    }
  }

  guardCheck(context: SinkRunContext): GuardCheck {
    return {
      settings: this.options.guard,
      holding: async () => postgresHolding(this.planOf(context), await this.resolved(), context, this.options.guard?.recentRuns ?? 0),
    };
  }
}

/** Whether a staging table's comment says its run is gone (owner process ended, or a day old). */
/** How a staging table goes (the sweep's rule, stagingIsStale's); undefined for a live run's, or one tilehouse did not write. */
function howStagingGoes(note: string | null, now: number = Date.now()): string | undefined {
  let parsed: { owner?: unknown; createdAt?: unknown } | undefined;
  try {
    parsed = note === null ? undefined : (JSON.parse(note) as { owner?: unknown; createdAt?: unknown });
  } catch {
    parsed = undefined;
  }
  if (parsed === undefined || typeof parsed.createdAt !== 'string') return undefined;
  const owner = typeof parsed.owner === 'string' ? parseOwnerTag(parsed.owner) : undefined;
  const state = owner === undefined ? 'unknown' : ownerState(owner);
  if (state === 'self' || state === 'alive') return undefined;
  return howStrayTempGoes({ location: '', owner: state, modifiedMs: Date.parse(parsed.createdAt) }, now);
}

function stagingIsStale(note: string | null): boolean {
  let parsed: { owner?: unknown; createdAt?: unknown } | undefined;
  try {
    parsed = note === null ? undefined : (JSON.parse(note) as { owner?: unknown; createdAt?: unknown });
  } catch {
    parsed = undefined;
  }
  // Not one of ours (no note tilehouse wrote): left alone.
  if (parsed === undefined || typeof parsed.createdAt !== 'string') return false;
  if (Date.now() - Date.parse(parsed.createdAt) > FOREIGN_TEMP_MAX_AGE_MS) return true;
  const owner = typeof parsed.owner === 'string' ? parseOwnerTag(parsed.owner) : undefined;
  return owner !== undefined && ownerState(owner) === 'gone';
}
