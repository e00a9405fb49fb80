/**
 * Issue 29's memory part of the bench, the processes: bare `node -e 0`, `tilehouse --help`,
 * `validate`, and runs of 5 rows, 100k and 1M rows into CSV, each in its own process, in the
 * steady state (each run finds the previous run's output; issue 44), started as
 * the checkout's image starts node (its Dockerfile's NODE_OPTIONS and node flags). With a baseline
 * checkout (a second worktree, built), its bundle runs the same cases under its own image's
 * flags, interleaved case by case, so a slow minute of a shared machine hits both alike.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { randomUUID } from 'node:crypto';
import { join, resolve } from 'node:path';
import { BENCH_JOB_NAME } from './bench-query.js';
import { MEMORY_CASES, memoryReport, type CheckoutMemory, type MemoryCase, type MemoryReport, type MemorySample } from './memory-results.js';
import { writeBenchWorkspace, type BenchSink } from './support/bench-workspace.js';
import { deleteObject, startFakeGcsIfInstalled, type RunningFakeGcs } from './support/fake-gcs.js';
import { deleteS3Object, startMotoIfInstalled, type RunningMotoS3 } from './support/moto.js';
import { imageNodeOf } from './support/image-node.js';
import { runMeasured } from './support/measured-child.js';
import { startSandboxProcess } from './support/sandbox-process.js';
import type { SourceEndpoint } from './support/source-requests.js';
import { TokenProxy } from './support/token-proxy.js';

export interface MemoryOptions {
  runs: number;
  itemsPerPage: number;
  /** Checkouts to measure, this one first; each needs dist/bundle/tilehouse.js and a Dockerfile. */
  roots: Array<{ label: string; root: string }>;
  progress: (message: string) => void;
  /** The Parquet and gs:// cases too (`--memory-sinks`). */
  sinks?: boolean;
  /** Where the memory is at the peak, per process (`--memory-breakdown`). */
  breakdown?: boolean;
  /** Only these cases (`--memory-cases`), by name. */
  cases?: readonly string[];
}

interface Target {
  endpoint: SourceEndpoint;
  tokens: TokenProxy;
  sourcePid: number;
  /** The OTLP/HTTP base URL of a telemetry case's receiver. */
  otlp?: string;
  /** The gs:// case's Cloud Storage stand-in. */
  gcs?: RunningFakeGcs;
  /** The s3:// case's S3 stand-in. */
  s3?: RunningMotoS3;
  breakdown?: boolean;
}

/**
 * An OTLP/HTTP receiver that reads every export and answers success, dropping it: what tilehouse
 * pays to send its telemetry, without a collector's own work in the figures (it runs in the bench
 * process, not in the measured one).
 */
async function startOtlpSink(): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => response.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/**
 * Where a checkout's runs of one case write: one workspace (and one gs:// or s3:// prefix) for all
 * its runs, so that each measured run finds the previous run's output in place, as every night
 * but the first does (issue 44: the publish guard reads what a target holds, and a bench that
 * starts each run with an empty output never measured that).
 */
interface Place {
  root: string;
  prefix: string;
}

async function newPlace(): Promise<Place> {
  return { root: await mkdtemp(join(tmpdir(), 'tilehouse-bench-memory-')), prefix: `memory-${randomUUID().slice(0, 8)}` };
}

async function removePlace(place: Place, target: Target): Promise<void> {
  const object = `${place.prefix}/${BENCH_JOB_NAME}.csv`;
  if (target.gcs !== undefined) await deleteObject(target.gcs, object).catch(() => undefined);
  if (target.s3 !== undefined) await deleteS3Object(target.s3, object).catch(() => undefined);
  await rm(place.root, { recursive: true, force: true });
}

/**
 * One measured process of a case. `steady`: the run must find the previous run's output in its
 * place, and its summary must say the guard read it (held the same rows), or the figure is a first
 * night's and the bench fails.
 */
async function measureOnce(
  checkout: CheckoutMemory,
  memoryCase: MemoryCase,
  target: Target,
  itemsPerPage: number,
  place: Place,
  steady: boolean,
): Promise<MemorySample> {
  const { root, prefix } = place;
  const concurrency = memoryCase.run?.concurrency ?? 4;
  const sink: BenchSink =
    memoryCase.sink === 'parquet'
      ? { type: 'parquet' }
      : memoryCase.sink === 'gzip'
        ? { type: 'csv', gzip: true }
        : memoryCase.sink === 'gcs' && target.gcs !== undefined
          ? { type: 'csv', directory: `gs://${target.gcs.bucket}/${prefix}`, storageEmulatorHost: target.gcs.origin }
          : memoryCase.sink === 's3' && target.s3 !== undefined
            ? { type: 'csv', directory: `s3://${target.s3.bucket}/${prefix}`, s3Endpoint: target.s3.origin, awsEnv: target.s3.env }
            : { type: 'csv' };
  const workspace = await writeBenchWorkspace(root, target.endpoint, { concurrency, itemsPerPage, sink });
  const cli = join(checkout.root, 'dist/bundle/tilehouse.js');
  const summaryFile = join(root, 'summary.json');
  await rm(summaryFile, { force: true });
  const args: Record<string, string[]> = {
    'bare node': ['-e', '0'],
    help: [...checkout.node.nodeArgs, cli, '--help'],
    validate: [...checkout.node.nodeArgs, cli, 'validate', '--config', workspace.configFile, '--jobs', workspace.jobsDir],
  };
  const runArgs = ['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir, '--summary-json', summaryFile];
  const nodeArgs =
    args[memoryCase.name] ?? (memoryCase.viaBin ? [join(checkout.root, 'bin/tilehouse.js'), ...runArgs] : [...checkout.node.nodeArgs, cli, ...runArgs]);
  const base = memoryCase.telemetry === true && target.otlp !== undefined ? { ...workspace.env, OTEL_EXPORTER_OTLP_ENDPOINT: target.otlp } : workspace.env;
  // Bare node is node as installed, and so is `npx tilehouse` (bin/tilehouse.js: whatever flags
  // it runs under, it sets itself); every other tilehouse process gets the image's NODE_OPTIONS.
  const asInstalled = memoryCase.name === 'bare node' || memoryCase.viaBin === true || checkout.node.nodeOptions === undefined;
  const flagged = asInstalled ? withoutNodeOptions(base) : { ...base, NODE_OPTIONS: checkout.node.nodeOptions };
  const env = target.breakdown ? { ...flagged, BENCH_MEMORY_BREAKDOWN: '1' } : flagged;
  const run = await runMeasured(nodeArgs, env, target.tokens, target.sourcePid);
  const what = `${checkout.label}: ${memoryCase.name}${steady ? '' : ' (first run)'}`;
  if (run.exitCode !== 0) throw new Error(`${what} failed (exit ${run.exitCode}):\n${run.stderr.slice(-2000)}`);
  if (memoryCase.run !== undefined) {
    const summary = JSON.parse(await readFile(summaryFile, 'utf8')) as {
      tiles?: Array<{ rows: number; guard?: { verdicts: Array<{ held?: number }> } }>;
    };
    const tile = summary.tiles?.[0];
    if (tile?.rows !== memoryCase.run.rows) throw new Error(`${what}: wrote ${String(tile?.rows)} rows, expected ${memoryCase.run.rows}`);
    const held = tile.guard?.verdicts[0]?.held;
    if (steady && held !== memoryCase.run.rows)
      throw new Error(`${what}: the publish guard found ${String(held)} rows in place, expected the previous run's ${memoryCase.run.rows}`);
  }
  return { peakRssMb: run.peakRssMb, cpuMs: run.cpuMs, ...(run.breakdown === undefined ? {} : { breakdown: run.breakdown }) };
}

function withoutNodeOptions(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const copy = { ...env };
  delete copy.NODE_OPTIONS;
  delete copy.TILEHOUSE_RELAUNCHED;
  return copy;
}

/** A source for one case: a sandbox of its rows and latency, or none (the address is never used). */
async function targetFor(memoryCase: MemoryCase, itemsPerPage: number): Promise<Target & { stop(): Promise<void> }> {
  if (memoryCase.run === undefined) {
    const tokens = await TokenProxy.start('http://127.0.0.1:9');
    const endpoint = { url: 'http://127.0.0.1:9', authUrl: tokens.url, tileId: 'unused', clientId: 'unused', clientSecret: 'unused' };
    return { endpoint, tokens, sourcePid: process.pid, stop: () => tokens.close() };
  }
  const sandbox = await startSandboxProcess({ incidents: memoryCase.run.rows, latencyMs: memoryCase.run.latencyMs, itemsPerPage });
  const tokens = await TokenProxy.start(sandbox.url);
  const otlp = memoryCase.telemetry === true ? await startOtlpSink() : undefined;
  const gcs = memoryCase.sink === 'gcs' ? await startFakeGcsIfInstalled() : undefined;
  const s3 = memoryCase.sink === 's3' ? await startMotoIfInstalled() : undefined;
  if ((memoryCase.sink === 'gcs' && gcs === undefined) || (memoryCase.sink === 's3' && s3 === undefined)) {
    await tokens.close();
    await sandbox.stop();
    throw new Error(`memory: the ${memoryCase.name} case needs ${memoryCase.sink === 'gcs' ? 'fake-gcs-server' : 'moto'} (npm run setup:tools)`);
  }
  const endpoint = { url: sandbox.url, authUrl: tokens.url, tileId: sandbox.tileId, clientId: sandbox.clientId, clientSecret: sandbox.clientSecret };
  return {
    endpoint,
    tokens,
    sourcePid: sandbox.pid,
    ...(otlp === undefined ? {} : { otlp: otlp.url }),
    ...(gcs === undefined ? {} : { gcs }),
    ...(s3 === undefined ? {} : { s3 }),
    stop: async () => {
      await gcs?.stop();
      await s3?.stop();
      await otlp?.close();
      await tokens.close();
      await sandbox.stop();
    },
  };
}

export async function measureMemory(options: MemoryOptions): Promise<MemoryReport> {
  const checkouts: CheckoutMemory[] = [];
  for (const { label, root } of options.roots) {
    const dockerfile = join(resolve(root), 'Dockerfile');
    checkouts.push({ label, root: resolve(root), node: imageNodeOf(await readFile(dockerfile, 'utf8'), dockerfile), samples: {}, firstRuns: {} });
  }
  const unknown = options.cases?.filter((name) => !MEMORY_CASES.some((c) => c.name === name)) ?? [];
  if (unknown.length > 0) throw new Error(`--memory-cases: unknown ${unknown.join(', ')}; known: ${MEMORY_CASES.map((c) => c.name).join(', ')}`);
  const cases = MEMORY_CASES.filter((c) => (options.cases === undefined ? c.sink === undefined || options.sinks === true : options.cases.includes(c.name)));
  for (const memoryCase of cases) {
    const target = { ...(await targetFor(memoryCase, options.itemsPerPage)), breakdown: options.breakdown === true };
    const places = new Map<CheckoutMemory, Place>();
    try {
      for (const checkout of checkouts) places.set(checkout, await newPlace());
      // The first night: an empty output. Its figure is reported beside the steady state's.
      if (memoryCase.run !== undefined) {
        for (const checkout of checkouts) {
          options.progress(`memory: ${memoryCase.name}, ${checkout.label} (first run, empty output)`);
          checkout.firstRuns[memoryCase.name] = await measureOnce(checkout, memoryCase, target, options.itemsPerPage, places.get(checkout)!, false);
        }
      }
      for (let round = 1; round <= options.runs; round++) {
        // Alternate which checkout goes first: a run right after another sees a different
        // machine (page cache, the sandbox's warm state); an A/A run of one build against a copy
        // of itself measured the first one of each round 4 % higher in peak RSS and 7-10 % in CPU.
        for (const checkout of round % 2 === 1 ? checkouts : [...checkouts].reverse()) {
          options.progress(`memory: ${memoryCase.name}, ${checkout.label} (run ${round}/${options.runs})`);
          const sample = await measureOnce(checkout, memoryCase, target, options.itemsPerPage, places.get(checkout)!, memoryCase.run !== undefined);
          (checkout.samples[memoryCase.name] ??= []).push(sample);
        }
      }
    } finally {
      for (const place of places.values()) await removePlace(place, target);
      await target.stop();
    }
  }
  return memoryReport(options.runs, checkouts);
}
