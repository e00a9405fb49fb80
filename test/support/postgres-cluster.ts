import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { accessSync, constants, readdirSync } from 'node:fs';
import { chown, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './bigquery-emulator-process.js';
import { stopProcess } from './child-process.js';

/**
 * A throwaway PostgreSQL cluster (Debian's `postgresql` package) and a PgBouncer in transaction
 * mode in front of it, both on loopback, for the postgres sink's tests and the benchmark, without
 * vitest. PostgreSQL refuses to run as root, and CI runs as root: then every server process runs
 * as `nobody` (runuser), in a temp directory handed to it; a developer's own user runs them directly.
 */

const run = promisify(execFile);

/** Where the tests and the bench reach the cluster: a superuser with a password (SCRAM), on 127.0.0.1. */
export interface PostgresServer {
  host: string;
  port: number;
  /** PgBouncer in transaction pooling, in front of the same server. */
  bouncerPort: number;
  user: string;
  password: string;
  /** The directory of psql, initdb, pg_ctl. */
  binDirectory: string;
  /** The server's major version, e.g. 15. */
  version: number;
}

export interface RunningPostgres extends PostgresServer {
  stop(): Promise<void>;
  /** The server alone stopped (`pg_ctl stop -m fast`: sessions ended with 57P01, open transactions rolled back), its data kept. */
  stopServer(): Promise<void>;
  /** The server started again on its port after stopServer. */
  startServer(): Promise<void>;
  /** The directory of the cluster's data (for a test's own postgresql.conf and certificates). */
  dataDirectory: string;
}

export const POSTGRES_TEST_USER = 'tilehouse';
// A test cluster on loopback only, dropped after the run: its password is no secret.
export const POSTGRES_TEST_PASSWORD = 'tilehouse-test-password';

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * The directory of PostgreSQL's server binaries: $POSTGRES_BIN_DIR (which must hold pg_ctl), else
 * Debian's /usr/lib/postgresql/<newest>/bin, else the directory of a pg_ctl on PATH; undefined when none.
 */
export function findPostgresBinDirectory(env: NodeJS.ProcessEnv = process.env, debianRoot = '/usr/lib/postgresql'): string | undefined {
  const explicit = env.POSTGRES_BIN_DIR;
  if (explicit) {
    if (executable(join(explicit, 'pg_ctl'))) return explicit;
    throw new Error(`POSTGRES_BIN_DIR=${explicit} holds no executable pg_ctl`);
  }
  let versions: string[] = [];
  try {
    versions = readdirSync(debianRoot).filter((name) => /^\d+$/.test(name));
  } catch {
    // no Debian layout
  }
  versions.sort((a, b) => Number(b) - Number(a));
  const candidates = [...versions.map((version) => join(debianRoot, version, 'bin')), ...(env.PATH ?? '').split(delimiter).filter(Boolean)];
  return candidates.find((directory) => executable(join(directory, 'pg_ctl')) && executable(join(directory, 'initdb')));
}

/** PgBouncer: $PGBOUNCER_BIN, else Debian's /usr/sbin/pgbouncer, else PATH; undefined when absent. */
export function findPgBouncer(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const explicit = env.PGBOUNCER_BIN;
  if (explicit) {
    if (executable(explicit)) return explicit;
    throw new Error(`PGBOUNCER_BIN=${explicit} is not an executable file`);
  }
  return [
    '/usr/sbin/pgbouncer',
    ...(env.PATH ?? '')
      .split(delimiter)
      .filter(Boolean)
      .map((directory) => join(directory, 'pgbouncer')),
  ].find(executable);
}

/** As root, the command runs as `nobody`: PostgreSQL will not run as root. */
function asServerUser(command: string, args: string[]): [string, string[]] {
  return userInfo().uid === 0 ? ['runuser', ['-u', 'nobody', '--', command, ...args]] : [command, args];
}

async function handOver(path: string): Promise<void> {
  if (userInfo().uid !== 0) return;
  const { stdout } = await run('id', ['-u', 'nobody']);
  const { stdout: group } = await run('id', ['-g', 'nobody']);
  await chown(path, Number(stdout.trim()), Number(group.trim()));
}

/**
 * initdb into a temp directory, the server started on a free loopback port (no Unix socket:
 * every client goes through TCP, as a remote warehouse would), and PgBouncer in transaction
 * pooling on another. `stop()` stops both and removes the directory.
 */
export async function startPostgres(binDirectory: string, bouncerBinary: string | undefined, options: { durable?: boolean } = {}): Promise<RunningPostgres> {
  const directory = await mkdtemp(join(tmpdir(), 'tilehouse-postgres-'));
  await handOver(directory);
  const data = join(directory, 'data');
  const passwordFile = join(directory, 'password');
  await writeFile(passwordFile, `${POSTGRES_TEST_PASSWORD}\n`, { mode: 0o600 });
  await handOver(passwordFile);
  const port = await freePort();
  const [initdb, initArgs] = asServerUser(join(binDirectory, 'initdb'), [
    '-D',
    data,
    '-U',
    POSTGRES_TEST_USER,
    `--pwfile=${passwordFile}`,
    '--auth=scram-sha-256',
    '--encoding=UTF8',
    '--locale=C',
    '--no-sync',
  ]);
  let bouncer: ChildProcess | undefined;
  const stop = async () => {
    if (bouncer) await stopProcess(bouncer);
    const [pgCtl, stopArgs] = asServerUser(join(binDirectory, 'pg_ctl'), ['stop', '-D', data, '-m', 'immediate', '-w']);
    await run(pgCtl, stopArgs).catch(() => undefined);
    await rm(directory, { recursive: true, force: true });
  };
  try {
    await run(initdb, initArgs, { cwd: directory });
    const settings = [
      `-c listen_addresses=127.0.0.1`,
      `-c port=${port}`,
      `-c unix_socket_directories=''`,
      // A test cluster: durability is not what is tested, speed is welcome. The benchmark's is
      // durable (durable: true), as the local CSV file it is compared with is fsynced.
      ...(options.durable ? [] : ['-c fsync=off', '-c synchronous_commit=off', '-c full_page_writes=off']),
      `-c max_connections=200`,
    ].join(' ');
    const [pgCtl, startArgs] = asServerUser(join(binDirectory, 'pg_ctl'), [
      'start',
      '-D',
      data,
      '-w',
      '-t',
      '60',
      '-l',
      join(directory, 'server.log'),
      '-o',
      settings,
    ]);
    await run(pgCtl, startArgs, { cwd: directory });
    const [, fastStopArgs] = asServerUser(join(binDirectory, 'pg_ctl'), ['stop', '-D', data, '-m', 'fast', '-w']);
    const stopServer = async () => {
      await run(pgCtl, fastStopArgs);
    };
    const startServer = async () => {
      await run(pgCtl, startArgs, { cwd: directory });
    };
    const version = Number((await run(join(binDirectory, 'pg_ctl'), ['--version'])).stdout.match(/(\d+)\./)?.[1] ?? 0);
    let bouncerPort = 0;
    if (bouncerBinary !== undefined) {
      bouncerPort = await freePort();
      bouncer = await startBouncer(bouncerBinary, directory, port, bouncerPort);
    }
    return {
      host: '127.0.0.1',
      port,
      bouncerPort,
      user: POSTGRES_TEST_USER,
      password: POSTGRES_TEST_PASSWORD,
      binDirectory,
      version,
      stop,
      stopServer,
      startServer,
      dataDirectory: data,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** PgBouncer in transaction pooling, every database of the server, the test user by a plain-text userlist. */
async function startBouncer(binary: string, directory: string, serverPort: number, port: number): Promise<ChildProcess> {
  const ini = join(directory, 'pgbouncer.ini');
  const users = join(directory, 'userlist.txt');
  await writeFile(users, `"${POSTGRES_TEST_USER}" "${POSTGRES_TEST_PASSWORD}"\n`, { mode: 0o600 });
  await writeFile(
    ini,
    [
      '[databases]',
      `* = host=127.0.0.1 port=${serverPort}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = scram-sha-256',
      `auth_file = ${users}`,
      'pool_mode = transaction',
      'max_client_conn = 200',
      'default_pool_size = 20',
      // Drivers send these at startup; PgBouncer refuses unknown parameters (the notes' `options`).
      'ignore_startup_parameters = extra_float_digits',
      '',
    ].join('\n'),
  );
  await handOver(ini);
  await handOver(users);
  const [command, args] = asServerUser(binary, [ini]);
  const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let tail = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    tail = (tail + chunk.toString('utf8')).slice(-4_000);
  });
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`pgbouncer exited early (code ${child.exitCode}):\n${tail}`);
    if (await listens(port)) return child;
    if (Date.now() > deadline) {
      await stopProcess(child);
      throw new Error(`pgbouncer did not listen on 127.0.0.1:${port}:\n${tail}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function listens(port: number): Promise<boolean> {
  const { connect } = await import('node:net');
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}

/** psql against the cluster as the test user: one command's output, unaligned, tuples only. */
export async function psql(server: PostgresServer, database: string, sql: string, options: { port?: number } = {}): Promise<string> {
  const { stdout } = await run(
    join(server.binDirectory, 'psql'),
    ['-X', '-v', 'ON_ERROR_STOP=1', '-A', '-t', '-h', server.host, '-p', String(options.port ?? server.port), '-U', server.user, '-d', database, '-c', sql],
    { env: { ...process.env, PGPASSWORD: server.password }, maxBuffer: 256 * 1024 * 1024 },
  );
  return stdout;
}
