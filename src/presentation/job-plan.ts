import type { GuardVerdict } from '../sinks/publish-guard.js';
import { countNoun } from '../count-noun.js';
import type { JobPlan } from '../pipeline/plan-job.js';

/** The plan as a person reads it. */
export function formatJobPlan(plan: JobPlan): string {
  const lines = [`${plan.job} (tile ${plan.tile})${plan.totalRows === undefined ? '' : `: ${countNoun(plan.totalRows, 'row')} now`}`];
  if (plan.status === 'failed') {
    lines.push(`  FAILED ${plan.error?.code}: ${plan.error?.message}`);
    return `${lines.join('\n')}\n`;
  }
  const width = Math.max(...plan.columns.map((column) => column.name.length), 4);
  lines.push('  columns:');
  for (const column of plan.columns)
    lines.push(`    ${column.name.padEnd(width)}  ${column.type.padEnd(9)}  ${JSON.stringify(column.header)} (${column.sourceDataType})`);
  // A refusal leads: nothing below it is what a run now would do.
  const tripped = plan.sinks.filter((sink) => sink.guard?.verdict === 'trip');
  if (tripped.length > 0)
    lines.splice(1, 0, `  REFUSED: a run now would publish nothing: the publish guard refuses it at ${tripped.map((sink) => sink.target).join(', ')}`);
  const refused = plan.sinks.flatMap((sink) => (sink.access?.verdict === 'refused' ? [{ target: sink.target, ...sink.access }] : []));
  if (refused.length > 0)
    lines.splice(1, 0, ...refused.map((refusal) => `  REFUSED: a run now would fail at ${refusal.target}: ${refusal.code}: ${refusal.message}`));
  for (const warning of plan.warnings) lines.push(`  warning: ${warning}`);
  for (const sink of plan.sinks) {
    const action =
      sink.access?.verdict === 'refused'
        ? `refused by its access check (${sink.access.code})`
        : sink.guard?.verdict === 'trip'
          ? `refused by the publish guard (columns ${sink.action})`
          : sink.action;
    lines.push(`  ${sink.sink} ${sink.target}${sink.mode === undefined ? '' : ` (${sink.mode})`}: ${action}`);
    for (const detail of sink.details) lines.push(`    ${detail}`);
    if (sink.access?.verdict === 'not checked') lines.push(`    access: not checked: ${sink.access.reason}`);
    if (sink.guard !== undefined) lines.push(`    ${guardLine(sink.guard)}`);
  }
  const incremental = plan.incremental;
  if (incremental !== undefined) {
    if (incremental.error !== undefined) lines.push(`  incremental: FAILED ${incremental.error.code}: ${incremental.error.message}`);
    else {
      const local = incremental.clock?.basis === 'local';
      lines.push(
        `  incremental (${local ? "this machine's today (source.clock: local)" : "source's today"} ${incremental.today}): next run exports ${incremental.reason}`,
      );
      const lookback = new Set(incremental.lookback.map((window) => window.from));
      const open = new Set(incremental.open.map((window) => window.from));
      const reopened = new Set(incremental.reopened.map((window) => window.from));
      for (const window of incremental.windows) {
        const notes = [
          ...(lookback.has(window.from) ? ['lookback: published, exported again'] : []),
          ...(reopened.has(window.from) ? ['published while open, exported again'] : []),
          ...(open.has(window.from) ? ['open: the day has not ended, recorded as open and exported again by the run after'] : []),
        ];
        lines.push(`    ${window.from}${notes.length === 0 ? '' : `  (${notes.join('; ')})`}`);
      }
    }
  }
  return `${lines.join('\n')}\n`;
}

/** A publish guard's verdict as `plan` and `check` say it. */
export function guardLine(verdict: GuardVerdict): string {
  switch (verdict.verdict) {
    case 'trip':
      // The reason ends with the job's edit when there was one: undoing it comes before the override.
      return `guard: a run now would be refused (${verdict.rule}): ${verdict.reason}; ${verdict.changedSince === undefined ? '' : 'undo that edit, or if it is meant, '}${verdict.setting} or --allow-shrink lets it publish`;
    case 'pass':
      return `guard: passes: ${verdict.reason}`;
    case 'off':
      return 'guard: off (guard: false)';
    case 'unknown':
      // The reason ends "; not judged" where it stands alone (a run's log); here the line begins with it.
      return `guard: not judged: ${verdict.reason.replace(/; not judged$/, '')}`;
  }
}
