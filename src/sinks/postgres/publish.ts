import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { backoffDelay } from '../../retry.js';
import type { SinkResult, SinkRunContext } from '../sink.js';
import type { PostgresConnection } from './connection-settings.js';
import { begin, closeQuietly, connectPostgres, settled } from './postgres-client.js';
import {
  isCompletionUnknown,
  isConnectionFailure,
  isLockTimeout,
  isTransactionVictim,
  PostgresLockTimeoutError,
  PostgresPublishOutcomeUnknownError,
  PostgresRowCountError,
  PostgresSchemaMismatchError,
  failureText,
  postgresFailure,
} from './postgres-errors.js';
import { type PostgresPlan, tableColumns } from './postgres-plan.js';
import { addColumnsStatement, createTableStatement, moveRows } from './publish-statements.js';
import { ensureLedger, publishedRows, recordPublish } from './run-ledger.js';
import { contractDecision, readTableColumns } from './table-columns.js';

export interface PublishRequest {
  plan: PostgresPlan;
  connection: PostgresConnection;
  context: SinkRunContext;
  /** `"schema"."_tilehouse_stage_…"`, committed by prepare. */
  staging: string;
  sentRows: number;
  /** Ends the tries `stopDeadlineMs` after a stop (the publish itself is never cancelled by the stop). */
  deadline?: AbortSignal;
}

type Outcome = { published: true; rows: number; details: Record<string, number>; publishMs: number } | { published: false; rowsHeld: number };

/**
 * The publish: one short transaction, tried again while its budget lasts when PostgreSQL ended it
 * to let another go on (serialization failure, deadlock), when it could not get a lock within
 * `lockTimeoutMs` (so it never queues in front of readers for long), or when the connection broke.
 * In the transaction, in order:
 *
 * 1. a transaction-scoped advisory lock on the target: two runs into one table publish one after
 *    the other (a session lock would outlive the transaction on a pooled server connection);
 * 2. the run ledger read: a row for this run id (and window) means its rows are in the table
 *    already, from an earlier try whose COMMIT answer was lost or from an earlier run with the
 *    same id, and nothing is published again. Because a broken connection's transaction still
 *    holds the advisory lock until the server has committed or rolled it back, this read waits
 *    for that outcome: a lost COMMIT answer is judged by the ledger, never guessed;
 * 3. the table created, or its new columns added (`schema: add`), under the contract;
 * 4. the rows moved by the write mode (publish-statements.ts), the ledger row written, the
 *    staging table dropped; COMMIT.
 */
export async function publishStaging(request: PublishRequest): Promise<SinkResult> {
  const { plan, connection, context } = request;
  const started = Date.now();
  const progress: TryProgress = { commitSent: false, ledgerRead: false, held: undefined };
  /** A COMMIT was sent and its answer lost, and no later try has read the ledger since: the outcome is not known. */
  let outcomeUnknown = false;
  let tries = 0;
  for (;;) {
    tries += 1;
    progress.commitSent = false;
    progress.ledgerRead = false;
    progress.held = undefined;
    try {
      const outcome = await publishOnce(request, progress, started + connection.publishBudgetMs);
      return resultOf(request, outcome, tries);
    } catch (error) {
      // The ledger, read under the target's lock, held this run: its rows are in the table, whatever
      // became of this try's DROP of the staging table and its COMMIT (a later run's sweep drops it).
      if (progress.held !== undefined) {
        context.logger.warn(
          { target: plan.target, staging: request.staging, error: failureText(error) },
          'PostgreSQL publish: the run ledger holds this run; its staging table may be left for a later sweep',
        );
        return resultOf(request, { published: false, rowsHeld: progress.held }, tries);
      }
      // A try that read the ledger settled what every earlier try did; one whose COMMIT got no answer unsettles it again.
      if (progress.ledgerRead) outcomeUnknown = false;
      if (progress.commitSent && (isConnectionFailure(error) || isCompletionUnknown(error))) outcomeUnknown = true;
      const retryable = isLockTimeout(error) || isTransactionVictim(error) || isConnectionFailure(error);
      const left = connection.publishBudgetMs - (Date.now() - started);
      const stopped = request.deadline?.aborted === true;
      if (!retryable || stopped || left <= 0) {
        if (outcomeUnknown) throw new PostgresPublishOutcomeUnknownError(context.jobName, plan, context.runId, error);
        if (isLockTimeout(error)) throw new PostgresLockTimeoutError(context.jobName, plan.target, tries, connection.publishBudgetMs, error);
        throw postgresFailure(error, { jobName: context.jobName, target: plan.target, step: 'the publish', user: connection.user });
      }
      // The backoff of the one retry loop (retry.ts), bounded by a time budget rather than a count
      // of attempts: a server restarting takes seconds, however many tries fit in them.
      const waitMs = Math.min(left, Math.max(50, backoffDelay(tries, { baseDelayMs: 200, maxDelayMs: 2_000 })));
      // What is known of the publish after this try, and the try's own failure without an outcome of its own.
      const published = outcomeUnknown ? 'unknown: a COMMIT got no answer; the next try reads the run ledger' : 'no';
      context.logger.warn({ target: plan.target, tries, waitMs, published, error: failureText(error) }, 'PostgreSQL publish tried again');
      await sleep(waitMs);
    }
  }
}

/** How far one try got, for judging what a failed try may have done. */
interface TryProgress {
  /** COMMIT was sent: the server may have committed whatever the answer says. */
  commitSent: boolean;
  /** The ledger was read under the target's lock: what every earlier try did is known. */
  ledgerRead: boolean;
  /** The rows the ledger says this run published (an earlier try, or an earlier run of the run id); undefined: not published. */
  held: number | undefined;
}

async function publishOnce(request: PublishRequest, progress: TryProgress, budgetEndsAt: number): Promise<Outcome> {
  const { plan, connection, context } = request;
  // A connect that hangs (packets dropped by a server gone) ends with the budget, not 30 s past it.
  const connectTimeoutMs = Math.max(1_000, Math.min(30_000, budgetEndsAt - Date.now()));
  const client = await connectPostgres(connection, { jobName: context.jobName, target: plan.target }, { connectTimeoutMs });
  try {
    const began = Date.now();
    await begin(client, { statementTimeoutMs: connection.statementTimeoutMs, lockTimeoutMs: connection.lockTimeoutMs });
    await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`tilehouse ${plan.target}`]);
    await ensureLedger(client, plan.schema);
    const entry = { target: plan.target, runId: context.runId, window: plan.window };
    const held = await publishedRows(client, plan.schema, entry);
    progress.ledgerRead = true;
    progress.held = held;
    if (held !== undefined) {
      await client.query(`DROP TABLE IF EXISTS ${request.staging}`);
      await client.query('COMMIT');
      return { published: false, rowsHeld: held };
    }
    // The staging table as prepare committed it: a server that crashed since empties an UNLOGGED
    // table, and publishing that would replace the table's rows with none.
    const staged = await client.query<{ rows: string }>(`SELECT count(*)::text AS rows FROM ${request.staging}`);
    const stagedRows = Number(staged.rows[0]?.rows ?? 0);
    if (stagedRows !== request.sentRows) throw new PostgresRowCountError(context.jobName, plan.target, request.sentRows, stagedRows);
    await readyTable(client, plan);
    const moved = await moveRows(client, plan, request.staging, { runId: context.runId, extractedAt: context.startedAt });
    await recordPublish(client, plan.schema, {
      ...entry,
      job: context.jobName,
      tile: context.tileId,
      writeMode: plan.writeMode,
      rows: moved.rows,
      startedAt: context.startedAt,
      definition: context.definition,
    });
    await client.query(`DROP TABLE ${request.staging}`);
    progress.commitSent = true;
    await client.query('COMMIT');
    return { published: true, rows: moved.rows, details: moved.details, publishMs: Date.now() - began };
  } catch (error) {
    const failure = settled(client, error);
    if (!progress.commitSent) await client.query('ROLLBACK').catch(() => undefined);
    throw failure;
  } finally {
    await closeQuietly(client);
  }
}

/** The target as the run needs it: created when absent, new columns added under `schema: add`; a contract broken since prepare refuses. */
async function readyTable(client: pg.Client, plan: PostgresPlan): Promise<void> {
  const existing = await readTableColumns(client, plan.schema, plan.table);
  const decision = contractDecision(existing, tableColumns(plan), plan.contract);
  switch (decision.action) {
    case 'create':
      await client.query(createTableStatement(plan));
      return;
    case 'add':
      await client.query(addColumnsStatement(plan, decision.columns));
      return;
    case 'mismatch':
      throw new PostgresSchemaMismatchError(plan.jobName, plan.target, plan.contract, decision.differences, decision.hint);
    case 'unchanged':
      return;
  }
}

function resultOf(request: PublishRequest, outcome: Outcome, tries: number): SinkResult {
  const { plan, sentRows } = request;
  const common = { writeMode: plan.writeMode, sentRows, ...(tries > 1 ? { tries } : {}) };
  // publishMs: the publishing transaction, BEGIN to COMMIT (what the table's lock lasted at most).
  if (outcome.published)
    return { sink: 'postgres', target: plan.target, rows: outcome.rows, details: { ...common, ...outcome.details, publishMs: outcome.publishMs } };
  // The ledger holds this run already: its rows are in the table, nothing was published again.
  const keptEarlier = plan.writeMode !== 'merge' && outcome.rowsHeld !== sentRows;
  return {
    sink: 'postgres',
    target: plan.target,
    rows: outcome.rowsHeld,
    ...(keptEarlier ? { keptEarlierPublish: true } : {}),
    adopted: true,
    details: { ...common, adopted: true },
  };
}
