/**
 * The peers' bench, the arithmetic and the table: medians of each tool's runs per case, and each
 * peer's figures as ratios to tilehouse's in the same run. No processes here (run-peers.ts).
 */
import { median } from '../results.js';

/** tilehouse at its default concurrency, then at one page in flight as the peers page (issue 44), then the peers. */
export const TOOLS = ['tilehouse', 'tilehouse-1', 'dlt', 'airbyte'] as const;
export type Tool = (typeof TOOLS)[number];

export const TOOL_LABELS: Record<Tool, string> = { tilehouse: 'tilehouse', 'tilehouse-1': 'tilehouse, one page at a time', dlt: 'dlt', airbyte: 'Airbyte CDK' };

export interface PeerCase {
  rows: number;
  latencyMs: number;
}

/** One measured run of one tool: the whole process tree. */
export interface PeerSample {
  wallMs: number;
  cpuMs: number;
  peakRssMb: number;
  /** The tree's largest process alone (the Airbyte peer: the CDK's, without the CSV writer's). */
  largestProcessMb: number;
}

export interface PeerFigure {
  tool: Tool;
  /** Pages in flight. */
  concurrency: number;
  runs: number;
  peakRssMb: number;
  largestProcessMb: number;
  cpuS: number;
  wallS: number;
  rowsPerS: number;
  /** This tool's median over tilehouse's, same case and run (1 for tilehouse). */
  vsTilehouse: { peakRss: number; cpu: number; rowsPerS: number };
}

export interface PeerGroup extends PeerCase {
  figures: PeerFigure[];
  /** Every run's figures, per tool, in the order they ran. */
  samples: Partial<Record<Tool, PeerSample[]>>;
}

export interface PeersReport {
  settings: Record<string, string | number>;
  groups: PeerGroup[];
}

/** Medians of each tool's samples (each figure separately), and ratios to tilehouse's. */
export function peerGroup(peerCase: PeerCase, samples: ReadonlyMap<Tool, readonly PeerSample[]>, concurrency: (tool: Tool) => number): PeerGroup {
  const medians = new Map<Tool, { peakRssMb: number; largestProcessMb: number; cpuMs: number; wallMs: number; runs: number }>();
  for (const [tool, list] of samples) {
    if (list.length === 0) continue;
    medians.set(tool, {
      peakRssMb: median(list.map((s) => s.peakRssMb)),
      largestProcessMb: median(list.map((s) => s.largestProcessMb)),
      cpuMs: median(list.map((s) => s.cpuMs)),
      wallMs: median(list.map((s) => s.wallMs)),
      runs: list.length,
    });
  }
  const base = medians.get('tilehouse');
  const figures = TOOLS.filter((tool) => medians.has(tool)).map((tool): PeerFigure => {
    const m = medians.get(tool)!;
    const rowsPerS = peerCase.rows / (m.wallMs / 1000);
    return {
      tool,
      concurrency: concurrency(tool),
      runs: m.runs,
      peakRssMb: m.peakRssMb,
      largestProcessMb: m.largestProcessMb,
      cpuS: m.cpuMs / 1000,
      wallS: m.wallMs / 1000,
      rowsPerS,
      vsTilehouse: {
        peakRss: base === undefined ? Number.NaN : m.peakRssMb / base.peakRssMb,
        cpu: base === undefined ? Number.NaN : m.cpuMs / base.cpuMs,
        rowsPerS: base === undefined ? Number.NaN : rowsPerS / (peerCase.rows / (base.wallMs / 1000)),
      },
    };
  });
  return { ...peerCase, figures, samples: Object.fromEntries(samples) };
}

export function rowsLabel(rows: number): string {
  if (rows >= 1_000_000 && rows % 1_000_000 === 0) return `${rows / 1_000_000}M`;
  if (rows >= 1000 && rows % 1000 === 0) return `${rows / 1000}k`;
  return String(rows);
}

const fixed = (value: number, digits: number) => (Number.isFinite(value) ? value.toFixed(digits) : '—');
const thousands = (value: number) => (Number.isFinite(value) ? `${Math.round(value / 1000)}k` : '—');

/** The report as Markdown: the settings, then one table of every case and tool. */
export function formatPeersReport(report: PeersReport): string {
  const lines = Object.entries(report.settings).map(([name, value]) => `${name}: ${value}`);
  lines.push(
    '',
    '| rows, latency | tool | concurrency | runs | peak RSS MB | largest process MB | CPU s | wall s | rows/s | RSS / tilehouse | CPU / tilehouse | rows/s / tilehouse |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
  );
  for (const group of report.groups) {
    for (const figure of group.figures) {
      const ratios =
        figure.tool === 'tilehouse' ? ['', '', ''] : [figure.vsTilehouse.peakRss, figure.vsTilehouse.cpu, figure.vsTilehouse.rowsPerS].map((r) => fixed(r, 2));
      lines.push(
        `| ${rowsLabel(group.rows)}, ${group.latencyMs} ms | ${TOOL_LABELS[figure.tool]} | ${figure.concurrency} | ${figure.runs} | ${fixed(figure.peakRssMb, 1)} | ${fixed(figure.largestProcessMb, 1)} | ${fixed(figure.cpuS, 1)} | ${fixed(figure.wallS, 1)} | ${thousands(figure.rowsPerS)} | ${ratios.join(' | ')} |`,
      );
    }
  }
  return `${lines.join('\n')}\n`;
}
