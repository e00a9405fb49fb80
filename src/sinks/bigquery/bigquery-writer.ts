import type { BigQuery, JobMetadata } from '@google-cloud/bigquery';
import type { BigQuerySinkConfig } from '../../config/job-schema.js';
import { messageOf } from '../../errors.js';
import type { TypedRow } from '../../transform/column.js';
import type { SinkResult, SinkRunContext, SinkWriter } from '../sink.js';
import { BigQueryJobTimeoutError, BigQuerySchemaMismatchError, BigQuerySinkStateError } from './bigquery-errors.js';
import { ensureDataset } from './ensure-dataset.js';
import { stagingTableId, type LoadIdentity } from './job-id.js';
import type { NdjsonFile } from './ndjson-file.js';
import { readTableSchema } from './read-table-schema.js';
import { readyTarget } from './ready-target.js';
import type { RetryContext } from './retry.js';
import { cancelJob, runJob, type JobOutcome, type JobPolling } from './run-job.js';
import { checkSchemaContract, schemaActionLabel, type SchemaDecision, type SchemaField, type TableFieldLike } from './schema-contract.js';
import { createStagingTable, deleteStagingTable, nullableFields, type StagingTable } from './staging-table.js';
import { uploadLoadFile } from './upload-load-file.js';

/** Everything about where and how one run writes, resolved when the writer opens. */
export interface BigQueryPlan {
  projectId: string;
  datasetId: string;
  /** The table, without decorator. */
  tableId: string;
  /** The publish copy's destination: the table, or `table$YYYYMMDD` in partition mode. */
  destinationTableId: string;
  /** For a new dataset. */
  location: string;
  writeMode: BigQuerySinkConfig['writeMode'];
  schema: BigQuerySinkConfig['schema'];
  /** The columns the run writes, lineage included in append mode. */
  fields: SchemaField[];
  identity: LoadIdentity;
}

interface WriterDependencies {
  client: BigQuery;
  file: NdjsonFile;
  encodeRow: (row: TypedRow) => string;
  context: SinkRunContext;
  /** Backoff policy and logger; the signal is added per phase (prepare has one, publish none). */
  retry: Omit<RetryContext, 'signal'>;
  polling: JobPolling;
}

/** What prepare found and did, for publish to build on. */
interface Prepared {
  decision: Exclude<SchemaDecision, { action: 'mismatch' }>;
  existing: readonly TableFieldLike[] | undefined;
  location: string | undefined;
  load: JobOutcome;
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
 * The run's abort signal stops prepare's waits; publish ignores it, because once the copy is in
 * BigQuery's hands the only honest summary is its outcome.
 */
export class BigQueryWriter implements SinkWriter {
  private state: WriterState = 'open';
  private rows = 0;
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

  constructor(
    private readonly plan: BigQueryPlan,
    private readonly dependencies: WriterDependencies,
  ) {
    this.staging = {
      projectId: plan.projectId,
      datasetId: plan.datasetId,
      tableId: stagingTableId(plan.identity),
      tileId: dependencies.context.tileId,
    };
  }

  get target(): string {
    return `${this.plan.projectId}.${this.plan.datasetId}.${this.plan.destinationTableId}`;
  }

  async writeRows(rows: readonly TypedRow[]): Promise<void> {
    this.expectState('open', 'writeRows');
    const { encodeRow, file } = this.dependencies;
    // Encoded lazily: the file takes ~64 KiB chunks, so at most one chunk of text is held at once.
    await file.writeLines((function* () {
      for (const row of rows) yield encodeRow(row);
    })());
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
      throw new BigQuerySinkStateError(`the BigQuery writer of tile ${this.dependencies.context.tileId} was aborted while preparing`);
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

  private async loadStaging(signal: AbortSignal): Promise<Prepared> {
    const { plan, staging } = this;
    const { client, file, context, polling } = this.dependencies;
    const retry: RetryContext = { ...this.dependencies.retry, signal };
    await file.close();

    signal.throwIfAborted();
    const dataset = await ensureDataset(
      client,
      { projectId: plan.projectId, datasetId: plan.datasetId, location: plan.location, tileId: context.tileId },
      retry,
    );
    const existing = dataset.created
      ? undefined
      : await readTableSchema(client, { projectId: plan.projectId, datasetId: plan.datasetId, tableId: plan.tableId, tileId: context.tileId }, retry);
    const decision = checkSchemaContract(existing, plan.fields, plan.schema);
    if (decision.action === 'mismatch') {
      throw new BigQuerySchemaMismatchError(
        context.tileId,
        `${plan.projectId}.${plan.datasetId}.${plan.tableId}`,
        plan.schema,
        decision.diff,
        decision.hint,
      );
    }

    signal.throwIfAborted();
    this.stagingMayExist = true;
    const { createdAt: stagingCreatedAt } = await createStagingTable(client, staging, plan.fields, retry);

    context.logger.info(
      { target: this.target, staging: staging.tableId, rows: this.rows, writeMode: plan.writeMode, schemaAction: decision.action },
      'loading into a BigQuery staging table',
    );
    const stagingTable = client.dataset(plan.datasetId, { projectId: plan.projectId }).table(staging.tableId);
    try {
      const load = await runJob({
        client,
        projectId: plan.projectId,
        stage: 'load',
        identity: plan.identity,
        location: dataset.location,
        insert: (jobId) =>
          uploadLoadFile(
            stagingTable,
            file.path,
            {
              jobId,
              // Set explicitly: BigQuery's own default is CSV.
              sourceFormat: 'NEWLINE_DELIMITED_JSON',
              // Never autodetect: the tile's typed columns are the schema (lineage included).
              schema: { fields: nullableFields(plan.fields) },
              // The staging table was created above, with its expiration; a load that outlives an
              // abort must not create it again without one.
              createDisposition: 'CREATE_NEVER',
              // A retried prepare of the same run replaces what an earlier try loaded.
              writeDisposition: 'WRITE_TRUNCATE',
            },
            context.tileId,
          ),
        // A load adopted after a 409 counts only if it ran into this staging table: one from an
        // earlier process of the same run id may have filled a staging table deleted since (by
        // its publish or abort), and the table created above would then be empty. Unknown times
        // (never from BigQuery) load again, which is safe: the load truncates.
        isAdoptable: (job) => stagingCreatedAt !== undefined && Number(job.statistics?.creationTime ?? Number.NaN) > stagingCreatedAt,
        onJob: (job) => {
          this.runningLoad = job;
        },
        tileId: context.tileId,
        target: `${plan.projectId}.${plan.datasetId}.${staging.tableId}`,
        retry,
        polling,
      });
      this.runningLoad = undefined;
      return { decision, existing, location: dataset.location, load };
    } catch (error) {
      // Only a wait that was cut short leaves a job that may still run; any other failure ended it.
      if (!signal.aborted && !(error instanceof BigQueryJobTimeoutError)) this.runningLoad = undefined;
      throw error;
    }
  }

  private async copy(prepared: Prepared): Promise<SinkResult> {
    const { plan, staging } = this;
    const { client, context, polling } = this.dependencies;
    // No signal: see the class comment.
    const retry: RetryContext = { ...this.dependencies.retry };

    await readyTarget(client, plan, prepared.decision, prepared.existing, { tileId: context.tileId, retry });
    context.logger.info({ target: this.target, staging: staging.tableId, writeMode: plan.writeMode }, 'publishing the BigQuery staging table');
    const copy = await runJob({
      client,
      projectId: plan.projectId,
      stage: 'publish',
      identity: plan.identity,
      location: prepared.location,
      insert: async (jobId) => {
        const [job] = await client.createJob({
          jobId,
          ...(prepared.location ? { location: prepared.location } : {}),
          configuration: {
            copy: {
              sourceTable: { projectId: plan.projectId, datasetId: plan.datasetId, tableId: staging.tableId },
              destinationTable: { projectId: plan.projectId, datasetId: plan.datasetId, tableId: plan.destinationTableId },
              // readyTarget created a missing target; the copy never creates one.
              createDisposition: 'CREATE_NEVER',
              writeDisposition: plan.writeMode === 'append' ? 'WRITE_APPEND' : 'WRITE_TRUNCATE',
            },
          },
        });
        return job.metadata as JobMetadata;
      },
      tileId: context.tileId,
      target: this.target,
      retry,
      polling,
    });
    if (copy.adopted) {
      context.logger.info({ jobId: copy.jobId, target: this.target }, 'this run id was already published by that copy job; not copying again');
    }
    await deleteStagingTable(client, staging, retry);

    return {
      sink: 'bigquery',
      target: this.target,
      rows: reportedRows(copy.metadata, prepared.load.metadata) ?? this.rows,
      details: {
        jobId: copy.jobId,
        loadJobId: prepared.load.jobId,
        writeMode: plan.writeMode,
        schemaAction: schemaActionLabel(prepared.decision),
        ...(copy.adopted ? { adopted: true } : {}),
      },
    };
  }

  /** Best effort throughout: each step is tried, failures are logged, the staging table expires anyway. */
  private async cleanUp(): Promise<void> {
    const { client, file, context } = this.dependencies;
    const retry: RetryContext = { ...this.dependencies.retry };
    await file.remove();
    const running = this.runningLoad;
    this.runningLoad = undefined;
    if (running) {
      try {
        await cancelJob(client, { projectId: this.plan.projectId, ...running }, retry);
        context.logger.info({ jobId: running.jobId }, 'BigQuery staging load cancelled');
      } catch (error) {
        context.logger.warn({ jobId: running.jobId, error: messageOf(error) }, 'could not cancel the BigQuery staging load; it writes only the staging table');
      }
    }
    if (this.stagingMayExist) {
      this.stagingMayExist = false;
      await deleteStagingTable(client, this.staging, retry);
    }
  }

  private expectState(expected: WriterState, operation: string): void {
    if (this.state !== expected) {
      throw new BigQuerySinkStateError(`${operation} called on a BigQuery writer that is ${this.state} (tile ${this.dependencies.context.tileId})`);
    }
  }
}

/**
 * What BigQuery reports the run wrote is the truth (an adopted job from an earlier try may have
 * written another extraction): the copy's copiedRows, else the staging load's outputRows. The
 * emulator reports neither, hence the caller's fallback to the rows written here.
 */
function reportedRows(copy: JobMetadata, load: JobMetadata): number | undefined {
  for (const value of [copy.statistics?.copy?.copiedRows, load.statistics?.load?.outputRows]) {
    const rows = Number(value ?? Number.NaN);
    if (Number.isFinite(rows)) return rows;
  }
  return undefined;
}
