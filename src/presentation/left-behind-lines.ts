import type { JobMorning, LastRun } from '../workspace/morning-status.js';

/**
 * `status`'s lines of what a run left behind (workspace/left-behind.ts), and what it says of a
 * killed run's trace and lineage: one block, each thing on a line of its own with how it goes
 * away below it; what its run's record named at its end first (its text says how it goes), then
 * a killed run's own and what looking found, then where it could not be looked.
 */
export function leftBehindLines(morning: Pick<JobMorning, 'leftovers' | 'leftBehind'>): string[] {
  const named = morning.leftovers ?? [];
  const { items = [], unchecked = [] } = morning.leftBehind ?? {};
  if (named.length === 0 && items.length === 0 && unchecked.length === 0) return [];
  return [
    '  left behind:',
    ...named.map((text) => `    ${text}`),
    ...items.flatMap((item) => [`    ${item.what}`, `      goes: ${item.goes}`]),
    ...unchecked.map((where) => `    not checked: ${where.sink} ${where.where}: ${where.reason}`),
  ];
}

/** Below a KILLED last run: why it shows no trace id, and the FAIL that closed its lineage. */
export function killedRunLines(run: Pick<LastRun, 'verdict' | 'noSpansExported' | 'lineageClosed'>): string[] {
  if (run.verdict !== 'killed') return [];
  const lines: string[] = [];
  if (run.noSpansExported === true) lines.push('    no trace: it was killed before the collector accepted a span of it');
  if (run.lineageClosed !== undefined)
    lines.push(
      `    lineage: ${run.lineageClosed.runIds.join(', ')} closed with ${run.lineageClosed.eventType} by run ${run.lineageClosed.byRunId} at ${run.lineageClosed.at}`,
    );
  return lines;
}
