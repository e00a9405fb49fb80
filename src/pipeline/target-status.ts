import { Cron } from 'croner';
import type { LoadedJob } from '../config/load-config.js';
import type { Logger } from '../log.js';
import type { Sink, TargetPublication } from '../sinks/sink.js';
import { definitionChanges, jobDefinitionOf, type DefinitionChange } from '../value-types/job-definition.js';
import { definitionSourceOf } from '../sinks/registry.js';

/** One target of a job as `status` tells it: who wrote it, and whether that is as recent as the schedule asks. */
export interface TargetStatus extends TargetPublication {
  /**
   * The schedule fired at `due` (its latest time at or before now) and the target does not hold a
   * run started since: the run of `due` has not published here (failed, refused, not run, or still
   * running). Absent: on time, no schedule, or not known (unreadable).
   */
  late?: {
    due: string;
    /**
     * The job's run since `due` that did not publish here, from the run history (`status` fills it
     * in: src/workspace/morning-status.ts): the target line then names it, as the job's `last run:`
     * line does, instead of calling a run that happened and failed "late".
     */
    notPublishedBy?: { runId: string; verdict: string; code?: string };
  };
  /** What changed in the job's definition since the run that wrote the target (when it recorded one). */
  changedSince?: DefinitionChange[];
  /**
   * A day window's run wrote it (a backfill's, an incremental run's): `runId` is that run's, this
   * its window (`to` exclusive), and `windowRunId` the id the target names (`<runId>-YYYYMMDD`).
   * Filled in by `status` from the run history (src/workspace/morning-history.ts).
   */
  window?: { from: string; to: string };
  windowRunId?: string;
}

export interface JobStatus {
  job: string;
  tile: string;
  schedule?: { cron: string; timezone: string };
  /** The schedule's latest time at or before now: what a current target's run started after. */
  due?: string;
  targets: TargetStatus[];
}

/**
 * Which run wrote each target of a job, as each sink's kind records it (sink.publication: a
 * manifest, an object's metadata, the run ledger), judged against the job's schedule at `now`.
 * Reads the targets only: no request to the source, nothing written.
 */
export async function jobStatusOf(
  job: LoadedJob,
  sinks: readonly Sink[],
  options: { now: Date; logger: Logger; signal?: AbortSignal | undefined },
): Promise<JobStatus> {
  const due = job.schedule === undefined ? undefined : new Cron(job.schedule.cron, { timezone: job.schedule.timezone }).previousRuns(1, options.now)[0];
  const definition = jobDefinitionOf(definitionSourceOf(job));
  const context = {
    jobName: job.name,
    tileId: job.tile,
    runId: '',
    // The target the schedule's latest run wrote, not the one a run now would: a dated path
    // (`{date}`, an incremental job's open day) names the day that run started in, and a run after
    // midnight has not written today's yet.
    startedAt: due ?? options.now,
    columns: [],
    logger: options.logger.child({ job: job.name }),
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  };
  const targets: TargetStatus[] = [];
  for (const sink of sinks) {
    // Every registered kind answers (sink-kind.ts's KindSink); a sink that does not (a test's) is a line that says so, not no line.
    const publication: TargetPublication = (await sink.publication?.(context)) ?? {
      sink: sink.kind,
      target: '(unknown target)',
      state: 'unreadable',
      readFrom: 'unreadable',
      note: `a ${sink.kind} sink that does not say which run wrote its target`,
    };
    const changes = publication.definition === undefined ? [] : definitionChanges(publication.definition, definition);
    targets.push({
      ...publication,
      ...(due !== undefined && isLate(publication, due) ? { late: { due: due.toISOString() } } : {}),
      ...(changes.length > 0 ? { changedSince: changes } : {}),
    });
  }
  return {
    job: job.name,
    tile: job.tile,
    ...(job.schedule === undefined ? {} : { schedule: { cron: job.schedule.cron, timezone: job.schedule.timezone } }),
    ...(due === undefined ? {} : { due: due.toISOString() }),
    targets,
  };
}

/** A target is late when the schedule's latest time passed and no run started since wrote it (no target at all is late too). */
export function isLate(publication: Pick<TargetPublication, 'state' | 'at'>, due: Date): boolean {
  if (publication.state === 'none') return true;
  if (publication.state === 'unreadable' || publication.at === undefined) return false;
  return Date.parse(publication.at) < due.getTime();
}
