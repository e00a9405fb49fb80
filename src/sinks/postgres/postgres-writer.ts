import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import type { GuardSettings } from '../../config/publish-guard-schema.js';
import { formatOwnerTag } from '../../temp-owner.js';
import type { TypedRow } from '../../transform/column.js';
import { cleanupDeadline } from '../../stop-deadline.js';
import { drained } from '../stores/drained.js';
import type { GuardCheck } from '../publish-guard.js';
import { isPublishOutcomeUnknown, type RunHeld, type SinkResult, type SinkRunContext, type SinkWriter } from '../sink.js';
import { postgresLineageDataset, type PostgresConnection } from './connection-settings.js';
import { begin, closeQuietly, connectPostgres, settled } from './postgres-client.js';
import { failureText, PostgresRowCountError, postgresFailure, PostgresSchemaMismatchError } from './postgres-errors.js';
import { type PostgresPlan, tableColumns } from './postgres-plan.js';
import { publishStaging } from './publish.js';
import { publishedRows } from './run-ledger.js';
import { contractDecision, readTableColumns } from './table-columns.js';
import { checkStaging } from './staging-checks.js';
import { qualifiedName, quoteIdentifier, quoteLiteral, STAGING_PREFIX } from './sql-names.js';
import { postgresHolding } from './target-holding.js';
import type { LineageDatasetName } from '../lineage-dataset-name.js';

/** Rows are sent to COPY in chunks of about this many characters: few writes, little held. */
const CHUNK_CHARS = 64 * 1024;

export interface PostgresWriterDependencies {
  connection: PostgresConnection;
  context: SinkRunContext;
  encodeRow: (row: TypedRow) => string;
  stopDeadlineMs: number;
  guard: GuardSettings | undefined;
}

type WriterState = 'open' | 'preparing' | 'prepared' | 'publishing' | 'published' | 'failed' | 'aborted';

/** A staging table's name: the prefix the sweep looks for, then a digest of the run and a random part (two processes with one run id). */
function stagingName(plan: PostgresPlan, runId: string): string {
  const digest = createHash('sha256')
    .update(`${plan.target}\u0000${runId}\u0000${plan.window?.from ?? ''}`)
    .digest('hex')
    .slice(0, 16);
  return `${STAGING_PREFIX}${digest}_${randomBytes(4).toString('hex')}`;
}

/**
 * One run's writer, in two phases, on a real server through whatever sits between (PgBouncer in
 * transaction pooling included):
 *
 * - open: one transaction begins; in it an UNLOGGED staging table is created (in the target's
 *   schema: a temp table would not outlive the transaction behind a pooler) and `COPY … FROM
 *   STDIN` starts. Rows stream into it as pages arrive, with backpressure: a write waits while
 *   the socket's buffer is full, so memory holds about one chunk whatever the run's size.
 * - prepare: the COPY ends, the server's row count is checked against the rows sent, the keys or
 *   days checked, and the transaction commits: only now does the staging table exist for others.
 *   A connection lost before this point rolls it all back, staging table included.
 * - publish: one short transaction (publish.ts) moves the rows into place and writes the run
 *   ledger row; it is never cancelled by a stop, only bounded by the cleanup deadline.
 */
export class PostgresWriter implements SinkWriter {
  private state: WriterState = 'open';
  private rows = 0;
  private pending = '';
  private copyError: Error | undefined;
  /** Whether a committed staging table may exist, so abort knows to drop it. */
  private stagingCommitted = false;
  private inFlight: Promise<unknown> | undefined;
  private readonly left: string[] = [];
  /** The publish failed without knowing whether its COMMIT landed. */
  private outcomeUnknown = false;
  private readonly deadline: AbortSignal | undefined;

  private constructor(
    private readonly plan: PostgresPlan,
    private readonly dependencies: PostgresWriterDependencies,
    private readonly staging: string,
    private client: pg.Client | undefined,
    private readonly copy: NodeJS.WritableStream & import('node:stream').Writable,
    private readonly copyDone: Promise<void>,
  ) {
    this.deadline = cleanupDeadline(dependencies.context.signal, dependencies.stopDeadlineMs);
  }

  /**
   * Connects, reads the target's columns (a schema contract the tile breaks fails here, before
   * anything is sent), creates the staging table and starts the COPY.
   */
  static async open(plan: PostgresPlan, dependencies: PostgresWriterDependencies): Promise<PostgresWriter> {
    const { connection, context } = dependencies;
    const at = { jobName: context.jobName, target: plan.target, user: connection.user };
    const client = await connectPostgres(connection, at);
    const staging = stagingName(plan, context.runId);
    const sqlStaging = qualifiedName(plan.schema, staging);
    let step = 'reading the table';
    try {
      // No statement timeout for the COPY: how long it runs is the source's export, not the server's work.
      await begin(client, { statementTimeoutMs: 0 });
      const existing = await readTableColumns(client, plan.schema, plan.table);
      const decision = contractDecision(existing, tableColumns(plan), plan.contract);
      if (decision.action === 'mismatch')
        throw new PostgresSchemaMismatchError(context.jobName, plan.target, plan.contract, decision.differences, decision.hint);
      step = 'creating the staging table';
      const columns = plan.columns.map((column) => `${quoteIdentifier(column.name)} ${column.postgresType}`).join(', ');
      await client.query(`CREATE UNLOGGED TABLE ${sqlStaging} (${columns})`);
      const note = JSON.stringify({
        tilehouse: 'staging',
        job: context.jobName,
        runId: context.runId,
        target: plan.target,
        owner: formatOwnerTag(),
        createdAt: new Date().toISOString(),
      });
      await client.query(`COMMENT ON TABLE ${sqlStaging} IS ${quoteLiteral(note)}`);
      step = 'starting COPY into the staging table';
      const copy = client.query(copyFrom(`COPY ${sqlStaging} (${plan.columns.map((column) => quoteIdentifier(column.name)).join(', ')}) FROM STDIN`));
      const copyDone = once(copy, 'finish').then(() => undefined);
      const writer = new PostgresWriter(plan, dependencies, sqlStaging, client, copy, copyDone);
      copy.on('error', (error) => {
        writer.copyError ??= error;
      });
      copyDone.catch(() => undefined);
      context.logger.info(
        { target: plan.target, staging, writeMode: plan.writeMode, schemaAction: decision.action },
        'copying into a PostgreSQL staging table',
      );
      return writer;
    } catch (error) {
      const failure = postgresFailure(settled(client, error), { ...at, step });
      await client.query('ROLLBACK').catch(() => undefined);
      await closeQuietly(client);
      throw failure;
    }
  }

  get target(): string {
    return this.plan.target;
  }

  /** The table's OpenLineage dataset, by its server (connection-settings.ts's postgresLineageDataset). */
  get lineageDataset(): LineageDatasetName {
    return postgresLineageDataset(this.dependencies.connection, this.plan);
  }

  leftBehind(): string[] {
    return [...this.left];
  }

  get guard(): GuardCheck {
    return {
      settings: this.dependencies.guard,
      holding: () => postgresHolding(this.plan, this.dependencies.connection, this.dependencies.context, this.dependencies.guard?.recentRuns ?? 0),
    };
  }

  async writeRows(rows: readonly TypedRow[]): Promise<void> {
    this.expectState('open', 'writeRows');
    const { encodeRow } = this.dependencies;
    for (const row of rows) {
      this.pending += encodeRow(row);
      if (this.pending.length >= CHUNK_CHARS) await this.flush();
    }
    this.rows += rows.length;
  }

  /** Sends what is pending; waits while the socket's buffer is full (backpressure up to the pages). */
  private async flush(): Promise<void> {
    if (this.copyError) throw this.failure(this.copyError, 'COPY into the staging table');
    const chunk = this.pending;
    this.pending = '';
    if (chunk === '') return;
    if (!this.copy.write(chunk)) {
      try {
        await drained(this.copy);
      } catch (error) {
        throw this.failure(this.copyError ?? error, 'COPY into the staging table');
      }
    }
  }

  async prepare(): Promise<void> {
    this.expectState('open', 'prepare');
    this.state = 'preparing';
    const preparing = this.finishCopy();
    this.inFlight = preparing;
    try {
      await preparing;
      if (this.state === 'preparing') this.state = 'prepared';
    } catch (error) {
      if (this.state === 'preparing') this.state = 'failed';
      throw error;
    }
  }

  /** Ends the COPY, checks the server's count and the rows, commits the staging table. */
  private async finishCopy(): Promise<void> {
    const client = this.client!;
    let step = 'COPY into the staging table';
    try {
      await this.flush();
      this.copy.end();
      await this.copyDone;
      if (this.copyError) throw this.copyError;
      const copied = (this.copy as unknown as { rowCount: number }).rowCount;
      if (copied !== this.rows) throw new PostgresRowCountError(this.dependencies.context.jobName, this.plan.target, this.rows, copied);
      step = 'checking the staging table';
      await checkStaging(client, this.plan, this.staging);
      step = 'committing the staging table';
      this.stagingCommitted = true;
      await client.query('COMMIT');
    } catch (error) {
      const failure = this.failure(error, step);
      await client.query('ROLLBACK').catch(() => undefined);
      throw failure;
    } finally {
      await closeQuietly(client);
      this.client = undefined;
    }
  }

  async publish(): Promise<SinkResult> {
    this.expectState('prepared', 'publish');
    this.state = 'publishing';
    const { connection, context } = this.dependencies;
    const publishing = publishStaging({
      plan: this.plan,
      connection,
      context,
      staging: this.staging,
      sentRows: this.rows,
      ...(this.deadline ? { deadline: this.deadline } : {}),
    });
    this.inFlight = publishing;
    try {
      const result = await publishing;
      this.state = 'published';
      this.stagingCommitted = false;
      return result;
    } catch (error) {
      this.state = 'failed';
      this.outcomeUnknown = isPublishOutcomeUnknown(error);
      throw error;
    }
  }

  /**
   * Whether the run ledger has a row of this run id (and window) for the table, read on a
   * connection of its own without the publish's lock: publish reads it again under the lock, so a
   * try that commits meanwhile is still adopted there.
   */
  async heldRun(): Promise<RunHeld> {
    const { connection, context } = this.dependencies;
    const base = { sink: 'postgres' as const, target: this.plan.target };
    const client = await connectPostgres(connection, { jobName: context.jobName, target: this.plan.target }, { connectTimeoutMs: 30_000 });
    try {
      const rows = await publishedRows(client, this.plan.schema, { target: this.plan.target, runId: context.runId, window: this.plan.window });
      return rows === undefined ? { ...base, held: 'no', readFrom: 'the run ledger' } : { ...base, held: 'yes', rows, readFrom: 'the run ledger' };
    } catch (error) {
      throw postgresFailure(error, { jobName: context.jobName, target: this.plan.target, step: 'reading the run ledger', user: connection.user });
    } finally {
      await closeQuietly(client);
    }
  }

  /**
   * Before publish: a COPY in flight is failed (CopyFail: the server rolls back its transaction,
   * staging table included); a committed staging table is dropped. After publish: nothing.
   */
  async abort(): Promise<void> {
    if (this.state === 'published' || this.state === 'aborted') return;
    if (this.state === 'open' && this.client !== undefined) {
      this.state = 'aborted';
      this.copy.destroy(new Error('the run was aborted'));
      await this.copyDone.catch(() => undefined);
      await this.client.query('ROLLBACK').catch(() => undefined);
      await closeQuietly(this.client);
      this.client = undefined;
      return;
    }
    if (this.inFlight) await this.inFlight.catch(() => undefined);
    if ((this.state as WriterState) === 'published') return;
    this.state = 'aborted';
    if (this.stagingCommitted) await this.dropStaging();
  }

  private async dropStaging(): Promise<void> {
    const { connection, context } = this.dependencies;
    let client: pg.Client | undefined;
    try {
      client = await connectPostgres(connection, { jobName: context.jobName, target: this.plan.target }, { connectTimeoutMs: 5_000 });
      await client.query(`DROP TABLE IF EXISTS ${this.staging}`);
      this.stagingCommitted = false;
    } catch (error) {
      const reason = failureText(error);
      context.logger.warn({ staging: this.staging, error: reason }, 'could not drop the PostgreSQL staging table; a later run sweeps it');
      // A publish that committed dropped it in its transaction: after one whose outcome is unknown,
      // whether it is there is as unknown as the publish, and said so; otherwise prepare committed
      // it and nothing dropped it since.
      this.left.push(
        this.outcomeUnknown
          ? `PostgreSQL staging table ${this.staging}: not checked (${reason}); it is there only if the publish did not commit; a later run's sweep drops it`
          : `PostgreSQL staging table ${this.staging}: still there (dropping it failed: ${reason}); a later run's sweep drops it`,
      );
    } finally {
      await closeQuietly(client);
    }
  }

  private failure(error: unknown, step: string) {
    return postgresFailure(settled(this.client, error), {
      jobName: this.dependencies.context.jobName,
      target: this.plan.target,
      step,
      user: this.dependencies.connection.user,
    });
  }

  private expectState(expected: WriterState, operation: string): void {
    if (this.state !== expected)
      throw new Error(`job ${this.dependencies.context.jobName}: postgres ${this.target}: ${operation} called on a writer that is ${this.state}`);
  }
}
