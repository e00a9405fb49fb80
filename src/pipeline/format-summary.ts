import type { RunSummary } from './tile-summary.js';

const plural = (count: number, noun: string) => `${count} ${noun}${count === 1 ? '' : 's'}`;

/** A few lines a person can read at the end of a run; the JSON summary is in the logs. */
export function formatRunSummary(summary: RunSummary): string {
  const partial = summary.partiallyPublished > 0 ? `, ${summary.partiallyPublished} PARTIALLY PUBLISHED` : '';
  const lines = [`run ${summary.runId}: ${summary.succeeded} succeeded, ${summary.failed} failed${partial} in ${(summary.durationMs / 1000).toFixed(1)} s`];
  for (const tile of summary.tiles) {
    const mark = tile.status === 'succeeded' ? 'ok  ' : tile.status === 'failed' ? 'FAIL' : 'PART';
    const outputs = tile.outputs.map((output) => output.target).join(', ');
    const detail = tile.status === 'succeeded' ? `${plural(tile.rows, 'row')}, ${plural(tile.pages, 'page')} → ${outputs}` : `${tile.error?.code}: ${tile.error?.message}`;
    lines.push(`  ${mark} ${tile.job} (${(tile.durationMs / 1000).toFixed(1)} s): ${detail}`);
  }
  return `${lines.join('\n')}\n`;
}
