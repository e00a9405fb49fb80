import type { DateWindow, WindowStep } from '../pipeline/windows/date-windows.js';
import type { CatchUpReport } from '../pipeline/windows/catch-up.js';
import type { BackfillSummary } from '../pipeline/windows/run-windows.js';
import { describeOutputs } from './run-summary.js';

/** What a run on `source.clock: local` says of its windows, in its lines. */
export const LOCAL_CLOCK_NOTE = "windows follow this machine's clock (source.clock: local), not the source's";

/** What a window published before it ended is, in the lines that report it. */
export const OPEN_WINDOW_NOTE =
  "the day had not ended on the source's clock: recorded as open, exported again by the next incremental run or backfill --resume";

/** One line per window (rows and targets, or the error), its warnings, and the commands that re-run the failed ones. */
export function windowLines(summary: BackfillSummary, rerun: readonly string[]): string[] {
  const lines: string[] = [];
  if (!summary.exact) lines.push('  note: the job names no backfill.bucketColumn, so each window is exact only to within one day');
  if (summary.clock.basis === 'local') lines.push(`  note: ${LOCAL_CLOCK_NOTE}`);
  for (const { window, open, summary: tile, warnings } of summary.windows) {
    const detail =
      tile.status === 'succeeded'
        ? describeOutputs(tile, { pages: false })
        : `${tile.status === 'failed' ? 'FAILED' : 'PARTIALLY PUBLISHED'} ${tile.error?.code}: ${tile.error?.message}`;
    lines.push(`  ${window.from}..${window.to}: ${detail}${open && tile.status === 'succeeded' ? ` (open: ${OPEN_WINDOW_NOTE})` : ''}`);
    for (const warning of warnings) lines.push(`    warning: ${warning}`);
  }
  if (rerun.length > 0) {
    lines.push(`failed windows: ${summary.failed.length}; re-run only them with:`);
    for (const command of rerun) lines.push(`  ${command}`);
  }
  return lines;
}

/** Contiguous failed windows, merged, as the commands that re-run only them. */
export function rerunCommands(failed: readonly DateWindow[], job: string, step: WindowStep, passThrough: readonly string[]): string[] {
  const ranges: DateWindow[] = [];
  for (const window of failed) {
    const last = ranges.at(-1);
    if (last !== undefined && last.to === window.from) last.to = window.to;
    else ranges.push({ ...window });
  }
  return ranges.map((range) => ['tilehouse backfill', '--job', job, '--from', range.from, '--to', range.to, '--step', step, ...passThrough].join(' '));
}

/** The lines `run` prints for an incremental job after its tiles: the windows, why, and what is left. */
export function catchUpLines(report: CatchUpReport): string {
  const lines = [`  incremental ${report.job}: ${report.reason}`];
  if (report.clock?.basis === 'local') lines.push(`       note: ${LOCAL_CLOCK_NOTE}`);
  // The same line as backfill prints for the same window (windowLines).
  for (const warning of report.warnings) lines.push(`       warning: ${warning}`);
  if (report.open.length > 0) lines.push(`       open: ${report.open.map((window) => window.from).join(', ')}: ${OPEN_WINDOW_NOTE}`);
  if (report.failed.length > 0)
    lines.push(`       ${report.failed.length} window${report.failed.length === 1 ? '' : 's'} failed; the next run starts again at ${report.failed[0]!.from}`);
  if (report.left.length > 0)
    lines.push(
      `       warning: ${report.left.length} day windows (${report.left[0]!.from}..${report.left.at(-1)!.to}) left for the next run (maxWindows ${report.maxWindows})`,
    );
  return `${lines.join('\n')}\n`;
}
