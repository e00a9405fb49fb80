import { tmpdir } from 'node:os';
import type { BigQuery } from '@google-cloud/bigquery';
import { createBigQueryClient } from './bigquery-client.js';
import type { BigQueryDefaults } from '../../config/environment-schema.js';
import type { BigQuerySinkConfig } from '../../config/job-schema.js';
import type { Logger } from 'pino';
import type {
  AccessCheckContext,
  LeftoverSurvey,
  PlannedDataset,
  PlannedDatasetContext,
  Sink,
  SinkPlan,
  SinkRunContext,
  SinkWindow,
  SinkWriter,
  StoredSchema,
  TargetPublication,
  WindowCheckContext,
} from '../sink.js';
import { latestPublication } from './run-ledger.js';
import { apiFailureOf, isNotFound } from './api-failure.js';
import { datasetAccessDenied, ensureDataset } from './ensure-dataset.js';
import { withRetry } from './retry.js';
import { readTable } from './read-table-schema.js';
import { checkSchemaContract, describeSchemaDiff } from './schema-contract.js';
import { BigQueryColumnConflictError, BigQueryProjectUnknownError, BigQueryRequestError, BigQueryWindowsExpiredError } from './bigquery-errors.js';
import { firstKeptDay, partitionExpired } from './partition-range.js';
import { lendLoggerToGoogleCredentials, runsAsNote } from '../google/google-credentials.js';
import { isTilehouseError, messageOf } from '../../errors.js';
import { countNoun } from '../../count-noun.js';
import { jobLabels } from './job-labels.js';
import { describeLayout, reconcileLayout, resolveTableLayout, type TableLayout, type TableMetadataLike } from './table-layout.js';
import { describeTableOperations } from './table-operations.js';
import type { BigQueryPlan } from './bigquery-plan.js';
import { BigQueryWriter } from './bigquery-writer.js';
import { rowEncoder } from './encode-row.js';
import { isLineageColumn, LINEAGE_COLUMNS } from './lineage.js';
import { resolveMergeKey } from './merge-key.js';
import { NdjsonFile, removeStaleLoadFiles, strayLoadFiles } from './ndjson-file.js';
import { partitionDate, partitionDecorator } from './partition-date.js';
import type { RetryLimits } from '../../retry.js';
import { DEFAULT_REQUEST_TIMEOUT_MS, DEFAULT_RETRY_LIMITS, type RetryContext } from './retry.js';
import { DEFAULT_STOP_DEADLINE_MS } from '../../stop-deadline.js';
import { DEFAULT_JOB_POLLING, type JobPolling } from './run-job.js';
import { configuredTable, datasetName, lineageDatasetOfTable, sinkLabel, tableName, UNRESOLVED_PROJECT } from './table-name.js';
import type { GuardSettings } from '../../config/publish-guard-schema.js';
import type { GuardCheck, TargetHolding } from '../publish-guard.js';
import { bigqueryHolding, ledgerWrittenBy } from './target-holding.js';

export interface BigQuerySinkOptions {
  config: BigQuerySinkConfig;
  defaults: BigQueryDefaults;
  /** Default: a client for `defaults.projectId` with Application Default Credentials. */
  client?: BigQuery;
  /** Where load files are written (and swept); default: the OS temp directory. */
  tempDirectory?: string;
  /** The job's IANA zone: decides which day a `partition` run writes. Default UTC. */
  timezone?: string;
  /** Backoff for transient failures; tests shorten it. */
  retry?: RetryLimits;
  /** Job polling and load attempts; tests shorten it. */
  polling?: JobPolling;
  /** The environment's `stopDeadlineMs`: how long cleanup and a started publish may go on after a stop. */
  stopDeadlineMs?: number;
  /** The environment's `googleCredentialsWaitMs`, for the production client. */
  credentialsWaitMs?: number;
  /** The publish guard's settings in force (the sink's over sinks.bigquery.guard); undefined: off. */
  guard?: GuardSettings | undefined;
}

/**
 * Writes each tile run into BigQuery in two phases (see BigQueryWriter): prepare loads a local
 * NDJSON file with one load job into a staging table of the run (no streaming inserts: a load is
 * atomic, free, and leaves no streaming buffer behind); publish copies it onto the target with one
 * copy job (free, atomic):
 *
 * - `replace`: the table is the latest snapshot (a new table: copy with WRITE_TRUNCATE; an existing
 *   one: a query with WRITE_TRUNCATE_DATA, which keeps its metadata); with `partitionBy`, exactly
 *   the partitions the run's rows fall in are replaced, one copy each;
 * - `append`: WRITE_APPEND, rows carry `_run_id` and `_extracted_at`;
 * - `partition`: WRITE_TRUNCATE of one day partition (`table$YYYYMMDD`);
 * - `merge`: one MERGE statement by `primaryKey` (matched rows updated, new ones inserted), rows
 *   carry the `_run_id` and `_extracted_at` of the run that last wrote them.
 *
 * Every job carries labels (job, tile, run id, window).
 */
export class BigQuerySink implements Sink {
  readonly kind = 'bigquery' as const;
  // Publishes first: a remote copy job is likelier to fail than a local rename (CSV is 10).
  readonly publishRank = 0;
  private readonly client: BigQuery;

  constructor(private readonly options: BigQuerySinkOptions) {
    this.client = options.client ?? createProductionClient(options.defaults, options.credentialsWaitMs);
  }

  /**
   * Removes load files of runs whose process is gone. Staging tables are not swept: each expires a
   * day after its run created it, and listing datasets would need rights a run does not otherwise use.
   */
  async sweep(logger: Logger): Promise<string[]> {
    const removed = await removeStaleLoadFiles(this.options.tempDirectory ?? tmpdir());
    if (removed.length > 0) logger.info({ removed }, 'removed BigQuery load files of runs that are gone');
    return removed;
  }

  /**
   * The load files of runs that are not alive (`status`). Staging tables are not looked for, as
   * the sweep does not: each expires a day after its run made it, and listing datasets needs
   * rights a run does not otherwise use; what a run could not delete, its record names.
   */
  async leftovers(): Promise<LeftoverSurvey> {
    const directory = this.options.tempDirectory ?? tmpdir();
    try {
      return { where: directory, found: await strayLoadFiles(directory) };
    } catch (error) {
      return { where: directory, unchecked: messageOf(error) };
    }
  }

  /**
   * What a load would do to the table: its schema under the contract, its partitioning and
   * clustering (a bad column or an existing table partitioned otherwise is `refuse`, as the run
   * would be refused), and the table operations a day the job's schedule needs.
   */
  async plan(context: SinkRunContext): Promise<SinkPlan> {
    const fallbackTarget = tableName(configuredTable(this.options.config, this.options.defaults, context.jobName));
    let plan: BigQueryPlan;
    try {
      plan = await this.loadPlan(context);
    } catch (error) {
      if (!isTilehouseError(error)) throw error;
      return { sink: 'bigquery', target: fallbackTarget, action: 'refuse', details: [`${error.code}: ${error.message}`] };
    }
    const retry = { ...this.retryBase(context), ...(context.signal ? { signal: context.signal } : {}) };
    const table = await readTable(
      this.client,
      { projectId: plan.projectId, datasetId: plan.datasetId, tableId: plan.tableId, jobName: context.jobName },
      retry,
    );
    const target = tableName({ ...plan, tableId: plan.destinationTableId });
    const layoutLines = [
      ...describeLayout(plan.layout, plan.writeMode),
      ...describeTableOperations(this.options.config, context.schedule),
      ...tablePolicyLines(table?.metadata, plan.layout),
      ...mergeScopeLines(plan, table?.metadata),
    ];
    const decision = checkSchemaContract(table?.fields, plan.fields, plan.schema);
    if (decision.action === 'mismatch') {
      return { sink: 'bigquery', target, action: 'refuse', details: [describeSchemaDiff(decision.diff), decision.hint, ...layoutLines] };
    }
    let changes: string[] = [];
    if (table) {
      try {
        changes = reconcileLayout(table.metadata, plan.layout, plan.writeMode, { jobName: context.jobName, table: tableName(plan) }).changes;
      } catch (error) {
        if (!isTilehouseError(error)) throw error;
        return { sink: 'bigquery', target, action: 'refuse', details: [`${error.code}: ${error.message}`, ...layoutLines] };
      }
    }
    const changeLines = changes.map((change) => `~ ${change}`);
    const mode = plan.merge ? { mode: `merge on ${plan.merge.columns.join(', ')}${plan.merge.latestBy ? `, latest by ${plan.merge.latestBy}` : ''}` } : {};
    switch (decision.action) {
      case 'created':
        return {
          sink: 'bigquery',
          target,
          ...mode,
          action: 'create',
          details: [...plan.fields.map((field) => `+ ${field.name} ${field.type}`), ...layoutLines],
        };
      case 'unchanged':
        return { sink: 'bigquery', target, ...mode, action: changes.length > 0 ? 'change' : 'unchanged', details: [...changeLines, ...layoutLines] };
      case 'added':
        return {
          sink: 'bigquery',
          target,
          ...mode,
          action: 'change',
          details: [...decision.columns.map((field) => `+ ${field.name} ${field.type}`), ...changeLines, ...layoutLines],
        };
    }
  }

  /**
   * The dataset exists, or (a run's check, createMissing) is created now, as prepare would create
   * it: a project or dataset these credentials cannot use fails here, before the first page.
   * Reads only for `tilehouse check`: an absent dataset is a note there.
   */
  async checkAccess(context: AccessCheckContext): Promise<string | undefined> {
    const { config, defaults } = this.options;
    lendLoggerToGoogleCredentials(context.logger);
    const projectId = defaults.projectId ?? (this.client.projectId !== UNRESOLVED_PROJECT ? this.client.projectId : await this.adcProject(context.jobName));
    const { datasetId } = configuredTable(config, defaults, context.jobName);
    const name = datasetName({ projectId, datasetId });
    const retry = { limits: this.options.retry ?? DEFAULT_RETRY_LIMITS, logger: context.logger, ...(context.signal ? { signal: context.signal } : {}) };
    if (context.createMissing === true) {
      const state = await ensureDataset(this.client, { projectId, datasetId, location: defaults.location, jobName: context.jobName }, retry);
      return `bigquery dataset ${name}: ${state.created ? `created in ${defaults.location}` : 'exists'}${await runsAsNote()}`;
    }
    try {
      await withRetry('datasets.get', () => this.client.dataset(datasetId, { projectId }).getMetadata(), retry);
      // The table's own policies (set by a warehouse team or an earlier run), which change what a run does there.
      const { tableId } = configuredTable(config, defaults, context.jobName);
      // Best effort: a table that cannot be read here is the run's to report, not the dataset check's.
      const table = await readTable(this.client, { projectId, datasetId, tableId, jobName: context.jobName }, retry).catch(() => undefined);
      const policies = tablePolicyLines(table?.metadata, {});
      return `bigquery dataset ${name}: exists${policies.length > 0 ? `; table ${tableId}: ${policies.join('; ')}` : ''}${await runsAsNote()}`;
    } catch (error) {
      const failure = apiFailureOf(error);
      if (isNotFound(failure)) return `bigquery dataset ${name}: absent; a run creates it in ${defaults.location}${await runsAsNote()}`;
      if (failure.status === 403) throw await datasetAccessDenied(context.jobName, name, 'bigquery.datasets.get', failure, error);
      throw new BigQueryRequestError(context.jobName, `reading dataset ${name}`, failure.messages, { cause: error });
    }
  }

  /**
   * A backfill's windows against the target's partition expiration (the job's
   * partitionExpirationDays, which publish sets on the table, else the table's own), before the
   * first page. Only where a window's rows are known to lie in its days: `partition` mode (the
   * window's first day is the partition) and a `partitionBy` column the windows filter on. A window
   * counts as expired when even the partition of its end day is (conservative by a day, for a
   * TIMESTAMP column's UTC days). All windows expired, or any under --strict: refused
   * (bigquery_windows_expired, exit 2). Some: a warning; their rows are counted at publish.
   */
  async checkWindows(windows: readonly SinkWindow[], context: WindowCheckContext): Promise<void> {
    const { config, defaults } = this.options;
    const windowed =
      config.writeMode === 'partition' ||
      (config.partitionBy !== undefined && context.windowColumns.some((name) => name.toLowerCase() === config.partitionBy!.column.toLowerCase()));
    if (!windowed || windows.length === 0) return;
    const projectId = defaults.projectId ?? (this.client.projectId !== UNRESOLVED_PROJECT ? this.client.projectId : await this.adcProject(context.jobName));
    const { datasetId, tableId } = configuredTable(config, defaults, context.jobName);
    const retry = { limits: this.options.retry ?? DEFAULT_RETRY_LIMITS, logger: context.logger, ...(context.signal ? { signal: context.signal } : {}) };
    const table = await readTable(this.client, { projectId, datasetId, tableId, jobName: context.jobName }, retry);
    const configured = config.partitionExpirationDays === undefined ? undefined : Math.round(config.partitionExpirationDays * 86_400_000);
    const existing = table?.metadata.timePartitioning?.expirationMs;
    const expirationMs = configured ?? (existing ? Number(existing) : undefined);
    if (expirationMs === undefined || !Number.isFinite(expirationMs)) return;
    const monthly = config.writeMode !== 'partition' && (config.partitionBy?.granularity === 'month' || table?.metadata.timePartitioning?.type === 'MONTH');
    const now = Date.now();
    const lastDay = (window: SinkWindow) => (config.writeMode === 'partition' ? window.from : window.to);
    const idOf = (day: string) => (monthly ? day.slice(0, 7) : day).replaceAll('-', '');
    const expired = windows.filter((window) => partitionExpired(idOf(lastDay(window)), expirationMs, now)).map((window) => window.from);
    if (expired.length === 0) return;
    const target = tableName({ projectId, datasetId, tableId });
    const error = new BigQueryWindowsExpiredError(
      context.jobName,
      target,
      expirationMs,
      expired,
      windows.length,
      firstKeptDay(expirationMs, now),
      context.strict,
    );
    if (expired.length === windows.length || context.strict) throw error;
    context.logger.warn(
      { target, expired, expirationMs },
      `job ${context.jobName}: ${expired.length} of ${windows.length} windows lie beyond the partition expiration of ${target}; their rows are published and dropped by BigQuery at once, and counted as expiredRows`,
    );
  }

  async open(context: SinkRunContext): Promise<SinkWriter> {
    const plan = await this.loadPlan(context);
    const file = await NdjsonFile.create(this.options.tempDirectory ?? tmpdir(), context.jobName, context.runId);
    const lineage = writesLineage(plan.writeMode) ? { runId: context.runId, extractedAt: context.startedAt } : undefined;
    return new BigQueryWriter(plan, {
      client: this.client,
      file,
      encodeRow: rowEncoder(context.columns, lineage),
      context,
      retry: this.retryBase(context),
      polling: this.options.polling ?? DEFAULT_JOB_POLLING,
      stopDeadlineMs: this.options.stopDeadlineMs ?? DEFAULT_STOP_DEADLINE_MS,
      guard: { settings: this.options.guard, ledger: this.options.defaults.runLedger !== false },
    });
  }

  /**
   * The publish guard against the table as it is now, for `plan` and `check`: its numRows, the
   * day partition of `partition` mode, the run ledger's recent runs. The partitions a partitionBy
   * run replaces are known only from its rows: not judged here.
   */
  guardCheck(context: SinkRunContext): GuardCheck {
    return {
      settings: this.options.guard,
      holding: async (): Promise<TargetHolding> => {
        const plan = await this.loadPlan(context);
        const target = tableName({ ...plan, tableId: plan.destinationTableId });
        if (plan.layout.partition !== undefined && plan.writeMode === 'replace') {
          return {
            target,
            effect: 'replace',
            rows: undefined,
            readFrom: 'partitions',
            unreadable: 'the partitions a run replaces are known only from its rows',
          };
        }
        const retry = { ...this.retryBase(context), ...(context.signal ? { signal: context.signal } : {}) };
        const table = await readTable(
          this.client,
          { projectId: plan.projectId, datasetId: plan.datasetId, tableId: plan.tableId, jobName: context.jobName },
          retry,
        );
        const numRows = table?.metadata.numRows;
        const metadata = {
          exists: table !== undefined,
          numRows: numRows === undefined || numRows === null ? undefined : Number(numRows),
          partitioned: table?.metadata.timePartitioning != null,
        };
        const partitions = plan.writeMode === 'partition' ? [plan.destinationTableId.split('$')[1]!] : [];
        return bigqueryHolding(metadata, {
          client: this.client,
          plan,
          partitions,
          ledger: this.options.defaults.runLedger !== false,
          recentRuns: this.options.guard?.recentRuns ?? 0,
          location: plan.location,
          retry,
        });
      },
      ...(this.options.defaults.runLedger === false ? {} : { writtenBy: () => this.writtenByOf(context) }),
    };
  }

  /** The run the ledger says last published the table, with its definition: asked to explain a refusal. */
  private async writtenByOf(context: SinkRunContext): Promise<TargetHolding['writtenBy']> {
    const plan = await this.loadPlan(context);
    const retry = { ...this.retryBase(context), ...(context.signal ? { signal: context.signal } : {}) };
    return ledgerWrittenBy(this.client, plan, context.jobName, retry);
  }

  /**
   * The table's fields as a run creates them (loadPlan's): tilehouse's column types are BigQuery's
   * own names, and append and merge add `_run_id` and `_extracted_at`.
   */
  storedSchema(context: Pick<SinkRunContext, 'columns'>): StoredSchema {
    const fields = context.columns.map((column) => ({ name: column.name, type: column.type as string }));
    if (writesLineage(this.options.config.writeMode)) fields.push(...LINEAGE_COLUMNS.map((column) => ({ name: column.name, type: column.type as string })));
    return { fields };
  }

  /**
   * The table a run writes, as its writer's target names it (the project the environment names,
   * else the client's, else Application Default Credentials'), without the partition a run picks.
   */
  async plannedDataset(context: PlannedDatasetContext): Promise<PlannedDataset> {
    const { config, defaults } = this.options;
    const { datasetId, tableId } = configuredTable(config, defaults, context.jobName);
    try {
      const projectId = defaults.projectId ?? (this.client.projectId !== UNRESOLVED_PROJECT ? this.client.projectId : await this.adcProject(context.jobName));
      return lineageDatasetOfTable(tableName({ projectId, datasetId, tableId }));
    } catch (error) {
      return { unknown: `the table's project is not known: ${messageOf(error)}` };
    }
  }

  /**
   * Which run wrote the table, for `status`: the run ledger's latest row that published into it
   * (any partition), with the definition that run recorded; without a ledger (runLedger: false,
   * or none yet), the table's metadata: its rows and last change, no run.
   */
  async publication(context: SinkRunContext): Promise<TargetPublication> {
    const { config, defaults } = this.options;
    const { datasetId, tableId } = configuredTable(config, defaults, context.jobName);
    let target = sinkLabel({ datasetId, tableId });
    try {
      const projectId = defaults.projectId ?? (this.client.projectId !== UNRESOLVED_PROJECT ? this.client.projectId : await this.adcProject(context.jobName));
      target = tableName({ projectId, datasetId, tableId });
      const retry = { ...this.retryBase(context), ...(context.signal ? { signal: context.signal } : {}) };
      const dataset = { projectId, datasetId, location: defaults.location };
      const run = defaults.runLedger === false ? undefined : await latestPublication(this.client, dataset, context.jobName, tableId, retry);
      if (run !== undefined) {
        const { definition } = run;
        const written = {
          sink: this.kind,
          target,
          state: 'written',
          runId: run.runId,
          at: run.startedAt,
          ...(definition === undefined ? {} : { definition }),
        } as const;
        // Only a whole-table replace's ledger row counts what the table holds; an append's, a
        // merge's (its inserted rows), a partition's count what that run published: the table's
        // own metadata says what it holds.
        if (config.writeMode === 'replace' && config.partitionBy === undefined) return { ...written, rows: run.rows, readFrom: 'the run ledger' };
        const held = await readTable(this.client, { projectId, datasetId, tableId, jobName: context.jobName }, retry);
        const numRows = (held?.metadata as { numRows?: unknown } | undefined)?.numRows;
        const published = `the run ledger: that run published ${countNoun(run.rows, 'row')}`;
        return numRows === undefined || numRows === null
          ? { ...written, readFrom: published }
          : { ...written, rows: Number(numRows), readFrom: `table metadata; ${published}` };
      }
      const table = await readTable(this.client, { projectId, datasetId, tableId, jobName: context.jobName }, retry);
      if (table === undefined) return { sink: this.kind, target, state: 'none', readFrom: 'no table yet' };
      const metadata = table.metadata as { numRows?: unknown; lastModifiedTime?: unknown };
      const modified = Number(metadata.lastModifiedTime);
      return {
        sink: this.kind,
        target,
        state: 'unrecorded',
        ...(Number.isFinite(modified) && modified > 0 ? { at: new Date(modified).toISOString() } : {}),
        ...(metadata.numRows === undefined || metadata.numRows === null ? {} : { rows: Number(metadata.numRows) }),
        readFrom: 'table metadata',
        note: `no run ledger row names its run${defaults.runLedger === false ? ' (sinks.bigquery.runLedger is false)' : ''}`,
      };
    } catch (error) {
      return { sink: this.kind, target, state: 'unreadable', readFrom: 'unreadable', note: messageOf(error) };
    }
  }

  private retryBase(context: SinkRunContext): Omit<RetryContext, 'signal'> {
    return {
      limits: this.options.retry ?? DEFAULT_RETRY_LIMITS,
      logger: context.logger,
      requestTimeoutMs: this.options.defaults.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
      ...(context.retryBudget ? { budget: context.retryBudget } : {}),
    };
  }

  /** The project of Application Default Credentials; asked only when the config names none. */
  private async adcProject(jobName: string): Promise<string> {
    try {
      return await this.client.getProjectId();
    } catch (error) {
      if (messageOf(error).includes(NO_PROJECT_FOUND)) throw new BigQueryProjectUnknownError(jobName, { cause: error });
      throw new BigQueryRequestError(jobName, 'finding the project of Application Default Credentials', [messageOf(error)], { cause: error });
    }
  }

  private async loadPlan(context: SinkRunContext): Promise<BigQueryPlan> {
    const { config, defaults } = this.options;
    const projectId = defaults.projectId ?? (this.client.projectId !== UNRESOLVED_PROJECT ? this.client.projectId : await this.adcProject(context.jobName));
    const { datasetId, tableId } = configuredTable(config, defaults, context.jobName);
    const fields = context.columns.map((column) => ({ name: column.name, type: column.type as string }));
    if (writesLineage(config.writeMode)) {
      const clash = fields.find((field) => isLineageColumn(field.name));
      if (clash) {
        throw new BigQueryColumnConflictError(context.jobName, tableName({ projectId, datasetId, tableId }), clash.name);
      }
      fields.push(...LINEAGE_COLUMNS.map((column) => ({ name: column.name, type: column.type as string })));
    }
    // Before anything is loaded: a partition or cluster column the tile lacks fails the run here.
    const layout = resolveTableLayout(config, context.columns, { jobName: context.jobName, sink: sinkLabel({ datasetId, tableId }) });
    const merge = resolveMergeKey(config, context.columns, { jobName: context.jobName, sink: sinkLabel({ datasetId, tableId }) });
    const destinationTableId = config.writeMode === 'partition' ? partitionDecorator(tableId, partitionDate(context, this.options.timezone ?? 'UTC')) : tableId;
    const identity = { jobName: context.jobName, datasetId, tableId, runId: context.runId, ...(context.window ? { window: context.window } : {}) };
    return {
      projectId,
      datasetId,
      tableId,
      destinationTableId,
      location: defaults.location,
      writeMode: config.writeMode,
      schema: config.schema,
      fields,
      identity,
      layout,
      ...(merge ? { merge } : {}),
      labels: jobLabels(identity, context.tileId),
    };
  }
}

/**
 * The table's own partition policies that the job does not set (those describeLayout shows): a
 * required partition filter, which every statement tilehouse sends there carries, and a
 * partition expiration, past which rows are dropped at once.
 */
function tablePolicyLines(metadata: TableMetadataLike | undefined, layout: TableLayout): string[] {
  const partitioning = metadata?.timePartitioning ?? undefined;
  if (!partitioning?.type) return [];
  const lines: string[] = [];
  const column = partitioning.field ?? '_PARTITIONTIME';
  const required = metadata?.requirePartitionFilter ?? (partitioning as { requirePartitionFilter?: boolean }).requirePartitionFilter ?? false;
  if (required && layout.requirePartitionFilter === undefined)
    lines.push(`the table requires a partition filter on ${column}: every query tilehouse sends there carries one`);
  if (partitioning.expirationMs && layout.partitionExpirationMs === undefined) {
    const days = Number(partitioning.expirationMs) / 86_400_000;
    lines.push(
      `the table's partitions expire after ${days} days: rows of partitions before ${firstKeptDay(Number(partitioning.expirationMs), Date.now())} are dropped at once`,
    );
  }
  return lines;
}

/**
 * Where a merge's MERGE matches keys in a column-partitioned table (see mergeTargetFilter): over
 * the whole table, unless the partition column is part of the key. Said in `plan`, with what it
 * costs.
 */
function mergeScopeLines(plan: BigQueryPlan, metadata: TableMetadataLike | undefined): string[] {
  const column = metadata?.timePartitioning?.field ?? plan.layout.partition?.field;
  if (plan.merge === undefined || column === undefined || column === null) return [];
  if (plan.merge.columns.some((key) => key.toLowerCase() === column.toLowerCase()))
    return [`the MERGE reads only the run's partitions: ${column} is part of the key, so a key's row lies in its partition`];
  return [
    `the MERGE matches keys over the whole table (a key whose ${column} changed is updated, not inserted again); with ${column} in primaryKey it would read only the run's partitions`,
  ];
}

/**
 * Whether rows carry `_run_id` and `_extracted_at`: in `append`, which run added them; in `merge`,
 * which run last wrote them (inserted or updated).
 */
function writesLineage(writeMode: BigQuerySinkConfig['writeMode']): boolean {
  return writeMode === 'append' || writeMode === 'merge';
}

/**
 * What google-auth-library says when Application Default Credentials name no project (no
 * GOOGLE_CLOUD_PROJECT, none in the credentials file or gcloud's config, no metadata server).
 */
const NO_PROJECT_FOUND = 'Unable to detect a Project Id';

/** Production client: see createBigQueryClient (ADC, or the emulator that BIGQUERY_EMULATOR_HOST names). */
function createProductionClient(defaults: BigQueryDefaults, credentialsWaitMs: number | undefined): BigQuery {
  return createBigQueryClient(defaults.projectId, process.env, { apiEndpoint: defaults.apiEndpoint, credentialsWaitMs });
}
