import { countNoun } from '../count-noun.js';
import { guardLine } from './job-plan.js';
import { failureText } from './run-summary.js';
import type { AccessCheck } from '../workspace/check-access.js';

/**
 * `check`'s line for one job: `ok job NAME: N rows in the tile, M columns; notes`, `REFUSED job
 * NAME: ...` when a publish guard would refuse a run now (the run's own outcome leads, the
 * reachability after it), or `FAIL job NAME: CODE: message` on one line.
 */
export function accessCheckLine(check: AccessCheck): string {
  if (!check.ok) return `FAIL job ${check.job}: ${failureText(check.job, check).replace(/\s*\n\s*/g, ' ')}\n`;
  // Each publish guard's verdict on a line of its own, below the job's.
  const guards = (check.guards ?? []).map((verdict) => `  ${verdict.target === '' ? '' : `${verdict.target} `}${guardLine(verdict)}\n`);
  const tripped = (check.guards ?? []).filter((verdict) => verdict.verdict === 'trip').length;
  const lead = tripped === 0 ? 'ok' : 'REFUSED';
  const refusal = tripped === 0 ? '' : `a run now would publish nothing: the publish guard refuses it at ${countNoun(tripped, 'target')}; `;
  return `${lead} job ${check.job}: ${refusal}${countNoun(check.rows, 'row')} in the tile, ${countNoun(check.columns, 'column')}${check.notes.map((note) => `; ${note}`).join('')}\n${guards.join('')}`;
}
