/**
 * `npm run bench`: tilehouse against the sandbox, side by side with a bare transport loop and a
 * sequential client, each scenario in its own process, every figure from the same run. See
 * `npm run bench -- --help`.
 */
import { cpus } from 'node:os';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BENCH_QUERY } from './bench-query.js';
import { measureColdStart } from './cold-start.js';
import { formatReport } from './format-report.js';
import { judgeMemory } from './memory-results.js';
import { measureMemory } from './memory-footprint.js';
import { BENCH_HELP, parseBenchOptions, type BenchOptions } from './options.js';
import { formatPeersReport } from './peers/peers-report.js';
import { runPeers } from './peers/run-peers.js';
import { compressedRatios, groupRatios, judge, key, median, roundOrder, toFigure, type BenchReport, type Group } from './results.js';
import {
  runBaselineCsv,
  runSequential,
  runTilehouseBigQuery,
  runTilehouseCsv,
  runTilehouseGcs,
  runTilehouseS3,
  runTilehousePostgres,
  runTilehouseParquet,
  runTilehouseParquetS3,
  runTilehouseIceberg,
  runTransport,
  type RunContext,
  type ScenarioRun,
} from './scenario-runs.js';
import { startEmulatorIfInstalled, type RunningEmulator } from './support/emulator.js';
import { startFakeGcsIfInstalled, type RunningFakeGcs } from './support/fake-gcs.js';
import { startMotoIfInstalled, type RunningMotoS3 } from './support/moto.js';
import { startPostgresIfInstalled, type RunningPostgresBench } from './support/postgres.js';
import { imageNodeOf, type ImageNode } from './support/image-node.js';
import { repoRoot } from './support/repo-root.js';
import { startSandboxProcess } from './support/sandbox-process.js';
import { TokenProxy } from './support/token-proxy.js';

const progress = (message: string) => process.stderr.write(`bench: ${message}\n`);

// Sizes above this run each scenario once: a million-row run is long enough to average itself.
const REPEATED_UP_TO = 100_000;

async function runGroup(
  options: BenchOptions,
  image: ImageNode,
  rows: number,
  latencyMs: number,
  emulator: RunningEmulator | undefined,
  gcs: RunningFakeGcs | undefined,
  s3?: RunningMotoS3,
  postgres?: RunningPostgresBench,
): Promise<Group> {
  const sandbox = await startSandboxProcess({ incidents: rows, latencyMs, itemsPerPage: options.itemsPerPage });
  const tokens = await TokenProxy.start(sandbox.url);
  try {
    const context: RunContext = {
      endpoint: { url: sandbox.url, authUrl: tokens.url, tileId: sandbox.tileId, clientId: sandbox.clientId, clientSecret: sandbox.clientSecret },
      tokens,
      sourcePid: sandbox.pid,
      incidents: rows,
      itemsPerPage: options.itemsPerPage,
      sequentialMaxPages: options.sequentialMaxPages,
      ...(options.cpuProfDir ? { cpuProfDir: options.cpuProfDir } : {}),
      ...(emulator ? { emulator } : {}),
      ...(gcs ? { gcs } : {}),
      ...(s3 ? { s3 } : {}),
      ...(postgres ? { postgres } : {}),
    };
    const { concurrency, targetConcurrency, scenarios } = options;
    const plan: Array<[string, () => Promise<ScenarioRun>]> = [];
    const concurrencies = latencyMs > 0 && targetConcurrency !== concurrency ? [concurrency, targetConcurrency] : [concurrency];
    for (const c of concurrencies) {
      if (scenarios.has('transport')) plan.push([key('transport', c), () => runTransport(context, c)]);
      if (scenarios.has('csv')) plan.push([key('csv', c), () => runTilehouseCsv(context, c)]);
      // Right after (c), the same job run by the --baseline checkout's bundle.
      const { baseline } = options;
      if (scenarios.has('csv') && baseline !== undefined) plan.push([key('csv-baseline', c), () => runBaselineCsv(context, c, baseline)]);
      // Right after (c) at the same concurrency, in the same rounds: gcs/c compares like with like.
      if (scenarios.has('gcs') && gcs) plan.push([key('gcs', c), () => runTilehouseGcs(context, c)]);
      if (scenarios.has('s3') && s3) plan.push([key('s3', c), () => runTilehouseS3(context, c)]);
      if (scenarios.has('postgres') && postgres && c === targetConcurrency) plan.push([key('postgres', c), () => runTilehousePostgres(context, c)]);
      // Likewise (issue 28): parquet/c is the same job into a Parquet file instead of CSV.
      if (scenarios.has('parquet')) plan.push([key('parquet', c), () => runTilehouseParquet(context, c)]);
      // Issue 55: Iceberg (JDBC catalog, second night measured) right after Parquet on the same
      // store, local then s3:// (moto), at the target concurrency as postgres.
      if (c === targetConcurrency) {
        if (scenarios.has('iceberg') && postgres) plan.push([key('iceberg', c), () => runTilehouseIceberg(context, c, 'local')]);
        if (scenarios.has('parquet-s3') && s3) plan.push([key('parquet-s3', c), () => runTilehouseParquetS3(context, c)]);
        if (scenarios.has('iceberg-s3') && s3 && postgres) plan.push([key('iceberg-s3', c), () => runTilehouseIceberg(context, c, 's3')]);
      }
    }
    if (scenarios.has('csv-deployed')) plan.push([key('csv-deployed', concurrency), () => runTilehouseCsv(context, concurrency, image)]);
    if (scenarios.has('parquet-deployed')) plan.push([key('parquet-deployed', concurrency), () => runTilehouseParquet(context, concurrency, image)]);
    if (scenarios.has('sequential')) plan.push([key('sequential', 1), () => runSequential(context)]);
    if (scenarios.has('bigquery') && emulator) plan.push([key('bigquery', concurrency), () => runTilehouseBigQuery(context, concurrency)]);

    const runs = new Map<string, ScenarioRun[]>();
    const repeat = options.rounds ?? (rows <= REPEATED_UP_TO ? options.repeat : 1);
    // Interleaved (a, c, b, ... then again), so a slow minute of a noisy machine hits all alike.
    for (let round = 1; round <= repeat; round++) {
      for (const [name, run] of roundOrder(plan, round)) {
        progress(`${rows} rows, ${latencyMs} ms: ${name}${repeat > 1 ? ` (run ${round}/${repeat})` : ''}`);
        const result = await run();
        runs.set(name, [...(runs.get(name) ?? []), result]);
      }
    }
    const figures = Object.fromEntries([...runs].map(([name, list]) => [name, toFigure(list)]));
    return { rows, latencyMs, figures, ratios: groupRatios(figures, concurrency, targetConcurrency) };
  } finally {
    await tokens.close();
    await sandbox.stop();
  }
}

/**
 * The compressed-source group: tilehouse (which asks for gzip, br) against a sandbox that answers
 * in identity and one that gzips, both behind a link of `bandwidthMbps`, interleaved. On loopback
 * without a speed limit compression could only cost CPU; real links have one.
 */
async function runCompressedGroup(options: BenchOptions, rows: number, latencyMs: number): Promise<Group> {
  const c = latencyMs > 0 ? options.targetConcurrency : options.concurrency;
  const sandboxes = [
    ['identity', await startSandboxProcess({ incidents: rows, latencyMs, itemsPerPage: options.itemsPerPage, bandwidthMbps: options.bandwidthMbps })],
    ['gzip', await startSandboxProcess({ incidents: rows, latencyMs, itemsPerPage: options.itemsPerPage, bandwidthMbps: options.bandwidthMbps, gzip: true })],
  ] as const;
  const proxies: TokenProxy[] = [];
  try {
    const plan: Array<[string, () => Promise<ScenarioRun>]> = [];
    for (const [encoding, sandbox] of sandboxes) {
      const tokens = await TokenProxy.start(sandbox.url);
      proxies.push(tokens);
      const context: RunContext = {
        endpoint: { url: sandbox.url, authUrl: tokens.url, tileId: sandbox.tileId, clientId: sandbox.clientId, clientSecret: sandbox.clientSecret },
        tokens,
        sourcePid: sandbox.pid,
        incidents: rows,
        itemsPerPage: options.itemsPerPage,
        sequentialMaxPages: options.sequentialMaxPages,
      };
      plan.push([`${key('csv', c)} ${encoding}`, () => runTilehouseCsv(context, c)]);
    }
    const runs = new Map<string, ScenarioRun[]>();
    const repeat = rows <= REPEATED_UP_TO ? options.repeat : 1;
    for (let round = 1; round <= repeat; round++) {
      for (const [name, run] of plan) {
        progress(`${rows} rows, ${latencyMs} ms, ${options.bandwidthMbps} Mbit/s: ${name}${repeat > 1 ? ` (run ${round}/${repeat})` : ''}`);
        runs.set(name, [...(runs.get(name) ?? []), await run()]);
      }
    }
    const figures = Object.fromEntries([...runs].map(([name, list]) => [name, toFigure(list)]));
    return { rows, latencyMs, compressed: { bandwidthMbps: options.bandwidthMbps }, figures, ratios: compressedRatios(figures) };
  } finally {
    for (const proxy of proxies) await proxy.close();
    for (const [, sandbox] of sandboxes) await sandbox.stop();
  }
}

async function main(argv: string[]): Promise<void> {
  if (fileURLToPath(import.meta.url).endsWith('.ts')) {
    throw new Error('run the bench compiled (`npm run bench`): its child processes are measured as they ship, without a TypeScript loader');
  }
  const options = parseBenchOptions(argv);
  if (options === 'help') {
    process.stdout.write(BENCH_HELP);
    return;
  }
  if (!existsSync(join(repoRoot(), 'dist/bundle/tilehouse.js'))) throw new Error('dist/bundle/tilehouse.js is missing: run `npm run bench` (it builds first)');
  if (options.baseline !== undefined) {
    options.baseline = resolve(options.baseline);
    if (!existsSync(join(options.baseline, 'dist/bundle/tilehouse.js')))
      throw new Error(`${join(options.baseline, 'dist/bundle/tilehouse.js')} is missing: build that checkout first (npm run build)`);
  }
  if (options.peers) {
    const peers = await runPeers({
      runs: options.peersRuns,
      itemsPerPage: options.itemsPerPage,
      cases: options.peersCases,
      ...(options.peersTilehouseConcurrency === undefined ? {} : { tilehouseConcurrency: options.peersTilehouseConcurrency }),
      progress,
    });
    // 2: the peers' venv is missing (runPeers said how to make it); not a failure of the bench.
    if (peers === 2) process.exitCode = 2;
    else {
      process.stdout.write(options.json ? `${JSON.stringify(peers, null, 2)}\n` : formatPeersReport(peers));
      if (options.out) await writeFile(options.out, `${JSON.stringify(peers, null, 2)}\n`);
    }
    return;
  }
  if (options.cpuProfDir) {
    options.cpuProfDir = resolve(options.cpuProfDir);
    await mkdir(options.cpuProfDir, { recursive: true });
  }

  // The image's node flags, from the Dockerfile (the one place they are written).
  const dockerfile = join(repoRoot(), 'Dockerfile');
  const image = imageNodeOf(await readFile(dockerfile, 'utf8'), dockerfile);
  const partial: Omit<BenchReport, 'targets'> = {
    settings: {
      itemsPerPage: options.itemsPerPage,
      concurrency: options.concurrency,
      targetConcurrency: options.targetConcurrency,
      repeat: options.repeat,
      node: process.version,
      cpus: cpus().length,
      tilehouse:
        '(c) the shipped CLI bundle `node dist/bundle/tilehouse.js run` in its own process; (gcs) the same into gs:// on fake-gcs-server (loopback, -backend filesystem); (d) compiled main() with an emulator client in its own process',
      deployedNodeOptions: image.nodeOptions ?? '',
      deployedNodeArgs: image.nodeArgs,
      sequentialClient: 'undici, one page at a time, JSON.parse, rows written naively to a CSV file (epoch-ms datetimes, quote-when-needed)',
      query: `SANDBOX_TILE, one row per incident, ${BENCH_QUERY.items.length} columns (4 number, 2 datetime, 5 text; nullable postmortem fields, hard strings)`,
    },
    groups: [],
  };

  if (options.scenarios.has('cold-start')) {
    progress(`cold start: ${options.coldStartRuns} runs`);
    const dockerfile = join(repoRoot(), 'Dockerfile');
    const cold = await measureColdStart(options.coldStartRuns, imageNodeOf(await readFile(dockerfile, 'utf8'), dockerfile), options.coldStartCli);
    const cliMedianMs = median(cold.cliMs);
    const baselineMedianMs = median(cold.baselineMs);
    partial.coldStart = {
      cli: options.coldStartCli,
      runs: options.coldStartRuns,
      cliMedianMs,
      baselineMedianMs,
      ratio: cliMedianMs / baselineMedianMs,
      byHandMedianMs: median(cold.byHandMs),
      ...cold,
    };
  }

  if (options.scenarios.has('memory')) {
    const roots = [{ label: 'this', root: repoRoot() }, ...(options.memoryBaseline === undefined ? [] : [{ label: 'baseline', root: options.memoryBaseline }])];
    for (const { root } of roots) {
      if (!existsSync(join(root, 'dist/bundle/tilehouse.js')))
        throw new Error(`${join(root, 'dist/bundle/tilehouse.js')} is missing: build that checkout first (npm run build)`);
    }
    partial.memory = await measureMemory({
      runs: options.memoryRuns,
      itemsPerPage: options.itemsPerPage,
      roots,
      progress,
      sinks: options.memorySinks,
      breakdown: options.memoryBreakdown,
      ...(options.memoryCases === undefined ? {} : { cases: options.memoryCases }),
    });
  }

  // Only the memory part asked for: no size × latency groups.
  const groupScenarios = [...options.scenarios].filter((name) => name !== 'memory' && name !== 'cold-start');
  if (groupScenarios.length === 0) options.sizes = [];
  const emulator = options.scenarios.has('bigquery') ? await startEmulatorIfInstalled() : undefined;
  const gcs = options.scenarios.has('gcs') ? await startFakeGcsIfInstalled() : undefined;
  const onS3 = (['s3', 'parquet-s3', 'iceberg-s3'] as const).filter((name) => options.scenarios.has(name));
  const s3 = onS3.length > 0 ? await startMotoIfInstalled() : undefined;
  if (onS3.length > 0 && s3 === undefined) progress(`moto not installed (npm run setup:moto): ${onS3.join(', ')} skipped`);
  // The Iceberg scenarios' JDBC catalog lives on the same PostgreSQL.
  const onPostgres = (['postgres', 'iceberg', 'iceberg-s3'] as const).filter((name) => options.scenarios.has(name));
  const postgres = onPostgres.length > 0 ? await startPostgresIfInstalled() : undefined;
  if (onPostgres.length > 0 && postgres === undefined) progress(`PostgreSQL not installed (Debian's postgresql package): ${onPostgres.join(', ')} skipped`);
  if (options.scenarios.has('gcs') && gcs === undefined) progress('fake-gcs-server not installed (npm run setup:fake-gcs): scenario gcs skipped');
  if (options.scenarios.has('bigquery') && emulator === undefined) progress('BigQuery emulator not installed (npm run setup:emulator): scenario (d) skipped');
  try {
    for (const rows of options.sizes) {
      for (const latencyMs of options.latencies) partial.groups.push(await runGroup(options, image, rows, latencyMs, emulator, gcs, s3, postgres));
      if (options.scenarios.has('compressed')) {
        for (const latencyMs of options.compressedLatencies) partial.groups.push(await runCompressedGroup(options, rows, latencyMs));
      }
    }
  } finally {
    await emulator?.stop();
    await gcs?.stop();
    await s3?.stop();
    await postgres?.stop();
  }

  // A memory-only run judges only the memory targets: the others were not measured.
  const measuredGroups = partial.groups.length > 0 || partial.coldStart !== undefined;
  const report: BenchReport = { ...partial, targets: [...(measuredGroups ? judge(partial) : []), ...(partial.memory ? judgeMemory(partial.memory) : [])] };
  process.stdout.write(options.json ? `${JSON.stringify(report, null, 2)}\n` : formatReport(report));
  if (options.out) await writeFile(options.out, `${JSON.stringify(report, null, 2)}\n`);
}

try {
  await main(process.argv.slice(2));
} catch (error) {
  process.stderr.write(`bench: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
}
