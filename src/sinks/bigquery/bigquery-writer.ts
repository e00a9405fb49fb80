import type { BigQuery, JobLoadMetadata } from '@google-cloud/bigquery';
import type { BigQuerySinkConfig } from '../../config/job-schema.js';
import type { TypedRow } from '../../transform/column.js';
import type { SinkResult, SinkRunContext, SinkWriter } from '../sink.js';
import { BigQuerySchemaMismatchError, BigQuerySinkStateError } from './bigquery-errors.js';
import { ensureDataset } from './ensure-dataset.js';
import type { LoadIdentity } from './job-id.js';
import { runLoadJob, type JobPolling } from './load-job.js';
import type { NdjsonFile } from './ndjson-file.js';
import { readTableSchema } from './read-table-schema.js';
import type { RetryContext } from './retry.js';
import { checkSchemaContract, schemaActionLabel, type SchemaField } from './schema-contract.js';

/** Everything about where and how one run loads, resolved when the writer opens. */
export interface LoadPlan {
  projectId: string;
  datasetId: string;
  /** The table, without decorator. */
  tableId: string;
  /** The load's destination: the table, or `table$YYYYMMDD` in partition mode. */
  destinationTableId: string;
  /** For a new dataset. */
  location: string;
  writeMode: BigQuerySinkConfig['writeMode'];
  schema: BigQuerySinkConfig['schema'];
  /** The columns the load writes, lineage included in append mode. */
  fields: SchemaField[];
  identity: LoadIdentity;
}

interface WriterDependencies {
  client: BigQuery;
  file: NdjsonFile;
  encodeRow: (row: TypedRow) => string;
  context: SinkRunContext;
  retry: RetryContext;
  polling: JobPolling;
}

type WriterState = 'open' | 'committing' | 'committed' | 'failed' | 'aborted';

/**
 * One run's writer: rows go to a local NDJSON file as pages arrive; `commit` turns the whole file
 * into one load job, so readers see either the previous table or the complete new run.
 */
export class BigQueryWriter implements SinkWriter {
  private state: WriterState = 'open';
  private rows = 0;

  constructor(
    private readonly plan: LoadPlan,
    private readonly dependencies: WriterDependencies,
  ) {}

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

  async commit(): Promise<SinkResult> {
    this.expectState('open', 'commit');
    this.state = 'committing';
    try {
      const result = await this.load();
      this.state = 'committed';
      return result;
    } catch (error) {
      this.state = 'failed';
      throw error;
    } finally {
      await this.dependencies.file.remove();
    }
  }

  /** Removes the load file. Nothing was sent to BigQuery before commit, so the table is untouched. */
  async abort(): Promise<void> {
    if (this.state === 'committed' || this.state === 'aborted') return;
    this.state = 'aborted';
    await this.dependencies.file.remove();
  }

  private async load(): Promise<SinkResult> {
    const { plan } = this;
    const { client, file, context, retry, polling } = this.dependencies;
    await file.close();

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

    const configuration: JobLoadMetadata = {
      // Set explicitly: the client guesses the format from the file extension otherwise, and
      // BigQuery's own default is CSV.
      sourceFormat: 'NEWLINE_DELIMITED_JSON',
      // Never autodetect: the tile's typed columns are the schema. All NULLABLE, so a later run may
      // leave cells empty and `schema: add` can add columns (BigQuery adds only NULLABLE ones).
      schema: { fields: plan.fields.map((field) => ({ name: field.name, type: field.type, mode: 'NULLABLE' })) },
      createDisposition: 'CREATE_IF_NEEDED',
      writeDisposition: plan.writeMode === 'append' ? 'WRITE_APPEND' : 'WRITE_TRUNCATE',
      // Ingestion-time day partitions, addressed by the `$YYYYMMDD` decorator: a tile has no column
      // that is guaranteed to be a date, and the partition is "the run of that day" by definition.
      // WRITE_TRUNCATE on the decorator replaces exactly that day, so a rerun or backfill of a day
      // is idempotent. (Column partitioning would fail a truncate whenever a row's date fell
      // outside the decorated day.)
      ...(plan.writeMode === 'partition' ? { timePartitioning: { type: 'DAY' } } : {}),
      // BigQuery takes schema update options only with WRITE_APPEND or a truncated partition; a
      // WRITE_TRUNCATE of the whole table takes the load's schema anyway.
      ...(decision.action === 'added' && plan.writeMode !== 'replace' ? { schemaUpdateOptions: ['ALLOW_FIELD_ADDITION'] } : {}),
    };

    context.logger.info(
      { target: this.target, rows: this.rows, writeMode: plan.writeMode, schemaAction: decision.action },
      'loading into BigQuery',
    );
    const outcome = await runLoadJob({
      client,
      projectId: plan.projectId,
      datasetId: plan.datasetId,
      destinationTableId: plan.destinationTableId,
      location: dataset.location,
      filePath: file.path,
      configuration,
      identity: plan.identity,
      tileId: context.tileId,
      target: this.target,
      retry,
      polling,
    });

    // What BigQuery reports it loaded is the truth (an adopted job from an earlier try may have
    // loaded another extraction); the emulator reports no statistics, hence the fallback.
    const outputRows = Number(outcome.metadata.statistics?.load?.outputRows ?? Number.NaN);
    return {
      sink: 'bigquery',
      target: this.target,
      rows: Number.isFinite(outputRows) ? outputRows : this.rows,
      details: { jobId: outcome.jobId, writeMode: plan.writeMode, schemaAction: schemaActionLabel(decision) },
    };
  }

  private expectState(expected: WriterState, operation: string): void {
    if (this.state !== expected) {
      throw new BigQuerySinkStateError(`${operation} called on a BigQuery writer that is ${this.state} (tile ${this.dependencies.context.tileId})`);
    }
  }
}
