import { countNoun } from '../count-noun.js';
import type { TileProgressEvent } from '../pipeline/progress.js';
import type { WindowProgress } from '../pipeline/windows/window-batch.js';

/** A compact count: 950, 12.3k, 1.2M. */
export function compactCount(value: number): string {
  if (value < 1000) return String(Math.round(value));
  if (value < 1_000_000) return `${(value / 1000).toFixed(value < 10_000 ? 1 : 0)}k`;
  return `${(value / 1_000_000).toFixed(1)}M`;
}

/** 42s, 3m05s, 1h02m. */
export function shortDuration(ms: number): string {
  const seconds = Math.max(0, Math.round(ms / 1000));
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m${String(seconds % 60).padStart(2, '0')}s`;
  return `${Math.floor(minutes / 60)}h${String(minutes % 60).padStart(2, '0')}m`;
}

/** What the progress line knows of one running tile. */
export interface TileProgressState {
  job: string;
  startedAt: number;
  last?: Extract<TileProgressEvent, { phase: 'page' }>;
}

/**
 * One line per running tile: `incidents_by_type  12/40 pages  600/2000 rows  1.2k rows/s  ETA 3s  2 retries`.
 * Rate and ETA are over the tile's whole elapsed time so far (token and page 0 included), which is
 * steadier than a moving window for the few seconds most tiles take.
 */
export function formatTileProgress(state: TileProgressState, now: number): string {
  const { last } = state;
  if (last === undefined) return `${state.job}  connecting…`;
  const elapsed = Math.max(1, now - state.startedAt);
  const parts = [
    state.job,
    `${last.pagesDone}/${last.pagesTotal ?? '?'} pages`,
    `${compactCount(last.rows)}/${compactCount(last.totalRows)} rows`,
    `${compactCount((last.rows * 1000) / elapsed)} rows/s`,
  ];
  if (last.rows > 0 && last.totalRows > last.rows) parts.push(`ETA ${shortDuration(((last.totalRows - last.rows) * elapsed) / last.rows)}`);
  if (last.retries > 0) parts.push(`${last.retries} ${last.retries === 1 ? 'retry' : 'retries'}`);
  return parts.join('  ');
}

/** The progress line of a run of day windows: `daily  3/10 windows, 1200 rows, ETA 42s`. */
export function windowProgressText({ job, done, total, rows, elapsedMs }: WindowProgress): string {
  const eta = (elapsedMs / done) * (total - done);
  return `${job}  ${done}/${countNoun(total, 'window')}, ${countNoun(rows, 'row')}, ETA ${shortDuration(eta)}`;
}
