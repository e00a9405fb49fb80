import type { BigQuery } from '@google-cloud/bigquery';
import { messageOf } from '../../errors.js';
import type { TypedRow } from '../../transform/column.js';
import type { RunHeld, SinkResult, SinkRunContext, SinkWriter } from '../sink.js';
import type { BigQueryPlan } from './bigquery-plan.js';
import { cleanupDeadline } from '../../stop-deadline.js';
import { BigQueryJobTimeoutError, BigQueryPublishOutcomeUnknownError, BigQueryPartitionValueError, BigQuerySinkStateError } from './bigquery-errors.js';
import { inspectTarget, type TargetInspection } from './inspect-target.js';
import { stagingTableId } from './job-id.js';
import type { NdjsonFile } from './ndjson-file.js';
import { readyTarget } from './ready-target.js';
import { cancelJob, ranJobOf, type JobOutcome, type JobPolling } from './run-job.js';
import { schemaActionLabel } from './schema-contract.js';
import { loadIntoStaging } from './staging-load.js';
import { settleStagingKeys } from './check-staging-keys.js';
import { firstKeptDay, partitionExpired, rangeOfDays, rangeOfPartitionIds, stagingRangeQuery, type PartitionRange } from './partition-range.js';
import { publishJobs } from './publish-strategies.js';
import { countPublished, reconcilePublishedRows, rowCountWarnings } from './row-count-check.js';
import { withRetry, type RetryContext } from './retry.js';
import { createStagingTable, deleteStagingTable, type StagingTable } from './staging-table.js';
import { partitionIdOf, stagingTableOptions, type TableLayout } from './table-layout.js';
import { tableName } from './table-name.js';
import type { GuardSettings } from '../../config/publish-guard-schema.js';
import type { GuardCheck } from '../publish-guard.js';
import { bigqueryHolding, ledgerWrittenBy } from './target-holding.js';

interface WriterDependencies {
  client: BigQuery;
  file: NdjsonFile;
  encodeRow: (row: TypedRow) => string;
  context: SinkRunContext;
  /** Backoff policy and logger; the signal is added per phase (prepare has one, publish none). */
  retry: Omit<RetryContext, 'signal'>;
  polling: JobPolling;
  /** The environment's `stopDeadlineMs`: a stop ends publish and cleanup waits this long after it. */
  stopDeadlineMs: number;
  /** The publish guard's settings (undefined: off), and whether the run ledger is written (its recent runs). */
  guard?: { settings: GuardSettings | undefined; ledger: boolean };
}

/** What prepare found and did, for publish to build on. */
interface Prepared extends TargetInspection {
  load: JobOutcome;
  /** BigQuery's outputRows of the staging load, when it says (the emulator does not). */
  bigqueryRows: number | undefined;
  /**
   * The run's partition range, for a target partitioned by a column: what every statement that
   * reads the target carries (see partition-range.ts). Undefined for other targets.
   */
  range: PartitionRange | undefined;
  /** Rows that fall in partitions the target's expiration has already passed (see expiredRowsOf). */
  expiredRows: number | undefined;
}

type WriterState = 'open' | 'preparing' | 'prepared' | 'publishing' | 'published' | 'failed' | 'aborted';

/**
 * One run's writer, in two phases:
 *
 * - rows go to a local NDJSON file as pages arrive;
 * - `prepare` loads the whole file with one load job into a staging table of the run (same
 *   dataset, expires after a day): readers of the target see nothing of it;
 * - `publish` copies the staging table onto the target with the write mode's disposition (one
 *   atomic copy job), then deletes the staging table.
 *
 * The run's abort signal stops prepare's waits at once; publish and the cleanup go on after a
 * stop, because once the copy is in BigQuery's hands the only honest summary is its outcome, but
 * only until the cleanup deadline (`stopDeadlineMs`, see stop-deadline.ts). Whatever is then still
 * unanswered is abandoned and named: `leftBehind()` for a staging table or load, and
 * BigQueryPublishOutcomeUnknownError for a publish job.
 */
export class BigQueryWriter implements SinkWriter {
  private state: WriterState = 'open';
  private rows = 0;
  /** The partition ids the run's rows fall in (`partitionBy`), each with its row count, collected as rows are encoded. */
  private readonly partitions = new Map<string, number>();
  private prepared: Prepared | undefined;
  /** Whether a staging table may exist (its create was sent), so abort knows to delete it. */
  private stagingMayExist = false;
  /** The staging load while it may still be running, so abort can cancel it. */
  private runningLoad: { jobId: string; location: string | undefined } | undefined;
  /** The prepare or publish in flight, which abort lets settle before it cleans up. */
  private inFlight: Promise<unknown> | undefined;
  /** Stops prepare's waits when abort comes while prepare is still running. */
  private readonly stopPrepare = new AbortController();
  private readonly staging: StagingTable;
  /** Aborts `stopDeadlineMs` (less the summary's margin) after a stop; ends publish's and cleanup's waits. */
  private readonly deadline: AbortSignal | undefined;
  /** Publish job inserts sent (answered or not), for the message when their outcome is not known. */
  private readonly publishJobIds: string[] = [];
  /** What the cleanup could not remove, by name. */
  private readonly left: string[] = [];

  constructor(
    private readonly plan: BigQueryPlan,
    private readonly dependencies: WriterDependencies,
  ) {
    this.staging = {
      projectId: plan.projectId,
      datasetId: plan.datasetId,
      tableId: stagingTableId(plan.identity),
      jobName: dependencies.context.jobName,
    };
    this.deadline = cleanupDeadline(dependencies.context.signal, dependencies.stopDeadlineMs);
  }

  leftBehind(): string[] {
    return [...this.left];
  }

  /**
   * The publish guard: after prepare, what the target holds (target-holding.ts) from the
   * tables.get prepare made, the partitions the rows fall in, and the run ledger.
   */
  get guard(): GuardCheck | undefined {
    const guard = this.dependencies.guard;
    if (guard === undefined) return undefined;
    return {
      settings: guard.settings,
      holding: () => {
        const prepared = this.prepared;
        if (prepared === undefined)
          throw new BigQuerySinkStateError(`job ${this.dependencies.context.jobName}: the publish guard of ${this.target} was asked before prepare`);
        const { context } = this.dependencies;
        // `partition` mode replaces its one day partition (the decorator's); partitionBy, those its rows fall in.
        const partitions = this.plan.writeMode === 'partition' ? [this.plan.destinationTableId.split('$')[1]!] : [...this.partitions.keys()];
        return bigqueryHolding(prepared.metadata, {
          client: this.dependencies.client,
          plan: this.plan,
          partitions,
          ledger: guard.ledger,
          recentRuns: guard.settings?.recentRuns ?? 0,
          location: prepared.location,
          retry: { ...this.dependencies.retry, ...(context.signal ? { signal: context.signal } : {}) },
        });
      },
      ...(guard.ledger
        ? {
            writtenBy: () => {
              const { context } = this.dependencies;
              return ledgerWrittenBy(this.dependencies.client, this.plan, context.jobName, {
                ...this.dependencies.retry,
                ...(context.signal ? { signal: context.signal } : {}),
              });
            },
          }
        : {}),
    };
  }

  get target(): string {
    return tableName({ ...this.plan, tableId: this.plan.destinationTableId });
  }

  /**
   * Whether a publish job of this run id ran (its job ids are the run's: job-id.ts), looked up by
   * id after prepare: the copy or query, or each partition's copy under `partitionBy`. Any one
   * that ran means an earlier try published here.
   */
  async heldRun(): Promise<RunHeld> {
    const prepared = this.prepared;
    if (prepared === undefined)
      throw new BigQuerySinkStateError(`job ${this.dependencies.context.jobName}: whether ${this.target} holds the run was asked before prepare`);
    const { client, context, polling } = this.dependencies;
    const partitionCopies = this.plan.layout.partition && this.plan.writeMode === 'replace' && !this.plan.merge;
    const stages = partitionCopies ? [...this.partitions.keys()].sort().map((id) => `publish_${id}` as const) : (['publish'] as const);
    const retry: RetryContext = { ...this.dependencies.retry, ...(context.signal ? { signal: context.signal } : {}) };
    const base = { sink: 'bigquery' as const, target: this.target };
    for (const stage of stages) {
      const ran = await ranJobOf({
        client,
        projectId: this.plan.projectId,
        stage,
        identity: this.plan.identity,
        location: prepared.location,
        jobName: context.jobName,
        target: this.target,
        retry,
        polling,
      });
      if (ran === undefined) continue;
      const statistics = ran.metadata.statistics as { copy?: { copiedRows?: string }; query?: { dmlStats?: { insertedRowCount?: string } } } | undefined;
      const reported = statistics?.copy?.copiedRows ?? statistics?.query?.dmlStats?.insertedRowCount;
      // A job that says no count (a truncating query; the emulator's jobs) is counted at the target, as an adopted publish is.
      const by = this.plan.merge ? 'merge query' : partitionCopies ? 'partition copies' : 'copy';
      const counted =
        reported !== undefined && stages.length === 1
          ? Number(reported)
          : await countPublished({ client, plan: this.plan, context, target: this.target, retry }, by, prepared.range);
      return {
        ...base,
        held: 'yes',
        ...(counted === undefined ? {} : { rows: counted }),
        readFrom: `its publish job ${ran.jobId}`,
        details: { jobId: ran.jobId },
      };
    }
    return { ...base, held: 'no', readFrom: 'its publish job ids' };
  }

  async writeRows(rows: readonly TypedRow[]): Promise<void> {
    this.expectState('open', 'writeRows');
    const { encodeRow, file } = this.dependencies;
    const partition = this.plan.layout.partition;
    // The partitions are collected here rather than asked of the staging table afterwards (a
    // query job per run, billed, and one more thing to fail): the values pass by anyway.
    if (partition) for (const row of rows) this.addPartition(row[partition.columnIndex] ?? null, partition);
    // Encoded lazily: the file takes ~64 KiB chunks, so at most one chunk of text is held at once.
    await file.writeLines(
      (function* () {
        for (const row of rows) yield encodeRow(row);
      })(),
    );
    this.rows += rows.length;
  }

  async prepare(): Promise<void> {
    this.expectState('open', 'prepare');
    this.state = 'preparing';
    const preparing = this.load();
    this.inFlight = preparing;
    try {
      this.prepared = await preparing;
      if (this.state === 'preparing') this.state = 'prepared';
    } catch (error) {
      if (this.state === 'preparing') this.state = 'failed';
      throw error;
    } finally {
      // The file is needed only by the load; whatever its outcome, it goes now.
      await this.dependencies.file.remove();
    }
    // An abort that came while the load was finishing wins: it has cleaned up the staging table.
    if ((this.state as WriterState) === 'aborted') {
      throw new BigQuerySinkStateError(`job ${this.dependencies.context.jobName}: the BigQuery writer of ${this.target} was aborted while preparing`);
    }
  }

  async publish(): Promise<SinkResult> {
    this.expectState('prepared', 'publish');
    this.state = 'publishing';
    const publishing = this.copy(this.prepared!);
    this.inFlight = publishing;
    try {
      const result = await publishing;
      this.state = 'published';
      return result;
    } catch (error) {
      this.state = 'failed';
      if (this.deadline?.aborted && this.publishJobIds.length > 0) {
        throw new BigQueryPublishOutcomeUnknownError(this.dependencies.context.jobName, this.target, this.publishJobIds, error);
      }
      throw error;
    }
  }

  /**
   * Before a successful publish: removes the load file, cancels a staging load that may still be
   * running, deletes the staging table. The target was never written. After publish: nothing.
   */
  async abort(): Promise<void> {
    if (this.state === 'published' || this.state === 'aborted') return;
    if (this.state === 'preparing') this.stopPrepare.abort(new Error('the BigQuery writer was aborted'));
    // A publish in flight is let finish: the copy's outcome is what the target holds.
    if (this.inFlight) await this.inFlight.catch(() => undefined);
    if ((this.state as WriterState) === 'published' || (this.state as WriterState) === 'aborted') return;
    this.state = 'aborted';
    await this.cleanUp();
  }

  private addPartition(value: TypedRow[number], partition: NonNullable<TableLayout['partition']>): void {
    const found = partitionIdOf(value, partition);
    if ('id' in found) {
      this.partitions.set(found.id, (this.partitions.get(found.id) ?? 0) + 1);
      return;
    }
    const shown =
      value === null
        ? 'null'
        : partition.columnType === 'TIMESTAMP' && Number.isFinite(Number(value)) && Math.abs(Number(value)) <= 8.64e15
          ? new Date(Number(value)).toISOString()
          : String(value);
    throw new BigQueryPartitionValueError(this.dependencies.context.jobName, partition.field, shown, found.invalid);
  }

  private async load(): Promise<Prepared> {
    const { context } = this.dependencies;
    const signal = context.signal ? AbortSignal.any([context.signal, this.stopPrepare.signal]) : this.stopPrepare.signal;
    try {
      return await this.loadStaging(signal);
    } catch (error) {
      // A wait cut short by the signal says only "The operation was aborted"; the reason says why.
      throw signal.aborted ? signal.reason : error;
    }
  }

  /**
   * Prepare, in steps: inspect the target (and refuse what could not be published), create the
   * staging table, load the file into it, and in merge mode check its keys. Nothing readers of
   * the target see changes.
   */
  private async loadStaging(signal: AbortSignal): Promise<Prepared> {
    const { client, file, context } = this.dependencies;
    const retry: RetryContext = { ...this.dependencies.retry, signal };
    await file.close();

    signal.throwIfAborted();
    const target = await inspectTarget(client, this.plan, this.partitions.size, { jobName: context.jobName, retry });

    signal.throwIfAborted();
    const stagingCreatedAt = await this.createStaging(retry);
    context.logger.info(
      { target: this.target, staging: this.staging.tableId, rows: this.rows, writeMode: this.plan.writeMode, schemaAction: target.decision.action },
      'loading into a BigQuery staging table',
    );
    const { load, bigqueryRows } = await this.runStagingLoad(target.location, stagingCreatedAt, retry, signal);
    if (this.plan.merge) {
      signal.throwIfAborted();
      await settleStagingKeys(client, this.plan, this.plan.merge, this.staging.tableId, { jobName: context.jobName, location: target.location, retry });
    }
    signal.throwIfAborted();
    const { range, expiredRows } = await this.rangeAndExpiry(target, retry);
    return { ...target, load, bigqueryRows, range, expiredRows };
  }

  /**
   * The run's partition range and its rows in expired partitions. With `partitionBy` both come from
   * the partition ids collected while the rows passed (no query); for a table partitioned by a
   * column the job does not name (made by hand), from one query of the staging table; in
   * `partition` mode the run's one day decides. A run without rows has an empty range.
   */
  private async rangeAndExpiry(target: TargetInspection, retry: RetryContext): Promise<{ range: PartitionRange | undefined; expiredRows: number | undefined }> {
    const { plan } = this;
    const partitioning = target.partitioning;
    if (partitioning === undefined) return { range: undefined, expiredRows: undefined };
    const expirationMs = partitioning.expirationMs;
    const now = Date.now();
    if (partitioning.field === undefined) {
      // Ingestion time: `partition` mode writes the decorator's day; other modes the day of the load.
      const day = plan.destinationTableId.includes('$') ? plan.destinationTableId.slice(plan.destinationTableId.indexOf('$') + 1) : undefined;
      const expired = expirationMs !== undefined && day !== undefined && partitionExpired(day, expirationMs, now);
      return { range: undefined, expiredRows: expirationMs === undefined || day === undefined ? undefined : expired ? this.rows : 0 };
    }
    const own = plan.layout.partition;
    if (own && own.field.toLowerCase() === partitioning.field.toLowerCase()) {
      const range =
        rangeOfPartitionIds(this.partitions.keys(), { field: partitioning.field, columnType: own.columnType }) ??
        emptyRange(partitioning.field, own.columnType);
      const expiredRows =
        expirationMs === undefined
          ? undefined
          : [...this.partitions].filter(([id]) => partitionExpired(id, expirationMs, now)).reduce((sum, [, rows]) => sum + rows, 0);
      return { range, expiredRows };
    }
    const field = plan.fields.find((candidate) => candidate.name.toLowerCase() === partitioning.field!.toLowerCase());
    if (field === undefined || (field.type !== 'DATE' && field.type !== 'TIMESTAMP')) return { range: undefined, expiredRows: undefined };
    const columnType = field.type;
    const keptFrom = expirationMs !== undefined && partitioning.type === 'DAY' ? firstKeptDay(expirationMs, now) : undefined;
    const query = stagingRangeQuery(tableName({ ...plan, tableId: this.staging.tableId }), field.name, columnType, keptFrom);
    const [rows] = await withRetry(
      'staging partition range',
      () => this.dependencies.client.query({ query, ...(target.location ? { location: target.location } : {}) }),
      retry,
    );
    const found = (rows as Array<{ lo?: string | null; hi?: string | null; expired?: unknown }>)[0];
    const range = found?.lo && found.hi ? rangeOfDays(field.name, columnType, found.lo, found.hi) : emptyRange(field.name, columnType);
    return { range, expiredRows: keptFrom === undefined ? undefined : Number(found?.expired ?? 0) };
  }

  /** Creates the run's staging table; from here on, abort deletes it. */
  private async createStaging(retry: RetryContext): Promise<number | undefined> {
    this.stagingMayExist = true;
    const { createdAt } = await createStagingTable(
      this.dependencies.client,
      this.staging,
      this.plan.fields,
      retry,
      undefined,
      stagingTableOptions(this.plan.layout),
    );
    return createdAt;
  }

  /** The load job, tracked while it may run so that an abort can cancel it. */
  private async runStagingLoad(
    location: string | undefined,
    stagingCreatedAt: number | undefined,
    retry: RetryContext,
    signal: AbortSignal,
  ): Promise<Awaited<ReturnType<typeof loadIntoStaging>>> {
    const { client, file, polling } = this.dependencies;
    try {
      const loaded = await loadIntoStaging({
        client,
        plan: this.plan,
        staging: this.staging,
        filePath: file.path,
        rows: this.rows,
        stagingCreatedAt,
        location,
        onJob: (job) => {
          this.runningLoad = job;
        },
        retry,
        polling,
      });
      this.runningLoad = undefined;
      return loaded;
    } catch (error) {
      // Only a wait that was cut short leaves a job that may still run; any other failure ended it.
      if (!signal.aborted && !(error instanceof BigQueryJobTimeoutError)) this.runningLoad = undefined;
      throw error;
    }
  }

  private async copy(prepared: Prepared): Promise<SinkResult> {
    const { plan, staging } = this;
    const { client, context, polling } = this.dependencies;
    // Not the stop signal, the cleanup's deadline: see the class comment.
    const retry: RetryContext = { ...this.dependencies.retry, ...(this.deadline ? { signal: this.deadline } : {}) };

    await readyTarget(client, plan, prepared.decision, prepared.existing, prepared.reconciliation, { jobName: context.jobName, retry });
    context.logger.info({ target: this.target, staging: staging.tableId, writeMode: plan.writeMode }, 'publishing the BigQuery staging table');
    const published = await publishJobs({
      client,
      plan,
      staging,
      target: this.target,
      context,
      polling,
      prepared,
      partitions: [...this.partitions.keys()],
      retry,
      sentJobIds: this.publishJobIds,
    });
    // Published whatever this says; a staging table left is named in the result's details.
    const stagingGone = await deleteStagingTable(client, staging, retry);

    const count = { client, plan, context, target: this.target, retry };
    const counted = await reconcilePublishedRows(count, published, prepared, this.rows);
    const { rows, expiredRows, atTarget, reported, adopted, keptEarlier, merged } = counted;
    const last = published.jobs.at(-1);
    const warnings = rowCountWarnings(count, counted, this.rows, last?.jobId, prepared.partitioning?.expirationMs);
    return {
      sink: 'bigquery',
      target: this.target,
      rows,
      ...(keptEarlier ? { keptEarlierPublish: true } : {}),
      ...(adopted ? { adopted: true } : {}),
      ...(expiredRows > 0 ? { expiredRows } : {}),
      ...(warnings.length > 0 ? { warnings } : {}),
      details: {
        // Said only in the unusual case: the count was read at the target.
        ...(atTarget !== undefined ? { rowsFrom: 'target' } : {}),
        // An adopted job without a count, and a target that could not be counted: `rows` is then
        // only this run's load, and the summary must not pass it off as what was published.
        ...(adopted && reported === undefined && atTarget === undefined ? { rowsFrom: 'this run (not verified at the target)' } : {}),
        jobId: last?.jobId ?? '',
        loadJobId: prepared.load.jobId,
        writeMode: plan.writeMode,
        schemaAction: schemaActionLabel(prepared.decision),
        publishedBy: published.by,
        sentRows: this.rows,
        // The load file's size: what the run needed of its temp directory at the peak.
        ...(this.dependencies.file.bytes !== undefined ? { loadFileBytes: this.dependencies.file.bytes } : {}),
        // The emulator reports no load statistics: then nothing was compared, and the summary says so.
        rowCountChecked: prepared.bigqueryRows !== undefined,
        ...(prepared.bigqueryRows !== undefined ? { bigqueryRows: prepared.bigqueryRows } : {}),
        ...(plan.layout.partition ? { partitions: [...this.partitions.keys()].sort().join(',') } : {}),
        ...(prepared.range ? { partitionRange: `${prepared.range.from}..${prepared.range.until}` } : {}),
        ...(prepared.partitioning?.expirationMs !== undefined ? { partitionExpirationDays: prepared.partitioning.expirationMs / MS_PER_DAY } : {}),
        ...(adopted ? { adopted: true } : {}),
        ...(stagingGone ? {} : { stagingLeft: tableName({ ...plan, tableId: staging.tableId }) }),
        ...merged,
      },
    };
  }

  /**
   * Best effort throughout: each step is tried, failures are logged and what stays is named in
   * `leftBehind()` (the staging table expires anyway). After a stop, bounded by the cleanup deadline.
   */
  private async cleanUp(): Promise<void> {
    const { client, file, context } = this.dependencies;
    const retry: RetryContext = { ...this.dependencies.retry, ...(this.deadline ? { signal: this.deadline } : {}) };
    await file.remove();
    const running = this.runningLoad;
    this.runningLoad = undefined;
    if (running) {
      try {
        await cancelJob(client, { projectId: this.plan.projectId, ...running }, retry);
        context.logger.info({ jobId: running.jobId }, 'BigQuery staging load cancelled');
      } catch (error) {
        context.logger.warn({ jobId: running.jobId, error: messageOf(error) }, 'could not cancel the BigQuery staging load; it writes only the staging table');
        this.left.push(`BigQuery load job ${running.jobId} (may still run; writes only the staging table)`);
      }
    }
    if (this.stagingMayExist) {
      this.stagingMayExist = false;
      const staging = tableName(this.staging);
      if (!(await deleteStagingTable(client, this.staging, retry))) this.left.push(`BigQuery staging table ${staging} (expires within a day)`);
    }
  }

  private expectState(expected: WriterState, operation: string): void {
    if (this.state !== expected) {
      throw new BigQuerySinkStateError(
        `job ${this.dependencies.context.jobName}: bigquery ${this.target}: ${operation} called on a writer that is ${this.state}`,
      );
    }
  }
}

const MS_PER_DAY = 86_400_000;

/** A range no row lies in, for a run without rows: still a filter BigQuery takes. */
function emptyRange(column: string, columnType: 'DATE' | 'TIMESTAMP'): PartitionRange {
  return { column, columnType, from: '1970-01-01', until: '1970-01-01' };
}
