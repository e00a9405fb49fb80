import type { LoadedJob } from '../config/load-config.js';
import { messageOf } from '../errors.js';
import type { ValueChange } from '../history/definition-diff.js';
import { baselineOf, type RunBaseline } from '../history/run-baseline.js';
import { type JobHistory, readJobHistory, type JudgedRun, type RunVerdict } from '../history/read-history.js';
import { openHistoryDocuments } from '../history/run-history.js';
import type { JobStatus } from '../pipeline/target-status.js';
import type { StoredDocuments } from '../sinks/registry.js';
import type { Workspace } from './load-workspace.js';
import type { RunSeams } from './run-context.js';
import { changesSinceWriter, jobHolesOf, targetsFromHistory, type JobHole } from './morning-history.js';
import { clusterRerunOf, type Repair, repairFixingFirst } from './repairs.js';
import type { Logger } from '../log.js';
import { type LeftBehind, leftBehindOf, traceOf } from './left-behind.js';

/** How a run recorded in the history went, as `status` tells it (a night's run or a backfill). */
interface RecordedOutcome {
  runId: string;
  traceId?: string;
  verdict: RunVerdict;
  code?: string;
  message?: string;
  startedAt: string;
  durationMs?: number;
  rows?: number;
  /** A run judged killed: why ("its process … is gone", "silent since …"). */
  killedBecause?: string;
  /** Killed before the collector accepted a span of its trace: no trace id is given, as none would find anything. */
  noSpansExported?: true;
}

/** The job's last run as its history keeps it. */
export interface LastRun extends RecordedOutcome {
  /** Lineage on: the OpenLineage job and its tries' run ids (the history's record). */
  lineage?: { namespace: string; job: string; runIds: string[] };
  /** Killed: the FAIL a later run of the job sent to close its open lineage runs (history/killed-runs.ts). */
  lineageClosed?: { eventType: 'FAIL'; at: string; byRunId: string; runIds: string[] };
  /** What started it: a `run` (a CronJob's pod), a tick of `schedule`. */
  trigger: 'run' | 'schedule';
  pages?: number;
  /** Where its time went (the run summary's `timings`). */
  timings?: Record<string, number>;
  /** Its rows and time beside the median of the job's last successful runs, and what is far off (history/run-baseline.ts). */
  baseline?: RunBaseline;
}

/**
 * A backfill of the job newer than its last run, as its history keeps it: a sharded one (an
 * Indexed Job's pods, one run id) from every shard's record, the worst outcome first.
 */
export interface LastBackfill extends RecordedOutcome {
  /** The range asked for (`to` exclusive), the step, the windows its shards ran. */
  from: string;
  to: string;
  step: string;
  windows: number;
  /** A sharded backfill: how many shards, and those the history has a record of. */
  shards?: { count: number; recorded: number[] };
  /** The day windows that did not succeed, oldest first; and the commands that run just those again. */
  failedWindows?: Array<{ from: string; to: string }>;
  rerun?: string[];
}

/** `status`'s job-level answers, beside the per-target ones (pipeline/target-status.ts). */
export interface JobMorning extends JobStatus {
  /** The newest run of the job the history keeps (a run or a schedule's tick; a backfill is not one); absent: none recorded. */
  lastRun?: LastRun;
  /** A backfill started after the last run (a backfill is no night's run: it neither answers LATE nor asks for a repair of the job). */
  lastBackfill?: LastBackfill;
  /** The schedule fired at `due` and no run of the job has started since (its last run is older, or there is none). */
  late?: { due: string };
  /** The history could not be read: why. */
  historyUnreadable?: string;
  /** What changed in the job since the run that wrote its targets, as old → new values (its record kept them). */
  changes?: { sinceRunId: string; values: ValueChange[] };
  /** What the last run said it left behind or left mixed: staging tables, temp objects, targets holding neither run whole. */
  leftovers?: string[];
  /** What a last run that did not end well left, beyond its record's names: a killed run's own, and what looking where each sink writes found (left-behind.ts). */
  leftBehind?: LeftBehind;
  /** The commands that run the job again, when its last run did not publish (or none ran since the schedule fired); what to fix first (repairs.ts). */
  repair?: Repair;
  /** Failed day windows no later run filled, whatever ran since, each with the backfill that fills it (morning-history.ts). */
  holes?: JobHole[];
}

const NOT_OK: ReadonlySet<RunVerdict> = new Set(['failed', 'refused', 'stopped', 'partial', 'killed']);

/**
 * `status`'s job-level answers, from the run history (src/history/): the last run's outcome, code,
 * run and trace id and where its time went; LATE when no run started since the schedule fired;
 * what changed since the run that wrote the targets, as old → new values; what the last run left
 * behind; the commands that run it again. No credentials, no request to the source.
 */
export async function morningOf(
  workspace: Workspace,
  jobs: readonly LoadedJob[],
  statuses: readonly JobStatus[],
  options: { seams: RunSeams; fixFlags: readonly string[]; logger: Logger },
): Promise<JobMorning[]> {
  let documents: StoredDocuments | undefined;
  let unreadable: string | undefined;
  try {
    documents = await openHistoryDocuments(workspace, options.seams.sinkOptions);
  } catch (error) {
    unreadable = messageOf(error);
  }
  const mornings: JobMorning[] = [];
  for (const status of statuses) {
    const job = jobs.find((candidate) => candidate.name === status.job)!;
    if (documents === undefined) {
      mornings.push({ ...status, historyUnreadable: unreadable! });
      continue;
    }
    try {
      const morning = await jobMorningOf(job, status, documents, options.fixFlags);
      const leftBehind = await leftBehindOf(workspace, job, documents, options);
      mornings.push(leftBehind === undefined ? morning : { ...morning, leftBehind });
    } catch (error) {
      mornings.push({ ...status, historyUnreadable: messageOf(error) });
    }
  }
  return mornings;
}

async function jobMorningOf(job: LoadedJob, status: JobStatus, documents: StoredDocuments, fixFlags: readonly string[]): Promise<JobMorning> {
  // The night's runs decide LATE and the repair; a backfill (by hand, for past days) is shown beside
  // them when it is newer, never taken for the run the schedule was due.
  const history = await readJobHistory(documents, job.name, { newest: 1, where: (record) => record.trigger !== 'backfill' });
  const last = history.latest[0];
  const backfills = await readJobHistory(documents, job.name, { newest: 1, where: (record) => record.trigger === 'backfill' });
  const backfill = backfills.latest[0];
  const records = await history.all();
  const morning: JobMorning = { ...status, targets: targetsFromHistory(job, status.targets, records, status.due) };
  const holes = jobHolesOf(job, records, fixFlags);
  if (holes.length > 0) morning.holes = holes;
  if (backfill !== undefined && (last === undefined || backfill.record.startedAt > last.record.startedAt))
    morning.lastBackfill = lastBackfillOf(await shardRecordsOf(backfill, backfills), job, fixFlags);
  if (last !== undefined) {
    const { record } = last;
    morning.lastRun = {
      ...outcomeOf(last),
      ...(record.lineage === undefined ? {} : { lineage: record.lineage }),
      ...(record.lineageClosed === undefined ? {} : { lineageClosed: record.lineageClosed }),
      // Never `backfill`: read where the trigger is not one.
      trigger: record.trigger === 'schedule' ? 'schedule' : 'run',
      ...(record.pages === undefined ? {} : { pages: record.pages }),
      ...(record.timings === undefined ? {} : { timings: record.timings }),
    };
    const baseline = baselineOf(last, records);
    if (baseline !== undefined) morning.lastRun.baseline = baseline;
    const leftovers = [
      ...(record.leftBehind ?? []),
      ...(record.mixed ?? []).map((target) => `${target} (holds neither run whole)`),
      ...(record.outcomeUnknown ?? []).map((target) => `${target} (holds one of the two runs: its publish had no answer)`),
      ...(record.unpublished ?? []).map((target) => `${target} (still holds the previous run)`),
    ];
    if (leftovers.length > 0) morning.leftovers = leftovers;
  }
  if (status.due !== undefined && (last === undefined || Date.parse(last.record.startedAt) < Date.parse(status.due))) morning.late = { due: status.due };
  // A target the due run did not publish, when that run happened: the target says which run and how
  // it ended (the job's `last run:` line), not LATE as if none had started.
  if (last !== undefined && morning.late === undefined && last.verdict !== 'ok') {
    const by = { runId: last.record.runId, verdict: last.verdict, ...(last.record.error === undefined ? {} : { code: last.record.error.code }) };
    morning.targets = morning.targets.map((target) => (target.late === undefined ? target : { ...target, late: { ...target.late, notPublishedBy: by } }));
  }
  // The run that wrote the targets: the one most of them name; its record keeps the definition it ran with.
  const changes = changesSinceWriter(job, morning.targets, records);
  if (changes !== undefined) morning.changes = changes;
  if (morning.late !== undefined || (last !== undefined && NOT_OK.has(last.verdict)))
    morning.repair = repairOf(job, fixFlags, last?.verdict, last?.record.failedWindows);
  if (morning.repair !== undefined && last !== undefined)
    morning.repair = await repairFixingFirst(job, morning.repair, { last, changes: morning.changes, documents, fixFlags });
  return morning;
}

function outcomeOf({ record, verdict, killedBecause }: JudgedRun): RecordedOutcome {
  return {
    runId: record.runId,
    ...traceOf(record, verdict),
    verdict,
    ...(record.error === undefined ? {} : { code: record.error.code, message: record.error.message }),
    startedAt: record.startedAt,
    ...(record.durationMs === undefined ? {} : { durationMs: record.durationMs }),
    ...(record.rows === undefined ? {} : { rows: record.rows }),
    ...(killedBecause === undefined ? {} : { killedBecause }),
  };
}

/** The outcome that speaks for a sharded backfill: the first of these any shard had, else ok. */
const SHARD_OUTCOME_ORDER: readonly RunVerdict[] = ['partial', 'killed', 'failed', 'refused', 'stopped', 'running'];

/**
 * The records of the newest backfill's run: the newest of each shard (a pod retried by its Job
 * writes another), by shard index; an unsharded backfill's one record.
 */
async function shardRecordsOf(newest: JudgedRun, history: JobHistory): Promise<JudgedRun[]> {
  const newestPerShard = new Map<number, JudgedRun>();
  for (const judged of await history.findAll(newest.record.runId)) {
    if (judged.record.trigger !== 'backfill') continue;
    const index = judged.shard?.index ?? -1;
    if (!newestPerShard.has(index)) newestPerShard.set(index, judged);
  }
  const shards = [...newestPerShard.entries()].sort(([a], [b]) => a - b).map(([, judged]) => judged);
  return shards.length === 0 ? [newest] : shards;
}

function lastBackfillOf(shards: readonly JudgedRun[], job: LoadedJob, fixFlags: readonly string[]): LastBackfill {
  const decisive =
    SHARD_OUTCOME_ORDER.map((verdict) => shards.find((judged) => judged.verdict === verdict)).find((judged) => judged !== undefined) ?? shards[0]!;
  const ranges = shards.flatMap(({ record }) => (record.backfill === undefined ? [] : [record.backfill]));
  const range = ranges[0] ?? { from: '?', to: '?', step: 'day', windows: 0 };
  const count = shards.find((judged) => judged.shard !== undefined)?.shard?.count;
  const failed = shards.flatMap(({ record }) => record.failedWindows ?? []).sort((a, b) => a.from.localeCompare(b.from));
  const durations = shards.map(({ record }) => record.durationMs);
  const rows = shards.flatMap(({ record }) => (record.rows === undefined ? [] : [record.rows]));
  // The decisive shard's outcome; the time and rows are every shard's.
  const { durationMs: _decisiveDuration, rows: _decisiveRows, ...outcome } = outcomeOf(decisive);
  return {
    ...outcome,
    startedAt: shards.map(({ record }) => record.startedAt).sort()[0]!,
    // Shards run side by side: the backfill took as long as its longest shard.
    ...(durations.every((ms) => ms !== undefined) ? { durationMs: Math.max(...durations) } : {}),
    ...(rows.length === 0 ? {} : { rows: rows.reduce((sum, value) => sum + value, 0) }),
    from: range.from,
    to: range.to,
    step: range.step,
    windows: ranges.reduce((sum, described) => sum + described.windows, 0),
    ...(count === undefined ? {} : { shards: { count, recorded: shards.flatMap((judged) => (judged.shard === undefined ? [] : [judged.shard.index])) } }),
    ...(failed.length === 0
      ? {}
      : {
          failedWindows: failed,
          // The commands the backfill itself printed for them (presentation/window-lines.ts's rerunCommands).
          rerun: contiguous(failed).map((window) =>
            ['tilehouse backfill', '--job', job.name, '--from', window.from, '--to', window.to, '--step', range.step, ...fixFlags].join(' '),
          ),
        }),
  };
}

/**
 * The job run again, here and on the cluster (the CronJob `tilehouse k8s` names). An incremental
 * job's run catches up every day since the last one its targets hold, so the same command repairs
 * just what is missing. A refusal is not repaired by running again: the override is the fix only
 * if the change is meant.
 */
function repairOf(
  job: LoadedJob,
  fixFlags: readonly string[],
  verdict: RunVerdict | undefined,
  failedWindows: ReadonlyArray<{ from: string; to: string }> | undefined,
): JobMorning['repair'] {
  const flags = [...fixFlags, '--job', job.name].join(' ');
  const here = `tilehouse run ${flags}`;
  const cluster = clusterRerunOf(job);
  if (verdict === 'refused')
    return {
      note: 'a run again is refused again; if the change is meant, publish it with --allow-shrink (TILEHOUSE_ALLOW_SHRINK=1 on the cluster)',
      commands: [`${here} --allow-shrink`],
    };
  // The day windows the last run failed, each run of adjacent days as one backfill: just what is
  // missing, and --resume skips a day a sink shows done (another run may have published it since).
  if (job.incremental !== undefined && failedWindows !== undefined && failedWindows.length > 0)
    return {
      note: 'the day windows the last run failed; --resume skips those every sink shows done',
      commands: [...contiguous(failedWindows).map((range) => `tilehouse backfill ${flags} --from ${range.from} --to ${range.to} --resume`), cluster],
    };
  return {
    ...(job.incremental === undefined ? {} : { note: 'the run catches up every day since the last one its targets hold' }),
    commands: [here, cluster],
  };
}

/** Windows, oldest first, with adjacent ones joined: `[07-01, 07-02) [07-02, 07-03)` is `[07-01, 07-03)`. */
function contiguous(windows: ReadonlyArray<{ from: string; to: string }>): Array<{ from: string; to: string }> {
  const ranges: Array<{ from: string; to: string }> = [];
  for (const window of [...windows].sort((a, b) => a.from.localeCompare(b.from))) {
    const last = ranges.at(-1);
    if (last !== undefined && last.to === window.from) last.to = window.to;
    else ranges.push({ from: window.from, to: window.to });
  }
  return ranges;
}
