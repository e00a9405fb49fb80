import { formatMemory } from './memory-results.js';
import type { BenchReport, Figure, Group } from './results.js';

const LABELS: Record<string, string> = {
  transport: '(a) transport limit',
  sequential: '(b) sequential client',
  csv: '(c) tilehouse → CSV',
  'csv-baseline': '(c) of the --baseline checkout',
  'csv-deployed': "(c') → CSV, image's node flags",
  bigquery: '(d) tilehouse → BigQuery emu',
  gcs: '(gcs) tilehouse → gs:// (fake)',
  s3: '(s3) tilehouse → s3:// (moto)',
  postgres: '(pg) tilehouse → PostgreSQL, 2nd night',
  parquet: '(parquet) tilehouse → Parquet',
  'parquet-deployed': "(parquet') → Parquet, deployed NODE_OPTIONS",
  'parquet-s3': '(parquet-s3) → Parquet in s3:// (moto)',
  iceberg: '(iceberg) → Iceberg, JDBC catalog, 2nd night',
  'iceberg-s3': '(iceberg-s3) → Iceberg in s3:// (moto), 2nd night',
};

const int = (value: number) => Math.round(value).toLocaleString('en-US');
const fixed = (value: number, digits: number) => (Number.isFinite(value) ? value.toFixed(digits) : 'n/a');

function table(header: string[], rows: string[][]): string {
  const widths = header.map((cell, column) => Math.max(cell.length, ...rows.map((row) => row[column]!.length)));
  const line = (cells: string[]) => cells.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!))).join('  ');
  return [line(header), widths.map((width) => '-'.repeat(width)).join('  '), ...rows.map(line)].join('\n');
}

function groupTable(group: Group, transportKey: (figure: Figure) => string): string {
  const rows = Object.entries(group.figures).map(([name, figure]) => {
    const baseline = group.figures[transportKey(figure)];
    const notes: string[] = [];
    if (figure.extrapolatedFromPages !== undefined) notes.push(`extrapolated from ${figure.extrapolatedFromPages} of ${figure.pages} pages`);
    if (figure.extractMs !== undefined && figure.loadMs !== undefined)
      notes.push(`extract ${fixed(figure.extractMs / 1000, 2)} s + emulator load ${fixed(figure.loadMs / 1000, 2)} s`);
    if (figure.storageCpuMs !== undefined)
      notes.push(`${figure.scenario === 'gcs' ? 'fake-gcs-server' : 'moto'} CPU ${fixed((figure.storageCpuMs * 1000) / figure.rows, 2)} ms/1k rows`);
    if (figure.psqlCopyRowsPerSec !== undefined) notes.push(`psql \\copy of the same rows ${int(figure.psqlCopyRowsPerSec)} rows/s`);
    if (figure.readerMaxWaitMs !== undefined) notes.push(`a reader waited at most ${fixed(figure.readerMaxWaitMs, 0)} ms`);
    if (figure.publishMs !== undefined) notes.push(`publish transaction ${fixed(figure.publishMs / 1000, 2)} s`);
    if (figure.scenario.startsWith('iceberg') || figure.scenario.startsWith('parquet')) {
      const phases = [
        figure.sinkPrepareMs === undefined ? undefined : `prepare ${fixed(figure.sinkPrepareMs / 1000, 2)} s`,
        figure.sinkPublishMs === undefined
          ? undefined
          : `${figure.scenario.startsWith('iceberg') ? 'commit' : 'publish'} ${fixed(figure.sinkPublishMs / 1000, 2)} s`,
      ].filter((part) => part !== undefined);
      if (phases.length > 0) notes.push(phases.join(', '));
    }
    if (figure.runMsRuns.length > 1) notes.push(`median of ${figure.runMsRuns.length}`);
    return [
      group.compressed ? `${LABELS[figure.scenario] ?? figure.scenario}, source ${name.split(' ').at(-1)}` : (LABELS[figure.scenario] ?? figure.scenario),
      String(figure.concurrency),
      fixed(figure.startMs, 0),
      fixed(figure.runMs / 1000, 2),
      int(figure.rowsPerSec),
      fixed(figure.wallMs / 1000, 2),
      fixed(figure.peakRssMb, 0),
      fixed((figure.cpuMs * 1000) / figure.rows, 2),
      fixed((figure.sourceCpuMs * 1000) / figure.rows, 2),
      baseline ? fixed(figure.rowsPerSec / baseline.rowsPerSec, 2) : '',
      notes.join('; '),
    ];
  });
  return table(['scenario', 'conc', 'start ms', 'run s', 'rows/s', 'wall s', 'peak RSS MB', 'CPU ms/1k rows', 'source ms/1k rows', 'vs (a)', 'notes'], rows);
}

/** The readable form of a report: one table per size × latency, then ratios and targets. */
export function formatReport(report: BenchReport): string {
  const { settings } = report;
  const out: string[] = [];
  out.push(
    `tilehouse bench — node ${settings.node}, ${settings.cpus} CPUs, ${settings.itemsPerPage} rows/page, concurrency ${settings.concurrency} ` +
      `(${settings.targetConcurrency} for c/b at latency > 0), sizes up to 100k: median of ${settings.repeat} run(s)`,
  );
  out.push(`tilehouse: ${settings.tilehouse}`);
  out.push(`(b): ${settings.sequentialClient}`);
  out.push(
    `(c'): (c) started as the image starts node (Dockerfile): ${[...settings.deployedNodeArgs, `NODE_OPTIONS=${settings.deployedNodeOptions}`].join(' ')}`,
  );
  out.push(`query: ${settings.query}`);
  out.push(
    'Each scenario is its own process. start = spawn → its first token request; run = first token request → exit;\n' +
      "rows/s and ratios use run; wall = spawn → exit (start-up included); peak RSS = that process's own high-water mark (VmHWM);\n" +
      "CPU = that process's user+system CPU (all threads, start-up included) per 1000 rows; source = the sandbox's CPU meanwhile.",
  );
  if (report.coldStart) {
    const cold = report.coldStart;
    out.push(
      `\nCold start (spawn → first token request of node ${cold.cli}, median of ${cold.runs}): ${fixed(cold.cliMedianMs, 0)} ms as the image starts it; ` +
        `${fixed(cold.byHandMedianMs, 0)} ms started by hand without flags (one relaunch); ` +
        `bare node + undici + one POST: ${fixed(cold.baselineMedianMs, 0)} ms; ratio ${fixed(cold.ratio, 2)}`,
    );
  }
  for (const group of report.groups) {
    const source = group.compressed
      ? `, compressed-source group: sandboxes behind a ${group.compressed.bandwidthMbps} Mbit/s link, one answering gzip to tilehouse's Accept-Encoding, one identity`
      : '';
    out.push(`\n${int(group.rows)} rows, page latency ${group.latencyMs} ms${source}`);
    out.push(
      groupTable(
        group,
        (figure) => `transport@${figure.scenario === 'sequential' || figure.scenario === 'bigquery' ? settings.concurrency : figure.concurrency}`,
      ),
    );
    const ratios = Object.entries(group.ratios).map(([name, value]) => `${name} ${fixed(value, 2)}`);
    if (ratios.length > 0) out.push(`ratios: ${ratios.join(', ')}`);
  }
  if (report.memory) out.push(formatMemory(report.memory));
  out.push('\nTargets');
  out.push(
    table(
      ['target', 'value', 'threshold', 'met'],
      report.targets.map((t) => [
        t.target,
        t.value === null ? 'n/a' : fixed(t.value, 2),
        t.threshold,
        t.met === null ? `— (${t.note ?? ''})` : t.met ? 'yes' : 'NO',
      ]),
    ),
  );
  return `${out.join('\n')}\n`;
}
