import pg from 'pg';
import { describe, expect, it } from 'vitest';
import {
  ConnectionLostError,
  isConnectionFailure,
  isTransactionVictim,
  PostgresConnectionError,
  postgresFailure,
  sqlstateOf,
} from '../../../src/sinks/postgres/postgres-errors.js';

/** An ErrorResponse as node-postgres hands it over: its DatabaseError with the server's severity and SQLSTATE. */
function serverError(code: string, message: string): pg.DatabaseError {
  const error = new pg.DatabaseError(message, message.length, 'error');
  error.severity = 'ERROR';
  error.code = code;
  return error;
}

/** A socket error as Node makes it (`write EPIPE`, errno and syscall beside the code). */
function socketError(code: string, syscall = 'write'): NodeJS.ErrnoException {
  return Object.assign(new Error(`${syscall} ${code}`), { code, errno: -32, syscall });
}

const at = { jobName: 'open_incidents', target: 'public.t', step: 'COPY into the staging table', user: 'loader' };

describe('postgres failures are told apart by what they are, never by their text', () => {
  it('takes a SQLSTATE only from a server error: EPIPE and a lookalike object are none', () => {
    expect(sqlstateOf(socketError('EPIPE'))).toBeUndefined();
    expect(sqlstateOf({ code: '42501', message: 'permission denied' })).toBeUndefined();
    expect(sqlstateOf(serverError('42501', 'permission denied for table t'))).toBe('42501');
  });

  it.each(['EPIPE', 'ECONNRESET', 'ECONNREFUSED', 'ETIMEDOUT', 'EHOSTUNREACH'])(
    'a socket error %s is a lost connection: postgres_connection_failed, retryable',
    (code) => {
      const failure = postgresFailure(socketError(code), at);
      expect(failure).toMatchObject({ code: 'postgres_connection_failed', transient: true, targetKind: 'postgres' });
      expect(failure.message).toContain(`the connection failed (write ${code})`);
      expect(isConnectionFailure(failure)).toBe(true);
    },
  );

  it.each([
    ['57P01', 'terminating connection due to administrator command'],
    ['57P02', 'terminating connection because of crash of another server process'],
    ['57P03', 'the database system is starting up'],
    ['08006', 'connection failure'],
    ['53300', 'sorry, too many clients already'],
  ])('SQLSTATE %s is a connection the server ended or refused for now: retried', (code, message) => {
    expect(isConnectionFailure(serverError(code, message))).toBe(true);
    expect(postgresFailure(serverError(code, message), at)).toMatchObject({ code: 'postgres_connection_failed', transient: true });
  });

  it('a client error without a code is a lost connection only when the client saw its connection end, whatever its text says', () => {
    const terminated = new Error('Connection terminated unexpectedly');
    expect(isConnectionFailure(terminated)).toBe(false);
    expect(isConnectionFailure(new ConnectionLostError(new Error('any words at all')))).toBe(true);
    expect(postgresFailure(new ConnectionLostError(terminated), at)).toMatchObject({ code: 'postgres_connection_failed' });
  });

  it('a connection refused for its certificate is not tried again (the certificate will not change)', () => {
    const certificate = Object.assign(new Error('self-signed certificate'), { code: 'DEPTH_ZERO_SELF_SIGNED_CERT' });
    const failure = new PostgresConnectionError('open_incidents', 'public.t (connecting)', certificate);
    expect(failure).toMatchObject({ code: 'postgres_connection_failed', transient: false });
    expect(isConnectionFailure(failure)).toBe(false);
  });

  it('42501 is permission_denied naming the object the server named; 53100 disk_full; 28P01 postgres_auth_failed', () => {
    const denied = postgresFailure(serverError('42501', 'permission denied for table _tilehouse_runs'), at);
    expect(denied).toMatchObject({ code: 'permission_denied', targetKind: 'postgres' });
    expect(denied.message).toContain('42501 permission denied for table _tilehouse_runs');
    expect(postgresFailure(serverError('53100', 'could not extend file'), at)).toMatchObject({ code: 'disk_full' });
    expect(postgresFailure(serverError('28P01', 'password authentication failed'), at)).toMatchObject({ code: 'postgres_auth_failed' });
    expect(postgresFailure(serverError('22P02', 'invalid input syntax'), at)).toMatchObject({ code: 'postgres_statement_failed' });
  });

  it.each([
    ['40001', true],
    ['40P01', true],
    ['40003', true],
    ['40002', false],
    ['23505', false],
  ])('SQLSTATE %s is a transaction the server rolled back that may pass again: %s', (code, victim) => {
    expect(isTransactionVictim(serverError(code, 'rolled back'))).toBe(victim);
  });
});
