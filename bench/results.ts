import type { MemoryReport } from './memory-results.js';
import type { ScenarioKind, ScenarioRun } from './scenario-runs.js';

/** The median run of a scenario, with its throughput. */
export interface Figure extends ScenarioRun {
  /** rows / runMs: throughput from the first token request to exit. */
  rowsPerSec: number;
  /** rows / wallMs: the same with process start-up included. */
  wallRowsPerSec: number;
  /** Run times (token → exit) of every run, in run order. */
  runMsRuns: number[];
  /** Each run's CPU (ms), in the order run: with --rounds, round by round beside runMsRuns. */
  cpuMsRuns: number[];
}

export interface Group {
  rows: number;
  latencyMs: number;
  /**
   * The compressed-source group: tilehouse against a sandbox that gzips its answers (`…@c gzip`)
   * and one that does not (`…@c identity`), both behind a link of this speed.
   */
  compressed?: { bandwidthMbps: number };
  /** Keyed `transport@4`, `sequential@1`, `csv@4`, `csv@8`, `bigquery@4`, ... */
  figures: Record<string, Figure>;
  /** Throughput ratios (rows/s over rows/s) and the BigQuery/CSV peak-RSS ratio. */
  ratios: Record<string, number>;
}

export interface Target {
  target: string;
  value: number | null;
  threshold: string;
  met: boolean | null;
  note?: string;
}

export interface BenchReport {
  settings: {
    itemsPerPage: number;
    concurrency: number;
    targetConcurrency: number;
    repeat: number;
    node: string;
    cpus: number;
    tilehouse: string;
    /** NODE_OPTIONS of the image (its Dockerfile; the manifests set the same), used by the csv-deployed scenario. */
    deployedNodeOptions: string;
    /** node's own flags in the image's ENTRYPOINT, used by the csv-deployed scenario. */
    deployedNodeArgs: string[];
    sequentialClient: string;
    query: string;
  };
  coldStart?: {
    cli: string;
    runs: number;
    /** Started as the image starts it (its node flags and NODE_OPTIONS). */
    cliMedianMs: number;
    /** Started by hand without flags: one relaunch more. */
    byHandMedianMs: number;
    baselineMedianMs: number;
    ratio: number;
    cliMs: number[];
    byHandMs: number[];
    baselineMs: number[];
  };
  groups: Group[];
  /** Issue 29's memory part (bench/memory-footprint.ts), when it ran. */
  memory?: MemoryReport;
  targets: Target[];
}

export const key = (scenario: ScenarioKind, concurrency: number) => `${scenario}@${concurrency}`;

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** Medians of every run's times and peak RSS (each taken separately). */
export function toFigure(runs: readonly ScenarioRun[]): Figure {
  const runMs = median(runs.map((run) => run.runMs));
  const wallMs = median(runs.map((run) => run.wallMs));
  const closest = [...runs].sort((a, b) => Math.abs(a.runMs - runMs) - Math.abs(b.runMs - runMs))[0]!;
  return {
    ...closest,
    runMs,
    wallMs,
    startMs: median(runs.map((run) => run.startMs)),
    peakRssMb: median(runs.map((run) => run.peakRssMb)),
    cpuMs: median(runs.map((run) => run.cpuMs)),
    sourceCpuMs: median(runs.map((run) => run.sourceCpuMs)),
    rowsPerSec: closest.rows / (runMs / 1000),
    wallRowsPerSec: closest.rows / (wallMs / 1000),
    runMsRuns: runs.map((run) => run.runMs),
    cpuMsRuns: runs.map((run) => run.cpuMs),
  };
}

export function groupRatios(figures: Record<string, Figure>, concurrency: number, targetConcurrency: number): Record<string, number> {
  const ratios: Record<string, number> = {};
  const rate = (name: string) => figures[name]?.rowsPerSec;
  const wallRate = (name: string) => figures[name]?.wallRowsPerSec;
  const put = (name: string, top: number | undefined, bottom: number | undefined) => {
    if (top !== undefined && bottom !== undefined) ratios[name] = top / bottom;
  };
  for (const c of new Set([concurrency, targetConcurrency])) {
    put(`c/a@${c}`, rate(key('csv', c)), rate(key('transport', c)));
    // --baseline: the other checkout's (c) against the same transport loop, and the two heads' rows/s.
    put(`baseline c/a@${c}`, rate(key('csv-baseline', c)), rate(key('transport', c)));
    put(`c/baseline@${c}`, rate(key('csv', c)), rate(key('csv-baseline', c)));
    put(`c/b@${c}`, rate(key('csv', c)), rate(key('sequential', 1)));
    put(`a/b@${c}`, rate(key('transport', c)), rate(key('sequential', 1)));
    // The same with each process's start-up counted in.
    put(`c/a@${c} incl. start-up`, wallRate(key('csv', c)), wallRate(key('transport', c)));
    put(`c/b@${c} incl. start-up`, wallRate(key('csv', c)), wallRate(key('sequential', 1)));
  }
  // CPU per row of tilehouse over the naive client's, and peak RSS over the bare transport loop's.
  const cpuPerRow = (name: string) => (figures[name] ? figures[name].cpuMs / figures[name].rows : undefined);
  for (const c of new Set([concurrency, targetConcurrency])) {
    put(`cpu c/b@${c}`, cpuPerRow(key('csv', c)), cpuPerRow(key('sequential', 1)));
    put(`rss c/a@${c}`, figures[key('csv', c)]?.peakRssMb, figures[key('transport', c)]?.peakRssMb);
  }
  put(`d/c@${concurrency}`, rate(key('bigquery', concurrency)), rate(key('csv', concurrency)));
  const bqRss = figures[key('bigquery', concurrency)]?.peakRssMb;
  const csvRss = figures[key('csv', concurrency)]?.peakRssMb;
  put('rss d/c', bqRss, csvRss);
  // gs:// against the local file, at each concurrency both ran: throughput and peak RSS.
  for (const c of new Set([concurrency, targetConcurrency])) {
    put(`gcs/c@${c}`, rate(key('gcs', c)), rate(key('csv', c)));
    put(`rss gcs/c@${c}`, figures[key('gcs', c)]?.peakRssMb, figures[key('csv', c)]?.peakRssMb);
  }
  // Issue 36: s3:// against the local file, likewise.
  for (const c of new Set([concurrency, targetConcurrency])) {
    put(`s3/c@${c}`, rate(key('s3', c)), rate(key('csv', c)));
    put(`rss s3/c@${c}`, figures[key('s3', c)]?.peakRssMb, figures[key('csv', c)]?.peakRssMb);
  }
  // The postgres sink (second night, table in place) against the local file, and the physical limit (psql \copy) against it.
  {
    const c = targetConcurrency;
    put(`pg/c@${c}`, rate(key('postgres', c)), rate(key('csv', c)));
    put(`rss pg/c@${c}`, figures[key('postgres', c)]?.peakRssMb, figures[key('csv', c)]?.peakRssMb);
    put(`pg/psql-copy@${c}`, rate(key('postgres', c)), figures[key('postgres', c)]?.psqlCopyRowsPerSec);
  }
  // Issue 28: the Parquet sink against the CSV sink, same job and run: throughput, peak RSS and CPU per row.
  for (const c of new Set([concurrency, targetConcurrency])) {
    put(`parquet/c@${c}`, rate(key('parquet', c)), rate(key('csv', c)));
    put(`rss parquet/c@${c}`, figures[key('parquet', c)]?.peakRssMb, figures[key('csv', c)]?.peakRssMb);
    put(`cpu parquet/c@${c}`, cpuPerRow(key('parquet', c)), cpuPerRow(key('csv', c)));
  }
  // Issue 55: the Iceberg sink (second night) against the Parquet sink on the same store: local, and s3:// on moto.
  {
    const c = targetConcurrency;
    for (const [iceberg, parquet] of [
      ['iceberg', 'parquet'],
      ['iceberg-s3', 'parquet-s3'],
    ] as const) {
      put(`${iceberg}/${parquet}@${c}`, rate(key(iceberg, c)), rate(key(parquet, c)));
      put(`rss ${iceberg}/${parquet}@${c}`, figures[key(iceberg, c)]?.peakRssMb, figures[key(parquet, c)]?.peakRssMb);
      put(`cpu ${iceberg}/${parquet}@${c}`, cpuPerRow(key(iceberg, c)), cpuPerRow(key(parquet, c)));
    }
    put(`parquet-s3/parquet@${c}`, rate(key('parquet-s3', c)), rate(key('parquet', c)));
  }
  put(`rss parquet/c deployed@${concurrency}`, figures[key('parquet-deployed', concurrency)]?.peakRssMb, figures[key('csv-deployed', concurrency)]?.peakRssMb);
  return ratios;
}

/** Throughput and CPU of the gzipping source over the plain one, per concurrency measured. */
export function compressedRatios(figures: Record<string, Figure>): Record<string, number> {
  const ratios: Record<string, number> = {};
  for (const name of Object.keys(figures)) {
    if (!name.endsWith(' gzip')) continue;
    const base = name.slice(0, -' gzip'.length);
    const gzip = figures[name]!;
    const plain = figures[`${base} identity`];
    if (plain === undefined) continue;
    ratios[`gzip/identity rows/s ${base}`] = gzip.rowsPerSec / plain.rowsPerSec;
    ratios[`gzip/identity CPU ${base}`] = gzip.cpuMs / plain.cpuMs;
    ratios[`gzip/identity source CPU ${base}`] = gzip.sourceCpuMs / plain.sourceCpuMs;
  }
  return ratios;
}

function check(target: string, value: number | undefined, threshold: string, pass: (v: number) => boolean, note?: string): Target {
  if (value === undefined || Number.isNaN(value)) return { target, value: null, threshold, met: null, note: note ?? 'not measured in this run' };
  return { target, value, threshold, met: pass(value), ...(note ? { note } : {}) };
}

/** Issue 14's targets (and the cold-start target before it), judged on this run's figures. */
export function judge(report: Omit<BenchReport, 'targets'>): Target[] {
  const { concurrency, targetConcurrency } = report.settings;
  const group = (rows: number, latencyMs: number) => report.groups.find((g) => g.rows === rows && g.latencyMs === latencyMs && g.compressed === undefined);
  const targets: Target[] = [];
  const label = (rows: number) => (rows >= 1_000_000 ? `${rows / 1_000_000}M` : `${rows / 1000}k`);
  for (const rows of [100_000, 1_000_000]) {
    targets.push(
      check(`c/b at ${label(rows)} rows, 0 ms, concurrency ${concurrency}`, group(rows, 0)?.ratios[`c/b@${concurrency}`], '>= 1.2', (v) => v >= 1.2),
    );
  }
  for (const rows of [100_000, 1_000_000]) {
    targets.push(
      check(`c/a at ${label(rows)} rows, 0 ms, concurrency ${concurrency}`, group(rows, 0)?.ratios[`c/a@${concurrency}`], '>= 0.6', (v) => v >= 0.6),
    );
  }
  for (const rows of [100_000, 1_000_000]) {
    targets.push(
      check(
        `c/a at ${label(rows)} rows, 50 ms, concurrency ${targetConcurrency}`,
        group(rows, 50)?.ratios[`c/a@${targetConcurrency}`],
        '>= 0.9',
        (v) => v >= 0.9,
      ),
    );
  }
  for (const rows of [100_000, 1_000_000]) {
    targets.push(
      check(`CPU per row, tilehouse / naive client, ${label(rows)} rows, 0 ms`, group(rows, 0)?.ratios[`cpu c/b@${concurrency}`], '<= 1.3', (v) => v <= 1.3),
    );
  }
  for (const latency of [0, 50]) {
    const c = latency > 0 ? targetConcurrency : concurrency;
    targets.push(
      check(
        `peak RSS, tilehouse / transport loop, 1M rows, ${latency} ms, concurrency ${c}, plain node`,
        group(1_000_000, latency)?.ratios[`rss c/a@${c}`],
        '<= 1.15',
        (v) => v <= 1.15,
      ),
    );
    const big = group(1_000_000, latency)?.figures[key('csv', concurrency)];
    const small = group(100_000, latency)?.figures[key('csv', concurrency)];
    targets.push(
      check(
        `peak RSS 1M / 100k, tilehouse→CSV, ${latency} ms, concurrency ${concurrency}, plain node`,
        big && small ? big.peakRssMb / small.peakRssMb : undefined,
        '<= 1.1',
        (v) => v <= 1.1,
      ),
    );
  }
  // Issue 20: CSV into gs:// (fake-gcs-server on loopback) against the same run into a local file.
  for (const rows of [100_000, 1_000_000]) {
    const g = group(rows, 50);
    targets.push(
      check(
        `rows/s, tilehouse→gs:// / →local CSV, ${label(rows)} rows, 50 ms, concurrency ${targetConcurrency}`,
        g?.ratios[`gcs/c@${targetConcurrency}`],
        '>= 0.8',
        (v) => v >= 0.8,
      ),
    );
    targets.push(
      check(
        `peak RSS, tilehouse→gs:// / →local CSV, ${label(rows)} rows, 50 ms, concurrency ${targetConcurrency}`,
        g?.ratios[`rss gcs/c@${targetConcurrency}`],
        '<= 1.1',
        (v) => v <= 1.1,
      ),
    );
  }
  // Issue 36: CSV into s3:// (moto on loopback) against the same run into a local file, 1M rows at 50 ms.
  {
    const g = group(1_000_000, 50);
    targets.push(
      check(
        `rows/s, tilehouse→s3:// / →local CSV, 1M rows, 50 ms, concurrency ${targetConcurrency}`,
        g?.ratios[`s3/c@${targetConcurrency}`],
        '>= 0.8',
        (v) => v >= 0.8,
      ),
    );
    targets.push(
      check(
        `peak RSS, tilehouse→s3:// / →local CSV, 1M rows, 50 ms, concurrency ${targetConcurrency}`,
        g?.ratios[`rss s3/c@${targetConcurrency}`],
        '<= 1.1',
        (v) => v <= 1.1,
      ),
    );
  }
  // The postgres sink against the same run into a local file, 1M rows at 50 ms; a reader's longest wait meanwhile.
  {
    const g = group(1_000_000, 50);
    const c = targetConcurrency;
    targets.push(check(`rows/s, tilehouse→PostgreSQL / →local CSV, 1M rows, 50 ms, concurrency ${c}`, g?.ratios[`pg/c@${c}`], '>= 0.8', (v) => v >= 0.8));
    targets.push(
      check(`peak RSS, tilehouse→PostgreSQL / →local CSV, 1M rows, 50 ms, concurrency ${c}`, g?.ratios[`rss pg/c@${c}`], '<= 1.15', (v) => v <= 1.15),
    );
    targets.push(
      check(
        `a reader's longest wait during the PostgreSQL replace (ms), 1M rows, 50 ms`,
        g?.figures[key('postgres', c)]?.readerMaxWaitMs,
        '< 1000',
        (v) => v < 1000,
      ),
    );
  }
  // Issue 28: the Parquet sink against the CSV sink of the same run, 1M rows at 50 ms.
  for (const c of new Set([concurrency, targetConcurrency])) {
    const g = group(1_000_000, 50);
    targets.push(check(`rows/s, tilehouse→Parquet / →CSV, 1M rows, 50 ms, concurrency ${c}`, g?.ratios[`parquet/c@${c}`], '>= 0.8', (v) => v >= 0.8));
    targets.push(check(`peak RSS, tilehouse→Parquet / →CSV, 1M rows, 50 ms, concurrency ${c}`, g?.ratios[`rss parquet/c@${c}`], '<= 1.3', (v) => v <= 1.3));
  }
  // Issue 55: the Iceberg sink (steady state: last night's snapshot in place) against the Parquet sink on the same store, 1M rows at 50 ms.
  {
    const g = group(1_000_000, 50);
    const c = targetConcurrency;
    for (const [iceberg, parquet, store] of [
      ['iceberg', 'parquet', 'local'],
      ['iceberg-s3', 'parquet-s3', 's3:// (moto)'],
    ] as const) {
      targets.push(
        check(
          `rows/s, tilehouse→Iceberg / →Parquet, ${store}, 1M rows, 50 ms, concurrency ${c}`,
          g?.ratios[`${iceberg}/${parquet}@${c}`],
          '>= 0.9',
          (v) => v >= 0.9,
        ),
      );
      targets.push(
        check(
          `peak RSS, tilehouse→Iceberg / →Parquet, ${store}, 1M rows, 50 ms, concurrency ${c}`,
          g?.ratios[`rss ${iceberg}/${parquet}@${c}`],
          '<= 1.15',
          (v) => v <= 1.15,
        ),
      );
    }
  }
  targets.push(check('cold start, median (ms)', report.coldStart?.cliMedianMs, '<= 300', (v) => v <= 300));
  return targets;
}

/**
 * The plan in the order of one round: with `--rounds`, each even round runs the baseline
 * checkout's csv before this one's at the same concurrency, so the place right after the transport
 * loop (which ran slower in four of five rounds either way round) falls on both heads alike.
 */
export function roundOrder<T>(plan: ReadonlyArray<readonly [string, T]>, round: number): Array<readonly [string, T]> {
  const order = [...plan];
  if (round % 2 === 1) return order;
  for (let i = 0; i + 1 < order.length; i++) {
    const [name] = order[i]!;
    const [next] = order[i + 1]!;
    if (name.startsWith('csv@') && next === name.replace('csv@', 'csv-baseline@')) {
      [order[i], order[i + 1]] = [order[i + 1]!, order[i]!];
      i++;
    }
  }
  return order;
}
