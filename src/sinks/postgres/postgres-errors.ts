import { messageOf, TilehouseError } from '../../errors.js';
import type { PublishOutcomeUnknown } from '../sink.js';
import { LEDGER_TABLE, qualifiedName, quoteLiteral } from './sql-names.js';

/**
 * The PostgreSQL failures, told apart by the SQLSTATE the server sends (PostgreSQL's Appendix A):
 * each that an operator fixes differently has its own code; where it happened is the message's
 * target (`schema.table`) and `targetKind: postgres`.
 */

/** The SQLSTATEs tilehouse acts on. */
export const SQLSTATE = {
  serializationFailure: '40001',
  integrityViolation: '40002',
  completionUnknown: '40003',
  deadlockDetected: '40P01',
  lockNotAvailable: '55P03',
  queryCanceled: '57014',
  diskFull: '53100',
  outOfMemory: '53200',
  tooManyConnections: '53300',
  readOnly: '25006',
  insufficientPrivilege: '42501',
  invalidPassword: '28P01',
  invalidAuthorization: '28000',
  adminShutdown: '57P01',
  crashShutdown: '57P02',
  cannotConnectNow: '57P03',
  undefinedTable: '42P01',
  uniqueViolation: '23505',
} as const;

/**
 * An ErrorResponse the server sent, as node-postgres hands it over (its DatabaseError): known by
 * the fields only a server's answer carries, its severity (PostgreSQL and PgBouncer always send
 * one) beside a five-character SQLSTATE. Not by `instanceof pg.DatabaseError`: this module is on
 * the path of every workspace's config check (postgres-plan.ts, through the descriptor), and a run
 * without a postgres sink must not load the driver (test/cli/bundle-postgres.test.ts).
 */
function isServerError(error: unknown): error is Error & { code: string; severity: string } {
  if (!(error instanceof Error)) return false;
  const { code, severity } = error as { code?: unknown; severity?: unknown };
  return typeof severity === 'string' && typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code);
}

/**
 * The SQLSTATE of an error the server sent, or undefined for anything else: a Node socket
 * error's `code` (EPIPE, ECONNRESET) is no SQLSTATE, however much it looks like one.
 */
export function sqlstateOf(error: unknown): string | undefined {
  return isServerError(error) ? error.code : undefined;
}

/**
 * A transaction PostgreSQL rolled back (SQLSTATE class 40: a serialization failure, a deadlock,
 * a statement whose completion is unknown) so the same transaction again may pass; not 40002, a
 * constraint the rows break, which they break again.
 */
export function isTransactionVictim(error: unknown): boolean {
  const state = sqlstateOf(error);
  return state !== undefined && state.startsWith('40') && state !== SQLSTATE.integrityViolation;
}

/** The server says it does not know whether the statement completed (40003): at COMMIT, the ledger must judge. */
export function isCompletionUnknown(error: unknown): boolean {
  return sqlstateOf(error) === SQLSTATE.completionUnknown;
}

export function isLockTimeout(error: unknown): boolean {
  return sqlstateOf(error) === SQLSTATE.lockNotAvailable;
}

/**
 * Node's codes for a socket that broke or could not be made and may work a moment later (a
 * restart, a failover, a blip). A TLS or certificate failure has its own codes and is not here:
 * trying again will not change a certificate.
 */
const TRANSIENT_SOCKET_CODES: ReadonlySet<string> = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENETRESET',
  'EAI_AGAIN',
]);

/**
 * SQLSTATEs (PostgreSQL's errcodes table) that say the session, not the statement, failed, and a
 * new connection may succeed: class 08 (connection exception), 57P01/57P02/57P03 (the server
 * shutting down, crashed, or not yet taking connections), 53300 (too many connections).
 */
function isConnectionState(state: string): boolean {
  return (
    state.startsWith('08') ||
    state === SQLSTATE.adminShutdown ||
    state === SQLSTATE.crashShutdown ||
    state === SQLSTATE.cannotConnectNow ||
    state === SQLSTATE.tooManyConnections
  );
}

/**
 * A connection that broke under a statement: node-postgres reports it as a plain Error without a
 * code ("Connection terminated unexpectedly"), which postgres-client.ts tells apart by the
 * client's own state (it saw the connection end), never by the text.
 */
export class ConnectionLostError extends Error {
  constructor(cause: unknown) {
    super(messageOf(cause), { cause });
    this.name = 'ConnectionLostError';
  }
}

/** A Node socket error's code, or undefined. */
function socketCode(error: unknown): string | undefined {
  if (isServerError(error)) return undefined;
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * The connection broke or could not be made, and another connection may work: a socket error
 * of TRANSIENT_SOCKET_CODES, a connection-class SQLSTATE, a connection postgres-client.ts saw end
 * (ConnectionLostError), or a PostgresConnectionError made of one of these. What the statement
 * did is not known from the answer, which never came.
 */
export function isConnectionFailure(error: unknown): boolean {
  if (error instanceof PostgresConnectionError) return error.transient;
  if (error instanceof ConnectionLostError) return true;
  const state = sqlstateOf(error);
  if (state !== undefined) return isConnectionState(state);
  const code = socketCode(error);
  return code !== undefined && TRANSIENT_SOCKET_CODES.has(code);
}

/** `"<SQLSTATE> <message>"`, or the message alone: what a message quotes of a server's error. */
function quoted(error: unknown): string {
  const state = sqlstateOf(error);
  return state === undefined ? messageOf(error) : `${state} ${messageOf(error)}`;
}

abstract class PostgresError extends TilehouseError {
  override readonly targetKind = 'postgres';
}

export class PostgresConnectionError extends PostgresError {
  readonly code = 'postgres_connection_failed';
  /** Another connection may work (a socket that broke, a server restarting); false for TLS and certificates. */
  readonly transient: boolean;
  /** What failed, without the outcome: a line that embeds it (a retry, a left-behind) says what it knows of the publish itself. */
  readonly reason: string;

  constructor(jobName: string, where: string, error: unknown) {
    const reason = `the connection failed (${quoted(error)})`;
    super(`job ${jobName}: postgres ${where}: ${reason}; nothing was published`, { cause: error });
    this.transient = isConnectionFailure(error);
    this.reason = reason;
  }
}

/**
 * A failure's own text for a line that states the outcome itself (a retry's log line, a left-behind
 * line): a connection error's "nothing was published" is true of the run only where it ends it,
 * never of a try that follows a COMMIT whose answer was lost.
 */
export function failureText(error: unknown): string {
  return error instanceof PostgresConnectionError ? error.reason : quoted(error);
}

export class PostgresAuthError extends PostgresError {
  readonly code = 'postgres_auth_failed';

  constructor(jobName: string, where: string, user: string, error: unknown) {
    super(`job ${jobName}: postgres ${where}: the server refused user ${JSON.stringify(user)} (${quoted(error)}): check the password and pg_hba.conf`, {
      cause: error,
    });
  }
}

export class PostgresReadOnlyError extends PostgresError {
  readonly code = 'postgres_read_only';

  constructor(jobName: string, target: string, error: unknown) {
    super(
      `job ${jobName}: postgres ${target}: the server is read-only (${quoted(error)}): a replica, or a primary in failover; point sinks.postgres at the primary`,
      {
        cause: error,
      },
    );
  }
}

export class PostgresDiskFullError extends PostgresError {
  readonly code = 'disk_full';

  constructor(jobName: string, target: string, error: unknown) {
    super(`job ${jobName}: postgres ${target}: the server's disk is full (${quoted(error)}); nothing was published, the table keeps its rows`, {
      cause: error,
    });
  }
}

export class PostgresPermissionError extends PostgresError {
  readonly code = 'permission_denied';

  constructor(
    jobName: string,
    target: string,
    error: unknown,
    grant = 'CREATE on the schema; INSERT, UPDATE, DELETE, SELECT on the table; SELECT, INSERT on its _tilehouse_runs',
  ) {
    super(`job ${jobName}: postgres ${target}: permission denied (${quoted(error)}): grant the run's user ${grant}`, { cause: error });
  }
}

export class PostgresStatementError extends PostgresError {
  readonly code = 'postgres_statement_failed';

  constructor(jobName: string, target: string, step: string, error: unknown) {
    super(`job ${jobName}: postgres ${target}: ${step} failed (${quoted(error)}); nothing was published`, { cause: error });
  }
}

export class PostgresLockTimeoutError extends PostgresError {
  readonly code = 'postgres_lock_timeout';

  constructor(jobName: string, target: string, tries: number, budgetMs: number, error: unknown) {
    super(
      `job ${jobName}: postgres ${target}: the publish could not get the table's lock in ${tries} tries within ${budgetMs} ms (${quoted(error)}): a long transaction holds it (see pg_locks); nothing was published`,
      { cause: error },
    );
  }
}

export class PostgresSchemaMismatchError extends PostgresError {
  readonly code = 'postgres_schema_mismatch';

  constructor(jobName: string, target: string, contract: 'freeze' | 'add', differences: readonly string[], hint: string) {
    super(`job ${jobName}: columns no longer match table ${target} (schema: ${contract}): ${differences.join('; ')}. ${hint}`);
  }
}

export class PostgresColumnError extends PostgresError {
  readonly code = 'postgres_column_invalid';

  constructor(jobName: string, target: string, field: string, column: string, problem: string) {
    super(`job ${jobName}: postgres ${target}: ${field} ${JSON.stringify(column)} ${problem}`);
  }
}

export class PostgresValueError extends PostgresError {
  readonly code = 'postgres_value_invalid';

  constructor(
    readonly column: string,
    readonly value: string,
    reason: string,
  ) {
    super(`column ${column}: value ${value} ${reason}`);
  }
}

export class PostgresKeyError extends PostgresError {
  readonly code: 'postgres_duplicate_key' | 'postgres_null_key';

  constructor(jobName: string, target: string, kind: 'duplicate' | 'null', key: string, keyColumns: readonly string[]) {
    super(
      kind === 'duplicate'
        ? `job ${jobName}: postgres ${target}: rows of this run share the primary key (${keyColumns.join(', ')}) = ${key} and no latestBy chooses between them; nothing was published`
        : `job ${jobName}: postgres ${target}: a row has a null in primary key column ${key}; nothing was published`,
    );
    this.code = kind === 'duplicate' ? 'postgres_duplicate_key' : 'postgres_null_key';
  }
}

export class PostgresRowCountError extends PostgresError {
  readonly code = 'postgres_row_count_mismatch';

  constructor(jobName: string, target: string, sent: number, held: number) {
    super(`job ${jobName}: postgres ${target}: the staging table holds ${held} rows, tilehouse sent ${sent}; nothing was published`);
  }
}

/**
 * The publish's COMMIT was sent and got no answer, and no later try could read the run ledger
 * within the publish budget: the server may have committed or not. The message names the run id
 * and the query on the ledger that settles it (a row: the run's rows are in the table).
 */
export class PostgresPublishOutcomeUnknownError extends PostgresError implements PublishOutcomeUnknown {
  readonly code = 'publish_outcome_unknown';
  readonly publishOutcomeUnknown = true as const;

  constructor(jobName: string, at: { schema: string; target: string; window?: { from: string } | undefined }, runId: string, error: unknown) {
    const query = `SELECT rows, published_at FROM ${qualifiedName(at.schema, LEDGER_TABLE)} WHERE target_table = ${quoteLiteral(at.target)} AND run_id = ${quoteLiteral(runId)} AND window_from = ${quoteLiteral(at.window?.from ?? '')}`;
    super(
      `job ${jobName}: postgres ${at.target}: the publish's COMMIT got no answer and the run ledger could not be read afterwards (last: ${failureText(error)}): ` +
        `whether run ${runId} is in the table is not known. Settle it with: ${query} (a row: published; none: not). ` +
        `Re-running with --run-id ${runId} is safe: it publishes only if that row is absent`,
      { cause: error },
    );
  }
}

/**
 * The error a failed statement becomes: its own class where the SQLSTATE names a cause the operator
 * fixes in one way (disk, replica, privilege, password), a connection failure, else the statement's.
 */
export function postgresFailure(error: unknown, at: { jobName: string; target: string; step: string; user?: string }): TilehouseError {
  if (error instanceof TilehouseError) return error;
  const state = sqlstateOf(error);
  switch (state) {
    case SQLSTATE.diskFull:
      return new PostgresDiskFullError(at.jobName, at.target, error);
    case SQLSTATE.readOnly:
      return new PostgresReadOnlyError(at.jobName, at.target, error);
    case SQLSTATE.insufficientPrivilege:
      return new PostgresPermissionError(at.jobName, at.target, error);
    case SQLSTATE.invalidPassword:
    case SQLSTATE.invalidAuthorization:
      return new PostgresAuthError(at.jobName, at.target, at.user ?? '', error);
  }
  if (isConnectionFailure(error)) return new PostgresConnectionError(at.jobName, `${at.target} (${at.step})`, error);
  return new PostgresStatementError(at.jobName, at.target, at.step, error);
}
