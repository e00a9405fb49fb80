import type { LoadedJob } from '../config/load-config.js';
import { fieldLineOf } from '../config/read-yaml.js';
import { NAMESPACE } from '../deploy/deploy-settings.js';
import { cronJobName } from '../deploy/job-manifests.js';
import { changesSince, type ValueChange } from '../history/definition-diff.js';
import { type JudgedRun, readJobHistory } from '../history/read-history.js';
import type { StoredDocuments } from '../sinks/registry.js';
import { exportRefusalOf } from '../source/export-endpoint/index.js';

/** Something to fix in the job's file before running it again: an edit to undo, or a tile id the source refuses. */
export type JobFix =
  | {
      kind: 'undo';
      /** The part of the definition as `status` names it (`filters on Number`, `tile`, `sinks`). */
      part: string;
      file: string;
      /** Where the part's value is in the file (its key's line); absent: not found there. */
      line?: number;
      /** The value now and the one the run `sinceRunId` ran with (canonical JSON); absent: the part is new, or was removed. */
      now?: string;
      was?: string;
      sinceRunId: string;
    }
  | {
      kind: 'tile';
      file: string;
      line?: number;
      /** The tile id the job names, which the source refused. */
      tile: string;
      /** The source's answer: `HTTP 400: invalid id`. */
      refusal: string;
      /** The run that last published, and the tile id it ran with, when it differs from this one. */
      published?: { runId: string; tile: string };
    };

/** The commands that repair a job, as `status` prints them (and `--json` gives them). */
export interface Repair {
  /** What to fix in the job first, when running it unchanged would fail (or be refused) again. */
  fixFirst?: JobFix[];
  /** The commands that run the job again, here and on the cluster (after `fixFirst`). */
  commands: string[];
  note?: string;
  /** A refusal that the edit may have meant: the run that publishes the smaller export over the guard. */
  ifMeant?: { command: string; note: string };
}

/** A job run again on the cluster: a Job from the CronJob `tilehouse k8s` names. */
export function clusterRerunOf(job: Pick<LoadedJob, 'name'>): string {
  const cronJob = cronJobName(job.name);
  return `kubectl create job -n ${NAMESPACE} --from=cronjob/${cronJob} ${cronJob}-$(date +%s)`;
}

/**
 * The repair that fixes first. Running a job again repairs a run that failed on its own (a
 * permission since granted, a source that was down); it does not repair a run the publish guard
 * refused after the job was edited (it is refused again, and `--allow-shrink` would publish the
 * smaller export over the good rows), nor one whose tile the source refuses (it fails again). For
 * those the edit comes first: each value changed since the run that last published, as it is now
 * and as it was, with the job file's line; then the run; the override only "if the change is
 * meant". A refusal with nothing changed in the job, and every other failure, keep `base`.
 */
export async function repairFixingFirst(
  job: LoadedJob,
  base: Repair,
  context: {
    last: JudgedRun;
    /** What changed since the run that wrote the targets (`status`'s block), when a target named that run. */
    changes: { sinceRunId: string; values: ValueChange[] } | undefined;
    documents: StoredDocuments;
    fixFlags: readonly string[];
  },
): Promise<Repair> {
  const { last } = context;
  const error = last.record.error;
  const refusal = last.verdict === 'failed' && error?.code === 'export_api_error' ? exportRefusalOf(error.message) : undefined;
  if (last.verdict !== 'refused' && refusal === undefined) return base;
  const changes = nonEmpty(context.changes) ?? (await changesSinceLastPublished(job, context.documents));
  const undo = changes === undefined ? [] : await Promise.all(changes.values.map((change) => undoOf(job, change, changes.sinceRunId)));
  if (refusal === undefined) {
    if (undo.length === 0) return base;
    // The refused run's repair was the override alone: the run comes back, the override goes last.
    const here = ['tilehouse run', ...context.fixFlags, '--job', job.name].join(' ');
    return {
      fixFirst: undo,
      commands: [here, clusterRerunOf(job)],
      ifMeant: { command: `${here} --allow-shrink`, note: 'publishes the smaller export over what the targets hold (TILEHOUSE_ALLOW_SHRINK=1 on the cluster)' },
    };
  }
  // The spec's answer to a tile id the source does not have is 400 "invalid id"; another refusal
  // (of the query) names the tile only when the tile id is what changed.
  const tileChange = undo.find((fix) => fix.part === 'tile');
  const rest = undo.filter((fix) => fix !== tileChange);
  const fixes: JobFix[] = [];
  if (refusal.apiMessage === 'invalid id' || tileChange !== undefined) {
    const line = await fieldLineOf(job.file, ['tile']);
    const was = tileChange?.was === undefined ? undefined : (JSON.parse(tileChange.was) as string);
    fixes.push({
      kind: 'tile',
      file: job.file,
      ...(line === undefined ? {} : { line }),
      tile: job.tile,
      refusal: `HTTP ${refusal.status}: ${refusal.apiMessage}`,
      ...(was === undefined ? {} : { published: { runId: tileChange!.sinceRunId, tile: was } }),
    });
  }
  fixes.push(...rest);
  // Then the run the job would have had: an incremental job's backfill of its failed days stays.
  return fixes.length === 0 ? base : { fixFirst: fixes, ...base };
}

function nonEmpty(changes: { sinceRunId: string; values: ValueChange[] } | undefined) {
  return changes === undefined || changes.values.length === 0 ? undefined : changes;
}

/**
 * What changed since the job's last run that succeeded, from its record: the run that published
 * the targets of a job that is not windowed (a run publishes all its sinks or none), for a target
 * that does not say which run wrote it (a file without a manifest). A windowed job's runs publish
 * windows, each with a definition of its own: not guessed.
 */
async function changesSinceLastPublished(job: LoadedJob, documents: StoredDocuments): Promise<{ sinceRunId: string; values: ValueChange[] } | undefined> {
  if (job.incremental !== undefined) return undefined;
  const published = await readJobHistory(documents, job.name, { newest: 1, where: (record) => record.state === 'succeeded' && record.trigger !== 'backfill' });
  const record = published.latest[0]?.record;
  if (record === undefined) return undefined;
  return nonEmpty({ sinceRunId: record.runId, values: changesSince(record, job) });
}

async function undoOf(job: LoadedJob, change: ValueChange, sinceRunId: string): Promise<Extract<JobFix, { kind: 'undo' }>> {
  const at = fieldPathOf(change.part, job);
  const line = at === undefined ? undefined : await fieldLineOf(job.file, at);
  return {
    kind: 'undo',
    part: change.part,
    file: job.file,
    ...(line === undefined ? {} : { line }),
    ...(change.new === undefined ? {} : { now: change.new }),
    ...(change.old === undefined ? {} : { was: change.old }),
    sinceRunId,
  };
}

/**
 * Where a part of the definition is in the job file, from the name `status` gives it
 * (value-types/job-definition.ts's partName): an item by its header (`Number#2`: the third item,
 * when two share a header). The source settings are several fields: no one line.
 */
function fieldPathOf(part: string, job: LoadedJob): Array<string | number> | undefined {
  const item = /^(?:filters on|item) (.+)$/.exec(part);
  if (item !== null) {
    const byHeader = job.query.items.findIndex((candidate) => candidate.header === item[1]);
    const byPlace = /#(\d+)$/.exec(item[1]!);
    const index = byHeader >= 0 ? byHeader : byPlace !== null ? Number(byPlace[1]) : -1;
    if (index < 0 || index >= job.query.items.length) return undefined;
    return part.startsWith('filters on') ? ['query', 'items', index, 'filters'] : ['query', 'items', index];
  }
  const fields: Record<string, Array<string | number>> = { tile: ['tile'], 'query options': ['query', 'options'], columns: ['columns'], sinks: ['sinks'] };
  return fields[part];
}
