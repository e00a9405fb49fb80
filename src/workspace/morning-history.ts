import type { LoadedJob } from '../config/load-config.js';
import { changesSince, type ValueChange } from '../history/definition-diff.js';
import type { JudgedRun } from '../history/read-history.js';
import type { RunRecord } from '../history/run-record.js';
import { lastPublisherOf, publisherNamed } from '../history/target-publishers.js';
import { holesOf, type WindowHole } from '../history/window-holes.js';
import { isLate, type TargetStatus } from '../pipeline/target-status.js';
import { jobForRun, jobForWindows } from '../pipeline/windows/windowed-job.js';
import { definitionSourceOf } from '../sinks/registry.js';
import { definitionChanges, definitionOfValues, jobDefinitionOf } from '../value-types/job-definition.js';

/**
 * `status`'s answers from the run history as the source of truth (issue 63), beside what each
 * target says of itself: which run published each target (a local file without a manifest names
 * none; a window's target names `<id>-YYYYMMDD`, which is run `<id>`'s window of that day), what
 * changed since, from the definition that run recorded, and the failed windows no later run filled.
 * The target confirms the history where it can: a manifest or a ledger names the same run; a
 * file's modification time is no later than that run's end.
 */

/** How long after a run's end a target's last change may still be that run's: an object store's clock is not ours. */
const CLOCK_SLACK_MS = 5 * 60_000;

/** Each target as the history tells it (`records`: the job's, newest first); `due`: the schedule's latest time, for LATE. */
export function targetsFromHistory(job: LoadedJob, targets: readonly TargetStatus[], records: readonly JudgedRun[], due: string | undefined): TargetStatus[] {
  return targets.map((target) => targetFromHistory(job, target, records, due));
}

function targetFromHistory(job: LoadedJob, target: TargetStatus, records: readonly JudgedRun[], due: string | undefined): TargetStatus {
  if (target.state === 'written' && target.runId !== undefined) {
    const publisher = publisherNamed(records, target.runId, target.target);
    if (publisher === undefined) return target;
    const { record } = publisher.judged;
    const window =
      record.runId === target.runId || publisher.window === undefined ? {} : { runId: record.runId, window: publisher.window, windowRunId: target.runId };
    return withChangesSince(job, record, { ...target, ...window });
  }
  // A target that says when it last changed (a file, a table's metadata) and names no run: the
  // history names it when that change falls within the run. One that names no time (a table whose
  // ledger names no run of it, an Iceberg snapshot another writer committed) is not tilehouse's.
  if (target.state !== 'unrecorded' || target.at === undefined) return target;
  const publisher = lastPublisherOf(records, target.target);
  if (publisher === undefined) return target;
  const { record } = publisher.judged;
  if (!changedWithin(target.at, record))
    return {
      ...target,
      note: `it changed outside run ${record.runId}, the last the run history says published it: by hand, or by a run the history does not keep`,
    };
  const { note: _unrecorded, late: _byModification, ...rest } = target;
  // The run's start, as a manifest gives it: what LATE compares with the schedule.
  const written = { ...rest, state: 'written' as const, runId: record.runId, at: record.startedAt, readFrom: `the run history; ${target.readFrom}` };
  const late = due !== undefined && isLate(written, new Date(due)) ? { late: { due } } : {};
  return withChangesSince(job, record, { ...written, ...late, ...(publisher.window === undefined ? {} : { window: publisher.window }) });
}

/** The target's last change falls within the run (its start to its end, give or take the clocks' slack): the run's publish. */
function changedWithin(at: string, record: RunRecord): boolean {
  const changed = Date.parse(at);
  const end = record.finishedAt === undefined ? Number.POSITIVE_INFINITY : Date.parse(record.finishedAt);
  return changed >= Date.parse(record.startedAt) - CLOCK_SLACK_MS && changed <= end + CLOCK_SLACK_MS;
}

/**
 * The target's "changed since" from the definition its run recorded in the history, compared with
 * the job as that kind of run takes it: a window's manifest records the window's query (its day's
 * filter), which is not the job's and no change of it.
 */
function withChangesSince(job: LoadedJob, record: RunRecord, target: TargetStatus): TargetStatus {
  const { changedSince: _fromTarget, ...rest } = target;
  const changes = definitionChanges(definitionOfValues(record.definition.values), jobDefinitionOf(definitionSourceOf(asRecorded(job, record))));
  return changes.length === 0 ? rest : { ...rest, changedSince: changes };
}

/**
 * The job as the recorded run took it: a backfill's windowed (jobForWindows), a run's as a run
 * takes it (jobForRun: an incremental job windowed), so a path a window run defaults is no change.
 */
function asRecorded(job: LoadedJob, record: RunRecord): LoadedJob {
  try {
    return record.trigger === 'backfill' ? jobForWindows(job) : jobForRun(job);
  } catch {
    // A job that cannot be windowed now (its path lost {date}) was changed since: compared as it is, that change shows.
    return job;
  }
}

/**
 * What changed since the run that wrote the targets (the one most of them name, once resolved
 * through the history), as old → new values from its record; undefined when nothing did or the
 * history keeps no record of it. Said once per job: the target lines of that run leave it out.
 */
export function changesSinceWriter(
  job: LoadedJob,
  targets: readonly TargetStatus[],
  records: readonly JudgedRun[],
): { sinceRunId: string; values: ValueChange[] } | undefined {
  const writer = mostNamed(targets.map((target) => target.runId).filter((runId): runId is string => runId !== undefined));
  const found = writer === undefined ? undefined : records.find((judged) => judged.record.runId === writer);
  if (found === undefined) return undefined;
  const values = changesSince(found.record, asRecorded(job, found.record));
  return values.length === 0 ? undefined : { sinceRunId: writer!, values };
}

function mostNamed(runIds: readonly string[]): string | undefined {
  const counts = new Map<string, number>();
  for (const runId of runIds) counts.set(runId, (counts.get(runId) ?? 0) + 1);
  return [...counts.entries()].sort((a, b) => b[1] - a[1])[0]?.[0];
}

/** A hole of the job's history (history/window-holes.ts) and the command that fills it: a backfill of just those days, at the failed run's step. */
export interface JobHole extends WindowHole {
  rerun: string;
}

/** The job's holes, oldest first, each with its backfill (the same command a backfill prints for its failed windows). */
export function jobHolesOf(job: LoadedJob, records: readonly JudgedRun[], fixFlags: readonly string[]): JobHole[] {
  return holesOf(records).map((hole) => ({
    ...hole,
    rerun: ['tilehouse backfill', '--job', job.name, '--from', hole.from, '--to', hole.to, '--step', hole.step, ...fixFlags].join(' '),
  }));
}
