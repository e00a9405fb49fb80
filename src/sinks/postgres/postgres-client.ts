import { readFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import type { ConnectionOptions } from 'node:tls';
import pg from 'pg';
import type { PostgresConnection } from './connection-settings.js';
import { TilehouseError } from '../../errors.js';
import { ConnectionLostError, PostgresConnectionError, postgresFailure, SQLSTATE, sqlstateOf } from './postgres-errors.js';

/**
 * One connection of a run, made as PgBouncer in transaction pooling allows: no startup `options`
 * (PgBouncer refuses them), no session `SET` (every setting is `SET LOCAL` inside the transaction
 * that needs it, `begin`), no named prepared statements (node-postgres sends unnamed ones
 * unless a query is given a name, and none is), and advisory locks only transaction-scoped.
 */

/** `tilehouse <job>`, as the server's pg_stat_activity shows it (cut to the 63 bytes it keeps). */
export function applicationName(jobName: string): string {
  let name = `tilehouse ${jobName}`;
  while (Buffer.byteLength(name, 'utf8') > 63) name = name.slice(0, -1);
  return name;
}

/**
 * The TLS options for libpq's sslmode (`allow` and `prefer` are the first attempt's; connect()
 * makes the second): require encrypts without checking the certificate (unless a root certificate
 * is given: then as verify-ca, as libpq does); verify-ca checks the chain, not the name;
 * verify-full checks both.
 */
async function tlsOptions(connection: PostgresConnection, encrypted: boolean): Promise<false | ConnectionOptions> {
  if (!encrypted) return false;
  const ca = connection.sslrootcert === undefined ? undefined : await readFile(connection.sslrootcert, 'utf8');
  const mode = connection.sslmode === 'require' && ca !== undefined ? 'verify-ca' : connection.sslmode;
  switch (mode) {
    case 'verify-full':
      // SNI takes a host name only: an IP as servername is Node's DEP0123 warning on every
      // connection. The certificate is checked against the host either way (node-postgres sets
      // servername itself for a name, and Node checks an IP against the socket's address).
      return { rejectUnauthorized: true, ...(isIP(connection.host) === 0 ? { servername: connection.host } : {}), ...(ca === undefined ? {} : { ca }) };
    case 'verify-ca':
      return { rejectUnauthorized: true, checkServerIdentity: () => undefined, ...(ca === undefined ? {} : { ca }) };
    default:
      return { rejectUnauthorized: false };
  }
}

/** What the first attempt of each mode is: encrypted or not. */
const FIRST_ENCRYPTED: Readonly<Record<PostgresConnection['sslmode'], boolean>> = {
  disable: false,
  allow: false,
  prefer: true,
  require: true,
  'verify-ca': true,
  'verify-full': true,
};

async function open(connection: PostgresConnection, jobName: string, encrypted: boolean, connectTimeoutMs: number): Promise<pg.Client> {
  const client = new pg.Client({
    host: connection.host,
    port: connection.port,
    database: connection.database,
    user: connection.user,
    password: connection.password,
    ssl: await tlsOptions(connection, encrypted),
    application_name: applicationName(jobName),
    connectionTimeoutMillis: connectTimeoutMs,
    keepAlive: true,
  });
  // An error after connect (the server gone between statements) surfaces on the next query; an
  // unhandled 'error' event would end the process instead. node-postgres emits it (and 'end') when
  // the connection ends under the client, before it fails the statements in flight: what lets
  // settled() call their plain "Connection terminated" errors a lost connection without reading them.
  client.on('error', () => lost.add(client));
  client.on('end', () => lost.add(client));
  try {
    await client.connect();
  } catch (error) {
    await client.end().catch(() => undefined);
    throw error;
  }
  return client;
}

/** Clients whose connection ended under them (not by closeQuietly). */
const lost = new WeakSet<pg.Client>();

/**
 * What a failed statement of `client` is: the server's error as it is; a client error (no
 * SQLSTATE) on a connection that has ended, a ConnectionLostError, whatever its text says.
 */
export function settled(client: pg.Client | undefined, error: unknown): unknown {
  if (error instanceof pg.DatabaseError || error instanceof TilehouseError || error instanceof ConnectionLostError) return error;
  return client !== undefined && lost.has(client) ? new ConnectionLostError(error) : error;
}

/** What a server that takes no TLS answers (node-postgres's words), and what pg_hba says to a plain connection it refuses. */
const NO_TLS = /does not support SSL/i;
const NEEDS_TLS = /no encryption/i;

/**
 * A connected client. `prefer` falls back to plain text when the server takes no TLS, `allow`
 * to TLS when pg_hba refuses plain text, as libpq does; other modes make one attempt. Failures
 * become the sink's errors (auth, connection) naming the target.
 */
export async function connectPostgres(
  connection: PostgresConnection,
  at: { jobName: string; target: string },
  options: { connectTimeoutMs?: number } = {},
): Promise<pg.Client> {
  const timeout = options.connectTimeoutMs ?? 30_000;
  const first = FIRST_ENCRYPTED[connection.sslmode];
  try {
    try {
      return await open(connection, at.jobName, first, timeout);
    } catch (error) {
      const retry =
        (connection.sslmode === 'prefer' && NO_TLS.test(String((error as Error).message))) ||
        (connection.sslmode === 'allow' && sqlstateOf(error) === SQLSTATE.invalidAuthorization && NEEDS_TLS.test(String((error as Error).message)));
      if (!retry) throw error;
      return await open(connection, at.jobName, !first, timeout);
    }
  } catch (error) {
    const step = `connecting to ${connection.host}:${connection.port}`;
    // Not a server's answer: the connection could not be made (refused, reset, timed out, TLS, a certificate).
    // A codeless one (node-postgres's own "timeout expired", "Connection terminated unexpectedly"
    // during the startup) is a connection that ended; a socket's or a certificate's keeps its code.
    if (!(error instanceof pg.DatabaseError))
      throw new PostgresConnectionError(
        at.jobName,
        `${at.target} (${step})`,
        (error as { code?: unknown }).code === undefined ? new ConnectionLostError(error) : error,
      );
    throw postgresFailure(error, { ...at, step, user: connection.user });
  }
}

/** The settings every transaction of a run carries, `SET LOCAL` (PgBouncer's transaction pooling keeps nothing else). */
export interface TransactionSettings {
  statementTimeoutMs: number;
  /** Absent: the server's (no wait bound), for the COPY whose length the source decides. */
  lockTimeoutMs?: number;
}

/** BEGIN with the settings (`SET LOCAL`, gone at the transaction's end); the caller COMMITs or ROLLBACKs. */
export async function begin(client: pg.Client, settings: TransactionSettings): Promise<void> {
  await client.query(
    `BEGIN; SET LOCAL statement_timeout = ${Math.floor(settings.statementTimeoutMs)}` +
      (settings.lockTimeoutMs === undefined ? '' : `; SET LOCAL lock_timeout = ${Math.floor(settings.lockTimeoutMs)}`),
  );
}

/** Ends a client without waiting on a server that is gone. */
export async function closeQuietly(client: pg.Client | undefined): Promise<void> {
  if (client === undefined) return;
  await client.end().catch(() => undefined);
}
