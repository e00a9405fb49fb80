/**
 * Issue 29's memory part of the bench, the arithmetic: each case's peak RSS as a multiple of a
 * bare `node -e 0` measured in the same run, CPU per row against a baseline checkout, and the
 * targets judged on them. No processes here (bench/memory-footprint.ts runs them).
 */
import type { ImageNode } from './support/image-node.js';
import type { MemoryBreakdown } from './support/report-rss.js';
import { median, type Target } from './results.js';

export type MemoryCaseName =
  | 'bare node'
  | 'help'
  | 'validate'
  | 'run 5 rows'
  | 'run 5 rows, telemetry on'
  | 'run 100k'
  | 'run 100k, c=1'
  | 'run 1M'
  | 'run 1M, telemetry on'
  | 'run 1M, Parquet'
  | 'run 1M, gzip'
  | 'run 1M, gs://'
  | 'run 1M, s3://'
  | 'bin: run 5 rows'
  | 'bin: run 100k';

export interface MemoryCase {
  name: MemoryCaseName;
  /** A run's rows, page latency and concurrency; undefined for the cases that fetch nothing. */
  run?: { rows: number; latencyMs: number; concurrency: number };
  /** Peak RSS may be at most this multiple of bare node's (issue 44's target for 5 rows). */
  maxRatio?: number;
  /** Peak RSS may be at most this many MB (issue 44's targets, set against dlt's and the Airbyte CDK's peaks on the same job). */
  maxMb?: number;
  /**
   * Issue 33: the run with OpenTelemetry on (OTEL_EXPORTER_OTLP_ENDPOINT at a loopback OTLP
   * receiver in the bench process that takes and drops every export), beside the same run off.
   */
  telemetry?: boolean;
  /**
   * Started as `npx tilehouse` starts it in a checkout: `node bin/tilehouse.js`, no node flags and
   * no NODE_OPTIONS (issue 39: the figures within 10 % of the image's).
   */
  viaBin?: boolean;
  /**
   * Issue 39: the 1M-row run into a local Parquet file, or into a gs:// CSV directory on
   * fake-gcs-server (an s3:// one on moto, a local gzip CSV file: issue 44), against the CSV run
   * beside it (`--memory-sinks` only: each adds a 1M-row run).
   */
  sink?: 'parquet' | 'gzip' | 'gcs' | 's3';
}

/** What issue 29 measures, in this order (bare node first: the other cases are its multiples). */
export const MEMORY_CASES: readonly MemoryCase[] = [
  { name: 'bare node' },
  { name: 'help' },
  { name: 'validate' },
  { name: 'run 5 rows', run: { rows: 5, latencyMs: 0, concurrency: 4 }, maxRatio: 2.0 },
  { name: 'run 5 rows, telemetry on', run: { rows: 5, latencyMs: 0, concurrency: 4 }, telemetry: true },
  { name: 'run 100k', run: { rows: 100_000, latencyMs: 0, concurrency: 4 }, maxMb: 120 },
  // One page at a time, as the peers page: dlt's peak on this job.
  { name: 'run 100k, c=1', run: { rows: 100_000, latencyMs: 0, concurrency: 1 }, maxMb: 113 },
  { name: 'run 1M', run: { rows: 1_000_000, latencyMs: 50, concurrency: 8 }, maxMb: 160 },
  { name: 'run 1M, telemetry on', run: { rows: 1_000_000, latencyMs: 50, concurrency: 8 }, telemetry: true },
  { name: 'bin: run 5 rows', run: { rows: 5, latencyMs: 0, concurrency: 4 }, viaBin: true },
  { name: 'bin: run 100k', run: { rows: 100_000, latencyMs: 0, concurrency: 4 }, viaBin: true },
  { name: 'run 1M, Parquet', run: { rows: 1_000_000, latencyMs: 50, concurrency: 8 }, sink: 'parquet' },
  { name: 'run 1M, gzip', run: { rows: 1_000_000, latencyMs: 50, concurrency: 8 }, sink: 'gzip' },
  { name: 'run 1M, gs://', run: { rows: 1_000_000, latencyMs: 50, concurrency: 8 }, sink: 'gcs' },
  { name: 'run 1M, s3://', run: { rows: 1_000_000, latencyMs: 50, concurrency: 8 }, sink: 's3' },
];

/** CPU per row may rise by at most this factor over the baseline checkout's. */
export const MAX_CPU_PER_ROW_RATIO = 1.05;

/** One process's figures. */
export interface MemorySample {
  peakRssMb: number;
  cpuMs: number;
  /** With `--memory-breakdown`. */
  breakdown?: MemoryBreakdown;
}

/** A checkout's runs of every case: samples in run order. */
export interface CheckoutMemory {
  label: string;
  root: string;
  node: ImageNode;
  samples: Partial<Record<MemoryCaseName, MemorySample[]>>;
  /** Each run case's first run, into an empty output (the samples are the steady state's). */
  firstRuns: Partial<Record<MemoryCaseName, MemorySample>>;
}

export interface MemoryCaseFigure {
  name: MemoryCaseName;
  rows?: number;
  peakRssMb: number;
  /** Median peak RSS over bare node's median, same checkout, same run. */
  ratioToBare: number;
  cpuMs: number;
  cpuMsPer1kRows?: number;
  peakRssRuns: number[];
  cpuMsRuns: number[];
  /** The first run's peak RSS, into an empty output (run cases only). */
  firstRunPeakRssMb?: number;
  /** With `--memory-breakdown`: each figure's median over the runs, MB. */
  breakdownMb?: Record<BreakdownColumn, number>;
}

const BREAKDOWN_COLUMNS = ['rss', 'file', 'anon', 'heap', 'used', 'new', 'old', 'code', 'LO', 'external', 'buffers'] as const;
type BreakdownColumn = (typeof BREAKDOWN_COLUMNS)[number];

/** A breakdown's figures in MB: code is V8's code and trusted spaces (bytecode, metadata), LO its large objects. */
function breakdownFigures(breakdown: MemoryBreakdown): Record<BreakdownColumn, number> {
  const space = (...names: string[]) => names.reduce((sum, name) => sum + (breakdown.spaces[name]?.size ?? 0), 0);
  const mb = (bytes: number | undefined) => (bytes === undefined ? Number.NaN : bytes / 1024 / 1024);
  return {
    rss: mb(breakdown.rss),
    file: mb(breakdown.fileBacked),
    anon: mb(breakdown.anonymous),
    heap: mb(breakdown.heapCommitted),
    used: mb(breakdown.heapUsed),
    new: mb(space('new', 'new_large_object')),
    old: mb(space('old')),
    code: mb(space('code', 'trusted', 'code_large_object', 'trusted_large_object')),
    LO: mb(space('large_object')),
    external: mb(breakdown.external),
    buffers: mb(breakdown.arrayBuffers),
  };
}

function medianBreakdown(list: readonly MemorySample[]): Record<BreakdownColumn, number> | undefined {
  const all = list.flatMap((sample) => (sample.breakdown === undefined ? [] : [breakdownFigures(sample.breakdown)]));
  if (all.length === 0) return undefined;
  return Object.fromEntries(BREAKDOWN_COLUMNS.map((column) => [column, median(all.map((figures) => figures[column]))])) as Record<BreakdownColumn, number>;
}

export interface MemoryReport {
  runs: number;
  checkouts: Array<{ label: string; root: string; node: ImageNode; cases: MemoryCaseFigure[] }>;
  /**
   * Against the baseline checkout (the second), when one was measured: this / baseline, as a
   * ratio of medians, and CPU also as the median of each round's ratio (the two runs of a round
   * ran back to back, so they saw the same machine; this is what the CPU target is judged on).
   */
  versusBaseline?: Array<{ name: MemoryCaseName; peakRss: number; cpuPerRow?: number; cpuPerRowPaired?: number }>;
}

/** The median of this / baseline over runs taken in the same round (index), NaN-free pairs only. */
export function pairedRatio(these: readonly number[], baseline: readonly number[]): number | undefined {
  const ratios = these.flatMap((value, index) => {
    const other = baseline[index];
    return other !== undefined && other > 0 && Number.isFinite(value / other) ? [value / other] : [];
  });
  return ratios.length === 0 ? undefined : median(ratios);
}

export function caseFigures(samples: CheckoutMemory['samples'], firstRuns: CheckoutMemory['firstRuns'] = {}): MemoryCaseFigure[] {
  const bare = median((samples['bare node'] ?? []).map((sample) => sample.peakRssMb));
  const figures: MemoryCaseFigure[] = [];
  for (const memoryCase of MEMORY_CASES) {
    const list = samples[memoryCase.name];
    if (list === undefined || list.length === 0) continue;
    const peakRssMb = median(list.map((sample) => sample.peakRssMb));
    const cpuMs = median(list.map((sample) => sample.cpuMs));
    const rows = memoryCase.run?.rows;
    const breakdownMb = medianBreakdown(list);
    const firstRun = firstRuns[memoryCase.name];
    figures.push({
      ...(breakdownMb === undefined ? {} : { breakdownMb }),
      ...(firstRun === undefined ? {} : { firstRunPeakRssMb: firstRun.peakRssMb }),
      name: memoryCase.name,
      ...(rows === undefined ? {} : { rows, cpuMsPer1kRows: (cpuMs * 1000) / rows }),
      peakRssMb,
      ratioToBare: peakRssMb / bare,
      cpuMs,
      peakRssRuns: list.map((sample) => sample.peakRssMb),
      cpuMsRuns: list.map((sample) => sample.cpuMs),
    });
  }
  return figures;
}

export function memoryReport(runs: number, measured: readonly CheckoutMemory[]): MemoryReport {
  const checkouts = measured.map((checkout) => ({
    label: checkout.label,
    root: checkout.root,
    node: checkout.node,
    cases: caseFigures(checkout.samples, checkout.firstRuns),
  }));
  const [current, baseline] = checkouts;
  if (current === undefined || baseline === undefined) return { runs, checkouts };
  const versusBaseline = current.cases.flatMap((figure) => {
    const before = baseline.cases.find((other) => other.name === figure.name);
    if (before === undefined) return [];
    if (figure.cpuMsPer1kRows === undefined || before.cpuMsPer1kRows === undefined)
      return [{ name: figure.name, peakRss: figure.peakRssMb / before.peakRssMb }];
    // Same rows on both sides, so CPU per row compares as CPU.
    const cpuPerRowPaired = pairedRatio(figure.cpuMsRuns, before.cpuMsRuns);
    return [
      {
        name: figure.name,
        peakRss: figure.peakRssMb / before.peakRssMb,
        cpuPerRow: figure.cpuMsPer1kRows / before.cpuMsPer1kRows,
        ...(cpuPerRowPaired === undefined ? {} : { cpuPerRowPaired }),
      },
    ];
  });
  return { runs, checkouts, versusBaseline };
}

/** Issue 39's targets: peak RSS over bare node or in MB per case, and CPU per row against the baseline. */
export function judgeMemory(report: MemoryReport): Target[] {
  const current = report.checkouts[0];
  const targets: Target[] = [];
  for (const memoryCase of MEMORY_CASES) {
    if (memoryCase.run === undefined || (memoryCase.maxRatio === undefined && memoryCase.maxMb === undefined)) continue;
    const figure = current?.cases.find((c) => c.name === memoryCase.name);
    const { rows, latencyMs, concurrency } = memoryCase.run;
    const where = `${memoryCase.name} (${latencyMs} ms, concurrency ${concurrency}), image flags`;
    const [target, value, max] =
      memoryCase.maxRatio === undefined
        ? [`peak RSS MB, ${where}`, figure?.peakRssMb, memoryCase.maxMb!]
        : [`peak RSS / bare node, ${where}`, figure?.ratioToBare, memoryCase.maxRatio];
    targets.push(
      value === undefined || !Number.isFinite(value)
        ? { target, value: null, threshold: `<= ${max}`, met: null, note: 'not measured in this run' }
        : { target, value, threshold: `<= ${max}`, met: value <= max },
    );
    if (rows < 100_000) continue;
    const versus = report.versusBaseline?.find((v) => v.name === memoryCase.name)?.cpuPerRowPaired;
    const cpuTarget = `CPU per row / baseline checkout's, ${memoryCase.name} (median of each round's ratio)`;
    targets.push(
      versus === undefined
        ? { target: cpuTarget, value: null, threshold: `<= ${MAX_CPU_PER_ROW_RATIO}`, met: null, note: 'no --memory-baseline given' }
        : { target: cpuTarget, value: versus, threshold: `<= ${MAX_CPU_PER_ROW_RATIO}`, met: versus <= MAX_CPU_PER_ROW_RATIO },
    );
  }
  targets.push(...sinkTargets(current?.cases ?? []));
  return targets;
}

/** Issue 39: a 1M-row run into Parquet, or into gs://, against the CSV run of the same checkout. */
export const MAX_SINK_RATIOS: Partial<Record<MemoryCaseName, number>> = { 'run 1M, Parquet': 1.15, 'run 1M, gs://': 1.1, 'run 1M, s3://': 1.1 };

function sinkTargets(cases: readonly MemoryCaseFigure[]): Target[] {
  const csv = cases.find((figure) => figure.name === 'run 1M');
  return cases.flatMap((figure) => {
    const max = MAX_SINK_RATIOS[figure.name];
    if (max === undefined || csv === undefined) return [];
    const ratio = figure.peakRssMb / csv.peakRssMb;
    return [{ target: `peak RSS, ${figure.name} / run 1M (CSV), image flags`, value: ratio, threshold: `<= ${max}`, met: ratio <= max }];
  });
}

const fixed = (value: number | undefined, digits: number) => (value !== undefined && Number.isFinite(value) ? value.toFixed(digits) : 'n/a');

function flagsOf(node: ImageNode): string {
  return [...node.nodeArgs, node.nodeOptions === undefined ? 'no NODE_OPTIONS' : `NODE_OPTIONS=${node.nodeOptions}`].join(' ');
}

/** The memory section of the readable report. */
export function formatMemory(report: MemoryReport): string {
  const out: string[] = [
    `\nMemory (issues 29, 44): peak RSS (VmHWM) of each process, median of ${report.runs} runs in the steady state (each finds the previous run's output in place); first run = into an empty output, one run; × bare = over \`node -e 0\` in the same run`,
  ];
  for (const checkout of report.checkouts) {
    out.push(`${checkout.label} (${checkout.root}): node ${flagsOf(checkout.node)}`);
  }
  const [current, baseline] = report.checkouts;
  const header = ['case', 'peak RSS MB', '× bare', 'target', 'CPU ms', 'CPU ms/1k rows', 'runs (MB)', 'first run MB'];
  if (baseline)
    header.push(
      `${baseline.label} MB`,
      `${baseline.label} first run MB`,
      `${baseline.label} × bare`,
      `${baseline.label} CPU ms/1k`,
      'RSS / base',
      'CPU/row / base',
      'paired',
    );
  const rows = (current?.cases ?? []).map((figure) => {
    const memoryCase = MEMORY_CASES.find((c) => c.name === figure.name);
    const maxRatio = memoryCase?.maxRatio;
    const maxMb = memoryCase?.maxMb;
    const cells = [
      figure.name,
      fixed(figure.peakRssMb, 1),
      fixed(figure.ratioToBare, 2),
      maxRatio !== undefined ? `<= ${maxRatio}` : maxMb !== undefined ? `<= ${maxMb} MB` : '',
      fixed(figure.cpuMs, 0),
      figure.rows !== undefined && figure.rows >= 1000 ? fixed(figure.cpuMsPer1kRows, 2) : '',
      figure.peakRssRuns.map((mb) => mb.toFixed(0)).join(' '),
      fixed(figure.firstRunPeakRssMb, 1),
    ];
    if (baseline) {
      const before = baseline.cases.find((c) => c.name === figure.name);
      const versus = report.versusBaseline?.find((v) => v.name === figure.name);
      const perRow = figure.rows !== undefined && figure.rows >= 1000;
      cells.push(
        fixed(before?.peakRssMb, 1),
        fixed(before?.firstRunPeakRssMb, 1),
        fixed(before?.ratioToBare, 2),
        perRow ? fixed(before?.cpuMsPer1kRows, 2) : '',
        fixed(versus?.peakRss, 2),
        perRow ? fixed(versus?.cpuPerRow, 3) : '',
        perRow ? fixed(versus?.cpuPerRowPaired, 3) : '',
      );
    }
    return cells;
  });
  const widths = header.map((cell, column) => Math.max(cell.length, ...rows.map((row) => row[column]!.length)));
  const line = (cells: string[]) => cells.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!))).join('  ');
  out.push([line(header), widths.map((width) => '-'.repeat(width)).join('  '), ...rows.map(line)].join('\n'));
  for (const checkout of report.checkouts) out.push(...formatBreakdown(checkout.label, checkout.cases));
  return out.join('\n');
}

/** `--memory-breakdown`'s table: where each case's memory was at its highest RSS, MB, medians. */
function formatBreakdown(label: string, cases: readonly MemoryCaseFigure[]): string[] {
  const withBreakdown = cases.filter((figure) => figure.breakdownMb !== undefined);
  if (withBreakdown.length === 0) return [];
  const header = ['case', ...BREAKDOWN_COLUMNS];
  const rows = withBreakdown.map((figure) => [figure.name, ...BREAKDOWN_COLUMNS.map((column) => fixed(figure.breakdownMb![column], 1))]);
  const widths = header.map((cell, column) => Math.max(cell.length, ...rows.map((row) => row[column]!.length)));
  const line = (cells: string[]) => cells.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!))).join('  ');
  return [
    `\n${label}: where the memory is at the highest RSS sampled (every 10 ms), MB, medians: file/anon resident at exit; V8 heap committed and used; new, old, code (+trusted), LO committed; external, of it buffers`,
    [line(header), widths.map((width) => '-'.repeat(width)).join('  '), ...rows.map(line)].join('\n'),
  ];
}
