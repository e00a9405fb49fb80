import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { underCi } from './ci.js';
import { stopProcess } from './child-process.js';
import type { ReadRows } from './iceberg-readers.js';

/**
 * Spark 3.5.9 with Apache Iceberg's Spark runtime 1.10.1 (`npm run setup:iceberg-spark`: a venv
 * and jars under .tools/iceberg-spark), the Iceberg tests' third reader and a writer of tables
 * for tilehouse to append onto. A Spark session takes ~45 s to start on an idle 2-core machine
 * (longer beside other tests), so one session serves a whole test file: `startIcebergSpark` in
 * `beforeAll`, then requests one after another to `iceberg_spark.py` beside this file (its opening
 * comment lists them), values back as text by iceberg_read.py's rules.
 */

/** Where `npm run setup:iceberg-spark` installs (venv/ and jars/). */
export const PROJECT_LOCAL_ICEBERG_SPARK = fileURLToPath(new URL('../../.tools/iceberg-spark', import.meta.url));
const SCRIPT = fileURLToPath(new URL('./iceberg_spark.py', import.meta.url));

export interface IcebergSparkInstall {
  python: string;
  jars: string[];
}

/** $ICEBERG_SPARK_HOME or the project-local install, or null when absent (a failure under CI). */
export function icebergSparkOrSkip(env: NodeJS.ProcessEnv = process.env, projectLocal = PROJECT_LOCAL_ICEBERG_SPARK): IcebergSparkInstall | null {
  const home = env.ICEBERG_SPARK_HOME || projectLocal;
  // The stamp is written last by the installer: an install without it is half finished.
  if (existsSync(join(home, '.install.sha256'))) {
    const jars = readdirSync(join(home, 'jars'))
      .filter((name) => name.endsWith('.jar'))
      .sort()
      .map((name) => join(home, 'jars', name));
    return { python: join(home, 'venv', 'bin', 'python'), jars };
  }
  if (underCi(env))
    throw new Error(
      `CI is set but Spark with Iceberg's runtime is not installed in ${home}: run \`npm run setup:iceberg-spark\` (python3, java 17 and mvn needed).`,
    );
  return null;
}

/**
 * Whether the install's session reads `s3://` tables: Apache Iceberg's AWS bundle (S3FileIO with the
 * AWS SDK inside) among its jars. An install made before the pom listed it lacks it: under CI that
 * is a failure (`npm run setup:iceberg-spark` installs it), elsewhere the reason a test is skipped.
 */
export function sparkS3Missing(install: IcebergSparkInstall | null, env: NodeJS.ProcessEnv = process.env): string | null {
  if (install === null || install.jars.some((jar) => /\/iceberg-aws-bundle-[^/]+\.jar$/.test(jar))) return null;
  const reason = "Spark's install has no iceberg-aws-bundle jar (reading s3:// tables): run `npm run setup:iceberg-spark`";
  if (underCi(env)) throw new Error(`CI is set but ${reason}`);
  return reason;
}

/** An Iceberg type as the tests spell it (pyiceberg's): long, decimal(38, 9), string, timestamptz, date, double. */
export interface SparkField {
  name: string;
  type: string;
}

/** A table's snapshots as Iceberg's Java library in Spark's session reads its metadata. */
export interface SparkSnapshots {
  currentSnapshotId: string | null;
  snapshots: { id: string; parent: string | null; operation: string; summary: Record<string, string>; sequenceNumber: string }[];
  /** The snapshot log's ids, oldest first (what `history` shows). */
  history: string[];
}

/** How Spark sees a table's partitioning (iceberg_spark.py's `partitions`). */
export interface SparkPartitions {
  /** The current spec's fields, from Iceberg's Java table in Spark's session. */
  spec: { name: string; transform: string; source: string; fieldId: number }[];
  /** DESCRIBE TABLE's `# Partitioning` lines, in Spark's words (`days(day)`). */
  partitioning: string[];
  /** Each data file of the current snapshot as Spark's scan plans it: its partition as the spec's path text (`day_day=2026-06-01`), its record count. */
  files: { partition: string; records: string }[];
  /** With `metadataTable`: the `partitions` metadata table's partition (its fields' values), record_count, file_count. */
  rows?: [(string | null)[], string, string][];
}

export interface IcebergSpark {
  /** Registers an Iceberg catalog (SparkCatalog) under `name`; a JDBC catalog's name must be its catalog_name. */
  addCatalog(name: string, properties: Record<string, string>): Promise<void>;
  /** `catalog.ns.table`'s current snapshot as Spark reads it, and its COUNT(*) (from the manifests' record counts). */
  read(table: string): Promise<ReadRows & { count: number; types: string[] }>;
  /** The table's partition spec, DESCRIBE's partitioning, its files' partitions and (with `metadataTable`) its `partitions` metadata table. */
  partitions(table: string, options?: { metadataTable?: boolean }): Promise<SparkPartitions>;
  /** Creates the table (format version 2) and appends `rows` (text) when there are any; the snapshot id, or null for none. */
  create(table: string, fields: readonly SparkField[], rows: readonly (readonly (string | null)[])[]): Promise<string | null>;
  /** Appends `rows` (text, in the table's column order) with Spark's writer; the new snapshot id. */
  append(table: string, rows: readonly (readonly (string | null)[])[]): Promise<string>;
  snapshots(table: string): Promise<SparkSnapshots>;
  stop(): Promise<void>;
}

type Answer = { ready: true } | { ok: unknown } | { error: string };

/** Starts a Spark session (`java` from PATH) and resolves once it answers; tens of seconds. */
export async function startIcebergSpark(install: IcebergSparkInstall): Promise<IcebergSpark> {
  const scratch = await mkdtemp(join(tmpdir(), 'tilehouse-spark-'));
  const child = spawn(install.python, [SCRIPT], {
    cwd: scratch,
    // Descriptor 3 carries the answers: Spark's JVM writes to stdout as it likes.
    stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
    env: {
      ...process.env,
      PYTHONDONTWRITEBYTECODE: '1',
      PYSPARK_PYTHON: install.python,
      SPARK_LOCAL_IP: '127.0.0.1',
      ICEBERG_SPARK_JARS: install.jars.join(','),
    },
  });
  let tail = '';
  const keep = (chunk: Buffer) => {
    tail = (tail + chunk.toString('utf8')).slice(-8_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const answers = createInterface({ input: child.stdio[3] as Readable })[Symbol.asyncIterator]();
  const next = async (what: string): Promise<Answer> => {
    const { value, done } = await answers.next();
    if (done) {
      if (child.exitCode === null && child.signalCode === null) await once(child, 'exit');
      throw new Error(`iceberg_spark.py ended (exit ${String(child.exitCode ?? child.signalCode)}) before answering ${what}:\n${tail}`);
    }
    return JSON.parse(value as string) as Answer;
  };
  const stop = async () => {
    (child.stdin as Writable).end();
    // Closing stdin ends the session (spark.stop()); a session that lingers is stopped.
    const timer = setTimeout(() => void stopProcess(child), 30_000);
    if (child.exitCode === null && child.signalCode === null) await once(child, 'exit');
    clearTimeout(timer);
    await rm(scratch, { recursive: true, force: true });
  };
  try {
    await next('that its session started');
  } catch (error) {
    await stop();
    throw error;
  }

  // One request at a time, in the order asked.
  let queue: Promise<unknown> = Promise.resolve();
  const ask = <T>(op: string, request: Record<string, unknown>): Promise<T> => {
    const asked = queue.then(async () => {
      (child.stdin as Writable).write(`${JSON.stringify({ op, ...request })}\n`);
      const answer = await next(op);
      if ('error' in answer) throw new Error(`Spark ${op} ${JSON.stringify(request.table ?? request.name)} failed:\n${answer.error}`);
      return (answer as { ok: T }).ok;
    });
    queue = asked.catch(() => undefined);
    return asked;
  };
  return {
    addCatalog: async (name, properties) => {
      await ask('catalog', { name, properties });
    },
    read: (table) => ask<ReadRows & { count: number; types: string[] }>('read', { table }),
    partitions: (table, options = {}) => ask<SparkPartitions>('partitions', { table, metadataTable: options.metadataTable === true }),
    create: async (table, fields, rows) => (await ask<{ snapshotId: string | null }>('create', { table, fields, rows })).snapshotId,
    append: async (table, rows) => (await ask<{ snapshotId: string }>('append', { table, rows })).snapshotId,
    snapshots: (table) => ask<SparkSnapshots>('snapshots', { table }),
    stop,
  };
}
