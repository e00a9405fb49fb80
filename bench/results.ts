import type { ColdStart } from './cold-start.js';
import type { ScenarioKind, ScenarioRun } from './scenario-runs.js';

/** The median run of a scenario, with its throughput. */
export interface Figure extends ScenarioRun {
  /** rows / runMs: throughput from the first token request to exit. */
  rowsPerSec: number;
  /** rows / wallMs: the same with process start-up included. */
  wallRowsPerSec: number;
  /** Run times (token → exit) of every run, in run order. */
  runMsRuns: number[];
}

export interface Group {
  rows: number;
  latencyMs: number;
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
    /** NODE_OPTIONS of the Kubernetes manifests, used by the csv-deployed scenario. */
    deployedNodeOptions: string;
    sequentialClient: string;
    query: string;
  };
  coldStart?: { cli: string; runs: number; cliMedianMs: number; baselineMedianMs: number; ratio: number; cliMs: number[]; baselineMs: number[] };
  groups: Group[];
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
    put(`c/b@${c}`, rate(key('csv', c)), rate(key('sequential', 1)));
    put(`a/b@${c}`, rate(key('transport', c)), rate(key('sequential', 1)));
    // The same with each process's start-up counted in.
    put(`c/a@${c} incl. start-up`, wallRate(key('csv', c)), wallRate(key('transport', c)));
    put(`c/b@${c} incl. start-up`, wallRate(key('csv', c)), wallRate(key('sequential', 1)));
  }
  put(`d/c@${concurrency}`, rate(key('bigquery', concurrency)), rate(key('csv', concurrency)));
  const bqRss = figures[key('bigquery', concurrency)]?.peakRssMb;
  const csvRss = figures[key('csv', concurrency)]?.peakRssMb;
  put('rss d/c', bqRss, csvRss);
  return ratios;
}

function check(target: string, value: number | undefined, threshold: string, pass: (v: number) => boolean, note?: string): Target {
  if (value === undefined || Number.isNaN(value)) return { target, value: null, threshold, met: null, note: note ?? 'not measured in this run' };
  return { target, value, threshold, met: pass(value), ...(note ? { note } : {}) };
}

/** The targets, judged on this run's figures. */
export function judge(report: Omit<BenchReport, 'targets'>): Target[] {
  const { concurrency, targetConcurrency } = report.settings;
  const group = (rows: number, latencyMs: number) => report.groups.find((g) => g.rows === rows && g.latencyMs === latencyMs);
  const targets: Target[] = [];
  for (const latency of [0, 50]) {
    targets.push(check(`c/a at 100k rows, ${latency} ms, concurrency ${concurrency}`, group(100_000, latency)?.ratios[`c/a@${concurrency}`], '>= 0.85', (v) => v >= 0.85));
  }
  for (const rows of [100_000, 1_000_000]) {
    targets.push(
      check(`c/b at ${rows / 1000}k rows, 50 ms, concurrency ${targetConcurrency}`, group(rows, 50)?.ratios[`c/b@${targetConcurrency}`], '>= 6', (v) => v >= 6),
    );
  }
  for (const latency of [0, 50]) {
    for (const [scenario, label] of [
      ['csv', 'plain node'],
      ['csv-deployed', `NODE_OPTIONS=${report.settings.deployedNodeOptions}`],
    ] as const) {
      const big = group(1_000_000, latency)?.figures[key(scenario, concurrency)];
      const small = group(100_000, latency)?.figures[key(scenario, concurrency)];
      targets.push(check(`peak RSS of tilehouse→CSV at 1M rows, ${latency} ms, ${label} (MB)`, big?.peakRssMb, '<= 150', (v) => v <= 150));
      targets.push(
        check(
          `peak RSS 1M / 100k, tilehouse→CSV, ${latency} ms, ${label}`,
          big && small ? big.peakRssMb / small.peakRssMb : undefined,
          '<= 1.20',
          (v) => v <= 1.2,
        ),
      );
    }
    targets.push(check(`peak RSS BigQuery / CSV at 1M rows, ${latency} ms, plain node`, group(1_000_000, latency)?.ratios['rss d/c'], '<= 1.5', (v) => v <= 1.5));
  }
  targets.push(check('cold start, median (ms)', report.coldStart?.cliMedianMs, '<= 300', (v) => v <= 300));
  return targets;
}
