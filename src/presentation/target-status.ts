import { countNoun } from '../count-noun.js';
import type { JobStatus, TargetStatus } from '../pipeline/target-status.js';
import { describeDefinitionChanges } from '../value-types/job-definition.js';

/** An instant as `status` prints it: `2026-11-28 02:00:00 UTC`. */
function instant(iso: string): string {
  return iso.replace('T', ' ').replace(/(\.\d+)?Z$/, ' UTC');
}

function heldBy(target: TargetStatus): string {
  const rows = target.rows === undefined ? '' : `, ${countNoun(target.rows, 'row')}`;
  const at = target.at === undefined ? '' : instant(target.at);
  switch (target.state) {
    case 'written': {
      const window = target.window === undefined ? '' : ` (window ${target.window.from}..${target.window.to})`;
      return `run ${target.runId}${window}${at === '' ? '' : ` of ${at}`}${rows} (${target.readFrom})`;
    }
    case 'unrecorded':
      return `run unknown${at === '' ? '' : `, last changed ${at}`}${rows} (${target.readFrom}): ${target.note}`;
    case 'none':
      return 'nothing yet';
    case 'unreadable':
      return `not readable: ${target.note}`;
  }
}

/** Why a target is behind its schedule: the run due that did not publish it, when the history names one. */
function lateNote(late: NonNullable<TargetStatus['late']>): string {
  const by = late.notPublishedBy;
  if (by === undefined) return `LATE: the run due ${instant(late.due)} has not published it`;
  const outcome = `${by.verdict.toUpperCase()}${by.code === undefined ? '' : ` ${by.code}`}`;
  return `NOT PUBLISHED: the run due ${instant(late.due)}, run ${by.runId}, ${outcome}`;
}

/**
 * `status` as a person reads it: per job, its schedule and when it was last due; per target, the
 * run that wrote it, when, its rows and where that was read; LATE when the run due has not
 * published there; and what changed in the job since the run that wrote it.
 */
export function formatJobStatus(status: JobStatus): string {
  const schedule =
    status.schedule === undefined ? 'no schedule' : `schedule ${status.schedule.cron} ${status.schedule.timezone}, last due ${instant(status.due!)}`;
  const lines = [`${status.job} (tile ${status.tile}; ${schedule})`];
  for (const target of status.targets) {
    const late = target.late === undefined ? '' : `; ${lateNote(target.late)}`;
    lines.push(`  ${target.sink} ${target.target}: ${heldBy(target)}${late}`);
    if (target.changedSince !== undefined && target.runId !== undefined) lines.push(`    ${describeDefinitionChanges(target.changedSince, target.runId)}`);
  }
  return `${lines.join('\n')}\n`;
}
