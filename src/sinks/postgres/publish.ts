import type pg from 'pg';
import type { SinkResult, SinkRunContext } from '../sink.js';
import type { PostgresConnection } from './connection-settings.js';
import { begin, closeQuietly, connectPostgres } from './postgres-client.js';
import {
  isConnectionFailure,
  isLockTimeout,
  isTransactionVictim,
  PostgresLockTimeoutError,
  PostgresPublishOutcomeUnknownError,
  PostgresSchemaMismatchError,
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
  let tries = 0;
  for (;;) {
    tries += 1;
    try {
      const outcome = await publishOnce(request);
      return resultOf(request, outcome, tries);
    } catch (error) {
      const retryable = isLockTimeout(error) || isTransactionVictim(error) || isConnectionFailure(error);
      const spent = Date.now() - started;
      const stopped = request.deadline?.aborted === true;
      if (!retryable || stopped || spent >= connection.publishBudgetMs) {
        if (isLockTimeout(error)) throw new PostgresLockTimeoutError(context.jobName, plan.target, tries, connection.publishBudgetMs, error);
        if (isConnectionFailure(error) && (error as { duringCommit?: boolean }).duringCommit === true)
          throw new PostgresPublishOutcomeUnknownError(context.jobName, plan.target, context.runId, error);
        throw postgresFailure(error, { jobName: context.jobName, target: plan.target, step: 'the publish', user: connection.user });
      }
      const waitMs = Math.min(2_000, 100 * 2 ** Math.min(tries, 5)) * (0.5 + Math.random() / 2);
      context.logger.warn({ target: plan.target, tries, waitMs: Math.round(waitMs), error: (error as Error).message }, 'PostgreSQL publish tried again');
      await new Promise((resolve) => setTimeout(resolve, waitMs));
    }
  }
}

async function publishOnce(request: PublishRequest): Promise<Outcome> {
  const { plan, connection, context } = request;
  const client = await connectPostgres(connection, { jobName: context.jobName, target: plan.target });
  let committing = false;
  try {
    const began = Date.now();
    await begin(client, { statementTimeoutMs: connection.statementTimeoutMs, lockTimeoutMs: connection.lockTimeoutMs });
    await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`tilehouse ${plan.target}`]);
    await ensureLedger(client, plan.schema);
    const entry = { target: plan.target, runId: context.runId, window: plan.window };
    const held = await publishedRows(client, plan.schema, entry);
    if (held !== undefined) {
      await client.query(`DROP TABLE IF EXISTS ${request.staging}`);
      await client.query('COMMIT');
      return { published: false, rowsHeld: held };
    }
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
    committing = true;
    await client.query('COMMIT');
    return { published: true, rows: moved.rows, details: moved.details, publishMs: Date.now() - began };
  } catch (error) {
    if (!committing) await client.query('ROLLBACK').catch(() => undefined);
    if (committing && error !== null && typeof error === 'object') Object.assign(error, { duringCommit: true });
    throw error;
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
    details: { ...common, adopted: true },
  };
}
