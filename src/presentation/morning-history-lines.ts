import { countNoun } from '../count-noun.js';
import type { RunBaseline } from '../history/run-baseline.js';
import type { JobHole } from '../workspace/morning-history.js';

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** An instant as `status` prints it: `2026-11-28 02:00:00 UTC`. */
function instant(iso: string): string {
  return iso.replace('T', ' ').replace(/(\.\d+)?Z$/, ' UTC');
}

/** The phases of a run far off the job's usual, with that usual: what the `time:` line says beside each (`source 8.1 s (usually 1.0 s)`). */
export function usualOfFarPhases(baseline: RunBaseline | undefined): Record<string, number> {
  const usual: Record<string, number> = {};
  for (const far of baseline?.farOff ?? []) if (far.measure.startsWith('timings.')) usual[far.measure.slice('timings.'.length)] = far.median;
  return usual;
}

/**
 * `usually: 130 rows in 1.0 s (median of 5 earlier successful runs)`, and what of the last run is
 * far off that: `; FAR OFF: 0 rows, 8.2 s, source 8.1 s`.
 */
export function baselineLine(baseline: RunBaseline): string {
  const usual = `usually: ${countNoun(Math.round(baseline.rows), 'row')} in ${seconds(baseline.durationMs)} (median of ${countNoun(baseline.runs, 'earlier successful run')})`;
  const far = baseline.farOff.map(({ measure, value }) => {
    if (measure === 'rows') return countNoun(value, 'row');
    if (measure === 'durationMs') return seconds(value);
    return `${measure.slice('timings.'.length).replace(':', ' ')} ${seconds(value)}`;
  });
  return `    ${usual}${far.length === 0 ? '' : `; FAR OFF: ${far.join(', ')}`}`;
}

/**
 * The failed windows no later run filled, each with the run that failed it and the backfill that
 * fills it: `hole: 2026-06-25..2026-06-28, failed in backfill run B of TIME (CODE); no run since filled it`.
 */
export function holeLines(holes: readonly JobHole[]): string[] {
  return holes.flatMap((hole) => {
    const run = `${hole.failedIn.trigger === 'backfill' ? 'backfill ' : ''}run ${hole.failedIn.runId} of ${instant(hole.failedIn.startedAt)}`;
    const code = hole.failedIn.code === undefined ? '' : ` (${hole.failedIn.code})`;
    return [`  hole: ${hole.from}..${hole.to}, failed in ${run}${code}; no run since filled it`, `    re-run: ${hole.rerun}`];
  });
}
