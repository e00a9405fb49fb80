import { countNoun } from '../count-noun.js';
import type { JobMorning, LastBackfill, LastRun } from '../workspace/morning-status.js';
import { formatJobStatus } from './target-status.js';
import { baselineLine, holeLines, usualOfFarPhases } from './morning-history-lines.js';
import type { TargetStatus } from '../pipeline/target-status.js';
import { repairLines, shortValue } from './repair-lines.js';
import { killedRunLines, leftBehindLines } from './left-behind-lines.js';

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** An instant as `status` prints it: `2026-11-28 02:00:00 UTC`. */
function instant(iso: string): string {
  return iso.replace('T', ' ').replace(/(\.\d+)?Z$/, ' UTC');
}

const FIRST = ['source', 'reading'];

/**
 * `source 8.9 s, reading 0.4 s, prepare csv 0.1 s, publish csv 0.0 s`: the source and the read
 * first, then each sink's phases as they ran; a phase far off the job's usual says it (`usual`).
 */
export function describeTimings(timings: Record<string, number>, usual: Record<string, number> = {}): string {
  const rank = (name: string) => (FIRST.includes(name) ? FIRST.indexOf(name) : FIRST.length);
  return Object.entries(timings)
    .sort(([a], [b]) => rank(a) - rank(b))
    .map(([name, ms]) => `${name.replace(':', ' ')} ${seconds(ms)}${usual[name] === undefined ? '' : ` (usually ${seconds(usual[name])})`}`)
    .join(', ');
}

function lastRunLines(run: LastRun): string[] {
  const word = run.verdict === 'ok' ? 'OK' : run.verdict.toUpperCase();
  const code = run.code === undefined || run.verdict === 'ok' ? '' : ` ${run.code}`;
  const ids = [
    ...(run.traceId === undefined ? [] : [`trace ${run.traceId}`]),
    ...(run.lineage === undefined ? [] : [`lineage ${run.lineage.namespace} ${run.lineage.job} run ${run.lineage.runIds.join(', ')}`]),
  ];
  const trace = ids.length === 0 ? '' : ` (${ids.join('; ')})`;
  const took =
    run.verdict === 'running' || run.verdict === 'killed'
      ? ''
      : `; ${countNoun(run.rows ?? 0, 'row')}, ${countNoun(run.pages ?? 0, 'page')}${run.durationMs === undefined ? '' : ` in ${seconds(run.durationMs)}`}`;
  const lines = [`  last run: ${word}${code}, run ${run.runId} of ${instant(run.startedAt)}${trace}${took}`];
  if (run.killedBecause !== undefined)
    lines.push(`    still "running" in the history, but ${run.killedBecause}: killed (SIGKILL, an evicted pod, a lost node)`);
  lines.push(...killedRunLines(run));
  if (run.message !== undefined && run.verdict !== 'ok') lines.push(`    ${run.message}`);
  if (run.timings !== undefined && Object.keys(run.timings).length > 0) lines.push(`    time: ${describeTimings(run.timings, usualOfFarPhases(run.baseline))}`);
  if (run.baseline !== undefined) lines.push(baselineLine(run.baseline));
  return lines;
}

/** `, 4 shards` when every shard has a record; else which have, and which have none. */
function shardsText({ count, recorded }: NonNullable<LastBackfill['shards']>): string {
  const missing = Array.from({ length: count }, (_, index) => index).filter((index) => !recorded.includes(index));
  if (missing.length === 0) return `, ${countNoun(count, 'shard')}`;
  const plural = (indexes: readonly number[]) => (indexes.length === 1 ? 'shard' : 'shards');
  return `, ${plural(recorded)} ${recorded.join(', ')} of ${count} (no record of ${plural(missing)} ${missing.join(', ')})`;
}

function lastBackfillLines(backfill: LastBackfill): string[] {
  const word = backfill.verdict === 'ok' ? 'OK' : backfill.verdict.toUpperCase();
  const code = backfill.code === undefined || backfill.verdict === 'ok' ? '' : ` ${backfill.code}`;
  const shard = backfill.shards === undefined ? '' : shardsText(backfill.shards);
  const trace = backfill.traceId === undefined ? '' : ` (trace ${backfill.traceId})`;
  const failed = backfill.failedWindows?.length ?? 0;
  const took =
    backfill.verdict === 'running' || backfill.verdict === 'killed'
      ? ''
      : `; ${backfill.windows - failed} of ${countNoun(backfill.windows, 'window')} succeeded, ${countNoun(backfill.rows ?? 0, 'row')}${backfill.durationMs === undefined ? '' : ` in ${seconds(backfill.durationMs)}`}`;
  const lines = [
    `  last backfill: ${word}${code}, run ${backfill.runId} of ${instant(backfill.startedAt)}, ${backfill.from}..${backfill.to} by ${backfill.step}${shard}${trace}${took}`,
  ];
  if (backfill.killedBecause !== undefined) lines.push(`    still "running" in the history, but ${backfill.killedBecause}: killed`);
  if (backfill.message !== undefined && backfill.verdict !== 'ok') lines.push(`    ${backfill.message}`);
  // Its failed windows are re-run from the `hole:` lines, which leave out those a later run filled.
  return lines;
}

/**
 * `status` for one job, as a person reads it: the job line, its last run (outcome, code, run and
 * trace id, rows, where the time went, beside the job's usual), a backfill newer than it (its
 * range, windows) and LATE when none ran since the schedule fired; each
 * target (presentation/target-status.ts); what changed since the run that wrote them, old → new;
 * the failed windows no run filled since, with their re-run; what was left behind; the commands
 * that run it again.
 */
export function formatJobMorning(morning: JobMorning): string {
  // A definition change is said once: where the block below gives the old → new values since a run,
  // a target that run wrote does not repeat it as a line of its own (--json keeps both).
  const told = morning.changes?.sinceRunId;
  const shown = morning.targets.map((target) => (told !== undefined && target.runId === told ? withoutChangedSince(target) : target));
  const [head = '', ...targets] = formatJobStatus({ ...morning, targets: shown })
    .trimEnd()
    .split('\n');
  const lines = [head];
  if (morning.historyUnreadable !== undefined)
    lines.push(`  last run: unknown: the run history could not be read (history_unavailable): ${morning.historyUnreadable}`);
  else if (morning.lastRun === undefined) lines.push('  last run: none recorded');
  else lines.push(...lastRunLines(morning.lastRun));
  if (morning.lastBackfill !== undefined) lines.push(...lastBackfillLines(morning.lastBackfill));
  if (morning.late !== undefined) lines.push(`  LATE: no run has started since the schedule fired at ${instant(morning.late.due)}`);
  lines.push(...targets);
  if (morning.changes !== undefined) {
    lines.push(`  changed since run ${morning.changes.sinceRunId} (old → new):`);
    for (const change of morning.changes.values) lines.push(`    ${change.part}: ${shortValue(change.old)} → ${shortValue(change.new)}`);
  }
  if (morning.holes !== undefined) lines.push(...holeLines(morning.holes));
  lines.push(...leftBehindLines(morning));
  if (morning.repair !== undefined) lines.push(...repairLines(morning.repair));
  return `${lines.join('\n')}\n`;
}

function withoutChangedSince(target: TargetStatus): TargetStatus {
  const { changedSince: _told, ...rest } = target;
  return rest;
}
