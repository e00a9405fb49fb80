import { GetObjectCommand } from '@aws-sdk/client-s3';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BENCH_JOB_NAME } from './bench-query.js';
import type { BaselineInput, BaselineResult } from './scenarios/scenario-input.js';
import type { BigQueryInput } from './scenarios/tilehouse-bigquery.js';
import { writeBenchWorkspace, type BenchSink } from './support/bench-workspace.js';
import type { ImageNode } from './support/image-node.js';
import { countRows, dropDataset, type RunningEmulator } from './support/emulator.js';
import { deleteObject, objectSize, type RunningFakeGcs } from './support/fake-gcs.js';
import { dropIcebergCatalogRow, icebergTotalRecords } from './support/iceberg-table.js';
import { deleteS3Object, deleteS3Prefix, s3ObjectSize, type RunningMotoS3 } from './support/moto.js';
import { countTableRows, psqlCopyRowsPerSec, type RunningPostgresBench, startReaderProbe } from './support/postgres.js';
import { processCpuMs, resultLine, runMeasured, type MeasuredRun } from './support/measured-child.js';
import { sibling } from './support/repo-root.js';
import type { SourceEndpoint } from './support/source-requests.js';
import type { TokenProxy } from './support/token-proxy.js';

export type ScenarioKind =
  | 'transport'
  | 'sequential'
  | 'csv'
  | 'csv-baseline'
  | 'csv-deployed'
  | 'bigquery'
  | 'gcs'
  | 's3'
  | 'postgres'
  | 'parquet'
  | 'parquet-deployed'
  | 'parquet-s3'
  | 'iceberg'
  | 'iceberg-s3';

/** One measured run of one scenario. */
export interface ScenarioRun {
  scenario: ScenarioKind;
  concurrency: number;
  rows: number;
  pages: number;
  /** Spawn → exit. */
  wallMs: number;
  /** Spawn → first token request (process start-up). */
  startMs: number;
  /** First token request → exit: the run proper, what throughput is computed from. */
  runMs: number;
  peakRssMb: number;
  /** CPU time of the scenario's process (all threads), and of the source meanwhile. */
  cpuMs: number;
  sourceCpuMs: number;
  /** sequential with --sequential-max-pages: measured pages of totalPages, wall time scaled up. */
  extrapolatedFromPages?: number;
  /** tilehouse: the tile's own duration from its summary (token to commit, start-up excluded). */
  tileMs?: number;
  /** bigquery: from spawn to the 'loading into BigQuery' log line (extraction into the load file). */
  extractMs?: number;
  /** bigquery: from that line to exit (the emulator's load job, and process exit). */
  loadMs?: number;
  /**
   * gcs: CPU of the fake-gcs-server process meanwhile (receiving, hashing, storing, rewriting the
   * object): on loopback it shares the machine's cores with tilehouse, as Cloud Storage would not.
   */
  storageCpuMs?: number;
  /** postgres: the longest a reader of the table waited for one SELECT during the run (publish included). */
  readerMaxWaitMs?: number;
  /** postgres: the publishing transaction, BEGIN to COMMIT (the summary's publishMs). */
  publishMs?: number;
  /** postgres: rows/s of `psql \copy` loading the same rows from a CSV file, the physical limit. */
  psqlCopyRowsPerSec?: number;
  /**
   * The sink's two phases from the run summary's timings (`prepare:<kind>`, `publish:<kind>`):
   * Parquet's prepare closes the file and its publish renames or copies it into place; Iceberg's
   * prepare closes the data file and writes its manifest, its publish is the commit (manifest
   * list, the catalog's UPDATE of the metadata location, snapshot expiry and file cleanup).
   */
  sinkPrepareMs?: number;
  sinkPublishMs?: number;
  /** tilehouse: the run summary's timings whole (source, reading, each sink's phases), for the JSON report. */
  timings?: Record<string, number>;
}

export interface RunContext {
  endpoint: SourceEndpoint;
  tokens: TokenProxy;
  /** The sandbox process, whose CPU time is sampled around each run. */
  sourcePid: number;
  incidents: number;
  itemsPerPage: number;
  sequentialMaxPages: number;
  cpuProfDir?: string;
  emulator?: RunningEmulator;
  gcs?: RunningFakeGcs;
  s3?: RunningMotoS3;
  postgres?: RunningPostgresBench;
}

const script = (name: string) => sibling(`scenarios/${name}`);

async function withTempDir<T>(body: (root: string) => Promise<T>): Promise<T> {
  const root = await mkdtemp(join(tmpdir(), 'tilehouse-bench-'));
  try {
    return await body(root);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

function times(run: MeasuredRun): Pick<ScenarioRun, 'wallMs' | 'startMs' | 'runMs' | 'peakRssMb' | 'cpuMs' | 'sourceCpuMs'> {
  if (Number.isNaN(run.startMs)) throw new Error('a scenario finished without asking the token proxy for a token');
  return {
    wallMs: run.wallMs,
    startMs: run.startMs,
    runMs: run.wallMs - run.startMs,
    peakRssMb: run.peakRssMb,
    cpuMs: run.cpuMs,
    sourceCpuMs: run.sourceCpuMs,
  };
}

function expectRows(what: string, rows: number, expected: number): void {
  if (rows !== expected) throw new Error(`${what}: read ${rows} rows, expected ${expected}`);
}

async function runBaseline(kind: 'transport' | 'sequential', context: RunContext, concurrency: number): Promise<ScenarioRun> {
  return withTempDir(async (root) => {
    const input: BaselineInput = {
      endpoint: context.endpoint,
      itemsPerPage: context.itemsPerPage,
      concurrency,
      ...(kind === 'sequential' ? { outFile: join(root, 'sequential.csv'), maxPages: context.sequentialMaxPages } : {}),
    };
    const run = await runMeasured([script(kind)], { PATH: process.env.PATH, BENCH_SCENARIO: JSON.stringify(input) }, context.tokens, context.sourcePid);
    const result = resultLine<BaselineResult>(run, kind);
    const figure: ScenarioRun = { scenario: kind, concurrency, rows: result.rows, pages: result.pages, ...times(run) };
    if (result.pages < result.totalPages) {
      // Start-up and exit as measured; the page loop scaled to every page (pages cost the same
      // throughout: the sandbox renders each from a cached result).
      const extra = (result.loopMs * result.totalPages) / result.pages - result.loopMs;
      figure.wallMs += extra;
      figure.runMs += extra;
      // CPU scaled the same way (start-up included, so slightly overstated).
      figure.cpuMs *= result.totalPages / result.pages;
      figure.sourceCpuMs *= result.totalPages / result.pages;
      figure.extrapolatedFromPages = result.pages;
      figure.rows = context.incidents;
      figure.pages = result.totalPages;
    }
    expectRows(kind, figure.rows, context.incidents);
    return figure;
  });
}

export const runTransport = (context: RunContext, concurrency: number) => runBaseline('transport', context, concurrency);
export const runSequential = (context: RunContext) => runBaseline('sequential', context, 1);

interface LogLine {
  msg?: string;
  time?: number;
}

interface RunSummary {
  tiles?: Array<{
    status: string;
    rows: number;
    pages: number;
    durationMs: number;
    error?: { message: string };
    outputs?: Array<{ details?: { publishMs?: number } }>;
    timings?: Record<string, number>;
  }>;
}

/**
 * The tile summary (from `--summary-json FILE`, the CLI's machine-readable output), checked for
 * success, and the JSON log lines (stderr, off a terminal) for the timing of phases.
 */
async function tileSummary(run: MeasuredRun, summaryFile: string, what: string, expectedRows: number) {
  const logs = run.stderr
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as LogLine);
  const summary =
    (await readFile(summaryFile, 'utf8').then(
      (text) => JSON.parse(text) as RunSummary,
      () => undefined,
    )) ?? {};
  const tile = summary.tiles?.[0];
  if (run.exitCode !== 0 || tile === undefined || tile.status !== 'succeeded') {
    throw new Error(`${what} failed (exit ${run.exitCode}): ${tile?.error?.message ?? ''}\n${run.stderr.slice(-2000)}`);
  }
  expectRows(what, tile.rows, expectedRows);
  return { tile, logs };
}

interface BundleRun {
  run: MeasuredRun;
  tile: NonNullable<RunSummary['tiles']>[number];
  outDir: string;
  /** CPU of `storagePid` during the run, when one was given. */
  storageCpuMs?: number;
}

/**
 * The shipped bundle (`dist/bundle/tilehouse.js run`) in its own process, measured, on a
 * workspace of its own in `root` writing to `sink`; its tile summary checked for success and
 * every row. With `image`, started as the image starts it (its NODE_OPTIONS and node flags).
 */
async function runBundle(
  root: string,
  context: RunContext,
  options: { what: string; concurrency: number; sink: BenchSink; image?: ImageNode; nodeArgs?: string[]; storagePid?: number; cli?: string },
): Promise<BundleRun> {
  const { concurrency, image, storagePid } = options;
  const workspace = await writeBenchWorkspace(root, context.endpoint, { concurrency, itemsPerPage: context.itemsPerPage, sink: options.sink });
  const summaryFile = join(root, 'summary.json');
  const args = [...(options.nodeArgs ?? []), ...(image?.nodeArgs ?? []), options.cli ?? 'dist/bundle/tilehouse.js', 'run'];
  const env = image?.nodeOptions === undefined ? workspace.env : { ...workspace.env, NODE_OPTIONS: image.nodeOptions };
  const storageCpuBefore = storagePid === undefined ? 0 : await processCpuMs(storagePid);
  const run = await runMeasured(
    [...args, '--config', workspace.configFile, '--jobs', workspace.jobsDir, '--summary-json', summaryFile],
    env,
    context.tokens,
    context.sourcePid,
  );
  const storageCpuMs = storagePid === undefined ? undefined : (await processCpuMs(storagePid)) - storageCpuBefore;
  const { tile } = await tileSummary(run, summaryFile, `${options.what} (concurrency ${concurrency})`, context.incidents);
  return { run, tile, outDir: workspace.outDir, ...(storageCpuMs === undefined ? {} : { storageCpuMs }) };
}

/** The figures of one bundle run. */
function bundleFigures(scenario: ScenarioKind, concurrency: number, { run, tile, storageCpuMs }: BundleRun): ScenarioRun {
  // The job has one sink: its phases are the one prepare:<kind> and publish:<kind> of the timings.
  const phase = (name: 'prepare' | 'publish') => Object.entries(tile.timings ?? {}).find(([key]) => key.startsWith(`${name}:`))?.[1];
  const sinkPrepareMs = phase('prepare');
  const sinkPublishMs = phase('publish');
  return {
    scenario,
    concurrency,
    rows: tile.rows,
    pages: tile.pages,
    ...times(run),
    tileMs: tile.durationMs,
    ...(storageCpuMs === undefined ? {} : { storageCpuMs }),
    ...(sinkPrepareMs === undefined ? {} : { sinkPrepareMs }),
    ...(sinkPublishMs === undefined ? {} : { sinkPublishMs }),
    ...(tile.timings === undefined ? {} : { timings: tile.timings }),
  };
}

/**
 * (c) The compiled CLI, as it ships, in its own process; with `image`, started as the image
 * starts it (its NODE_OPTIONS and node flags, read from the Dockerfile).
 */
export async function runTilehouseCsv(context: RunContext, concurrency: number, image?: ImageNode): Promise<ScenarioRun> {
  return withTempDir(async (root) => {
    const nodeArgs = context.cpuProfDir ? ['--cpu-prof', '--cpu-prof-dir', context.cpuProfDir] : [];
    const ran = await runBundle(root, context, { what: 'tilehouse csv', concurrency, sink: { type: 'csv' }, nodeArgs, ...(image ? { image } : {}) });
    return bundleFigures(image === undefined ? 'csv' : 'csv-deployed', concurrency, ran);
  });
}

/**
 * (c) of another checkout (`--baseline DIR`, built): its shipped bundle, on the same job, source
 * and node as (c), so a head and an older commit are compared within one run.
 */
export async function runBaselineCsv(context: RunContext, concurrency: number, checkout: string): Promise<ScenarioRun> {
  return withTempDir(async (root) => {
    // Its profiles apart from this checkout's (node makes the directory).
    const nodeArgs = context.cpuProfDir ? ['--cpu-prof', '--cpu-prof-dir', join(context.cpuProfDir, 'baseline')] : [];
    const cli = join(checkout, 'dist/bundle/tilehouse.js');
    const ran = await runBundle(root, context, { what: `baseline ${checkout} csv`, concurrency, sink: { type: 'csv' }, nodeArgs, cli });
    return bundleFigures('csv-baseline', concurrency, ran);
  });
}

/**
 * (parquet) (c) with a Parquet sink instead of the CSV sink: the same shipped bundle, job and
 * columns, into a local file; the file is checked to be Parquet (its trailing magic) after the run.
 * With `image`, started as the image starts it (its NODE_OPTIONS and node flags, read from the Dockerfile).
 */
export async function runTilehouseParquet(context: RunContext, concurrency: number, image?: ImageNode): Promise<ScenarioRun> {
  return withTempDir(async (root) => {
    const ran = await runBundle(root, context, { what: 'tilehouse parquet', concurrency, sink: { type: 'parquet' }, ...(image ? { image } : {}) });
    const bytes = await readFile(join(ran.outDir, `${BENCH_JOB_NAME}.parquet`));
    if (bytes.subarray(-4).toString('latin1') !== 'PAR1')
      throw new Error(`tilehouse parquet: ${BENCH_JOB_NAME}.parquet does not end with PAR1 after a successful run`);
    return bundleFigures(image === undefined ? 'parquet' : 'parquet-deployed', concurrency, ran);
  });
}

/**
 * (parquet-s3) the Parquet sink into S3: the same shipped bundle and job, its Parquet directory an
 * `s3://` prefix on moto (loopback), `sinks.s3.endpoint` set, credentials from the environment; the
 * object is checked to be Parquet (its trailing magic) after the run. The store iceberg-s3 writes to.
 */
export async function runTilehouseParquetS3(context: RunContext, concurrency: number): Promise<ScenarioRun> {
  const s3 = context.s3;
  if (s3 === undefined) throw new Error('parquet-s3 scenario without moto');
  const prefix = `bench-${randomUUID().slice(0, 8)}`;
  const key = `${prefix}/${BENCH_JOB_NAME}.parquet`;
  return withTempDir(async (root) => {
    const sink: BenchSink = { type: 'parquet', directory: `s3://${s3.bucket}/${prefix}`, s3Endpoint: s3.origin, awsEnv: s3.env };
    try {
      const ran = await runBundle(root, context, { what: 'tilehouse parquet-s3', concurrency, sink, storagePid: s3.pid });
      // The whole object (moto answers a ranged GET with the whole object's Content-MD5, which the SDK refuses).
      const object = await s3.client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key }));
      const bytes = Buffer.from((await object.Body?.transformToByteArray()) ?? []);
      if (bytes.subarray(-4).toString('latin1') !== 'PAR1')
        throw new Error(`tilehouse parquet-s3: s3://${s3.bucket}/${key} is missing or does not end with PAR1 after a successful run`);
      return bundleFigures('parquet-s3', concurrency, ran);
    } finally {
      await deleteS3Prefix(s3, prefix).catch(() => undefined);
    }
  });
}

/**
 * (iceberg, iceberg-s3) the Iceberg sink, `writeMode: replace`, through the JDBC catalog on the
 * bench's PostgreSQL (no Java), the table's location a local directory or (`store: 's3'`) an
 * `s3://` prefix on moto. Two nights, as the postgres scenario: the first creates the table, the
 * second (measured) is the steady state, committing a snapshot over last night's. After it the
 * table must hold exactly the run's rows: `total-records` of the current snapshot in the metadata
 * file the catalog's `iceberg_tables` row points at (no data read).
 */
export async function runTilehouseIceberg(context: RunContext, concurrency: number, store: 'local' | 's3'): Promise<ScenarioRun> {
  const server = context.postgres;
  if (server === undefined) throw new Error('iceberg scenario without a PostgreSQL server');
  const s3 = store === 's3' ? context.s3 : undefined;
  if (store === 's3' && s3 === undefined) throw new Error('iceberg-s3 scenario without moto');
  const scenario: ScenarioKind = store === 's3' ? 'iceberg-s3' : 'iceberg';
  const suffix = randomUUID().replaceAll('-', '').slice(0, 8);
  const table = { catalogName: 'tilehouse_bench', namespace: 'bench', name: `incidents_${suffix}` };
  const prefix = `bench-${suffix}`;
  return withTempDir(async (root) => {
    const sink: BenchSink = {
      type: 'iceberg',
      table: `${table.namespace}.${table.name}`,
      catalogName: table.catalogName,
      host: server.host,
      port: server.port,
      database: server.database,
      user: server.user,
      passwordEnv: server.env,
      ...(s3 ? { location: `s3://${s3.bucket}/${prefix}`, s3Endpoint: s3.origin, awsEnv: s3.env } : { location: join(root, 'warehouse') }),
    };
    const storage = s3 ? { storagePid: s3.pid } : {};
    try {
      await runBundle(join(root, 'first-night'), context, { what: `tilehouse ${scenario}, first night`, concurrency, sink, ...storage });
      const ran = await runBundle(join(root, 'second-night'), context, { what: `tilehouse ${scenario}`, concurrency, sink, ...storage });
      const held = await icebergTotalRecords(server, table, s3);
      expectRows(`tilehouse ${scenario}: the table's current snapshot (total-records)`, held ?? Number.NaN, context.incidents);
      return bundleFigures(scenario, concurrency, ran);
    } finally {
      await dropIcebergCatalogRow(server, table).catch(() => undefined);
      if (s3) await deleteS3Prefix(s3, prefix).catch(() => undefined);
    }
  });
}

/**
 * (gcs) (c) into Cloud Storage: the same shipped bundle, the same job, its CSV directory a
 * `gs://` prefix on fake-gcs-server (loopback, objects on disk), STORAGE_EMULATOR_HOST set. The
 * rows stream into a resumable upload; the run ends with the server-side rewrite onto the target.
 */
export async function runTilehouseGcs(context: RunContext, concurrency: number): Promise<ScenarioRun> {
  const gcs = context.gcs;
  if (gcs === undefined) throw new Error('gcs scenario without fake-gcs-server');
  const prefix = `bench-${randomUUID().slice(0, 8)}`;
  const object = `${prefix}/${BENCH_JOB_NAME}.csv`;
  return withTempDir(async (root) => {
    const sink: BenchSink = { type: 'csv', directory: `gs://${gcs.bucket}/${prefix}`, storageEmulatorHost: gcs.origin };
    try {
      const ran = await runBundle(root, context, { what: 'tilehouse gcs', concurrency, sink, storagePid: gcs.pid });
      // The object is there, and no bigger than a header: rows were checked by the summary.
      if (((await objectSize(gcs, object)) ?? 0) <= 100)
        throw new Error(`tilehouse gcs: gs://${gcs.bucket}/${object} is missing or empty after a successful run`);
      return bundleFigures('gcs', concurrency, ran);
    } finally {
      await deleteObject(gcs, object).catch(() => undefined);
    }
  });
}

/**
 * (s3) (c) into S3: the same shipped bundle, the same job, its CSV directory an `s3://` prefix on
 * moto (loopback), `sinks.s3.endpoint` set, credentials from the environment. The rows stream to a
 * temp key (multipart above 8 MiB); the run ends with the conditional CopyObject onto the target.
 */
export async function runTilehouseS3(context: RunContext, concurrency: number): Promise<ScenarioRun> {
  const s3 = context.s3;
  if (s3 === undefined) throw new Error('s3 scenario without moto');
  const prefix = `bench-${randomUUID().slice(0, 8)}`;
  const key = `${prefix}/${BENCH_JOB_NAME}.csv`;
  return withTempDir(async (root) => {
    const sink: BenchSink = { type: 'csv', directory: `s3://${s3.bucket}/${prefix}`, s3Endpoint: s3.origin, awsEnv: s3.env };
    try {
      const ran = await runBundle(root, context, { what: 'tilehouse s3', concurrency, sink, storagePid: s3.pid });
      if (((await s3ObjectSize(s3, key)) ?? 0) <= 100) throw new Error(`tilehouse s3: s3://${s3.bucket}/${key} is missing or empty after a successful run`);
      return bundleFigures('s3', concurrency, ran);
    } finally {
      await deleteS3Object(s3, key).catch(() => undefined);
    }
  });
}

/**
 * (postgres) (c) into a PostgreSQL table: the same shipped bundle and job, `writeMode: replace`, on
 * a durable cluster on loopback. Two nights: the first creates the table, the second (measured) is
 * the steady state, replacing a million rows with the readers' table in place, while a reader
 * probe times its SELECTs. Then `psql \copy` loads the same rows from a CSV file: the physical limit.
 */
export async function runTilehousePostgres(context: RunContext, concurrency: number): Promise<ScenarioRun> {
  const server = context.postgres;
  if (server === undefined) throw new Error('postgres scenario without a PostgreSQL server');
  const sink: BenchSink = { type: 'postgres', host: server.host, port: server.port, database: server.database, user: server.user, passwordEnv: server.env };
  return withTempDir(async (root) => {
    await runBundle(join(root, 'first-night'), context, { what: 'tilehouse postgres, first night', concurrency, sink });
    const probe = await startReaderProbe(server, BENCH_JOB_NAME);
    const ran = await runBundle(join(root, 'second-night'), context, { what: 'tilehouse postgres', concurrency, sink }).catch(async (error: unknown) => {
      await probe.stop();
      throw error;
    });
    const reader = await probe.stop();
    expectRows('tilehouse postgres: the table', await countTableRows(server, BENCH_JOB_NAME), context.incidents);
    const figures = bundleFigures('postgres', concurrency, ran);
    const publishMs = ran.tile.outputs?.[0]?.details?.publishMs;
    return {
      ...figures,
      readerMaxWaitMs: reader.maxWaitMs,
      ...(typeof publishMs === 'number' ? { publishMs } : {}),
      psqlCopyRowsPerSec: await psqlCopyRowsPerSec(server, BENCH_JOB_NAME, root),
    };
  });
}

/** (d) The CLI's main() with an emulator client, in its own process. */
export async function runTilehouseBigQuery(context: RunContext, concurrency: number): Promise<ScenarioRun> {
  const emulator = context.emulator;
  if (emulator === undefined) throw new Error('bigquery scenario without an emulator');
  const dataset = `tilehouse_bench_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  const sink: BenchSink = { type: 'bigquery', projectId: emulator.projectId, dataset };
  return withTempDir(async (root) => {
    const workspace = await writeBenchWorkspace(root, context.endpoint, { concurrency, itemsPerPage: context.itemsPerPage, sink });
    const summaryFile = join(root, 'summary.json');
    const input: BigQueryInput = {
      configFile: workspace.configFile,
      jobsDir: workspace.jobsDir,
      summaryFile,
      apiEndpoint: emulator.apiEndpoint,
      projectId: emulator.projectId,
    };
    try {
      const run = await runMeasured(
        [script('tilehouse-bigquery')],
        { ...workspace.env, BENCH_SCENARIO: JSON.stringify(input) },
        context.tokens,
        context.sourcePid,
      );
      const { tile, logs } = await tileSummary(run, summaryFile, `tilehouse bigquery (concurrency ${concurrency})`, context.incidents);
      const loaded = await countRows(emulator, dataset, BENCH_JOB_NAME);
      expectRows('the emulator table', loaded, context.incidents);
      const loadingAt = logs.find((line) => line.msg?.startsWith('loading into') === true && line.msg.includes('BigQuery'))?.time;
      const extractMs = loadingAt === undefined ? undefined : loadingAt - run.spawnedAtEpochMs;
      return {
        scenario: 'bigquery',
        concurrency,
        rows: tile.rows,
        pages: tile.pages,
        ...times(run),
        tileMs: tile.durationMs,
        ...(extractMs === undefined ? {} : { extractMs, loadMs: run.wallMs - extractMs }),
      };
    } finally {
      await dropDataset(emulator, dataset).catch(() => undefined);
    }
  });
}
