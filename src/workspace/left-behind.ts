import path from 'node:path';
import type { LoadedJob } from '../config/load-config.js';
import { messageOf } from '../errors.js';
import { openLineageRunIds } from '../history/killed-runs.js';
import { readJobHistory, type JudgedRun, type RunVerdict } from '../history/read-history.js';
import { recordNameOf, type RunRecord } from '../history/run-record.js';
import type { Logger } from '../log.js';
import { jobForRun } from '../pipeline/windows/windowed-job.js';
import { buildSinks } from '../sinks/build-sinks.js';
import type { StoredDocuments } from '../sinks/registry.js';
import type { Leftover, Sink } from '../sinks/sink.js';
import type { Workspace } from './load-workspace.js';
import type { RunSeams } from './run-context.js';

/**
 * What `status` says a run that did not end well left behind, beyond what its record named at its
 * end (`left behind:` of the run summary, kept in the record's `leftBehind`): a killed run's own
 * (its record, still "running"; each OpenLineage run it left open), and what lies where each sink
 * writes, found by looking (Sink.leftovers: temp files and objects, staging tables, a table's
 * files no snapshot references), each with how it goes away. A look that fails is named as not
 * checked, with why; a kind that does not look is named too. Looked for only after a last run that
 * did not end well: a good morning costs no listing.
 */
export interface LeftBehind {
  items: Leftover[];
  /** Where it could not be looked: the sink, the place, why. */
  unchecked: Array<{ sink: string; where: string; reason: string }>;
}

const LOOKED_AFTER: ReadonlySet<RunVerdict> = new Set(['failed', 'refused', 'stopped', 'partial', 'killed']);

/** A killed run's trace id is given only when the record knows a span of it reached the collector (run-record.ts's `spansExportedAt`). */
export function traceOf(record: RunRecord, verdict: RunVerdict): { traceId?: string; noSpansExported?: true } {
  if (record.traceId === undefined) return {};
  if (verdict === 'killed' && record.spansExportedAt === null) return { noSpansExported: true };
  return { traceId: record.traceId };
}

/** The job's last run, or a backfill newer than it, did not end well: what it left, by its record and by looking. */
export async function leftBehindOf(
  workspace: Workspace,
  job: LoadedJob,
  documents: StoredDocuments,
  options: { seams: RunSeams; logger: Logger },
): Promise<LeftBehind | undefined> {
  const last = (await readJobHistory(documents, job.name, { newest: 1, where: (record) => record.trigger !== 'backfill' })).latest[0];
  // A backfill newer than the last run (`status`'s `last backfill:`) is looked after too.
  const backfill = (await readJobHistory(documents, job.name, { newest: 1, where: (record) => record.trigger === 'backfill' })).latest[0];
  const shown = [last, backfill !== undefined && (last === undefined || backfill.record.startedAt > last.record.startedAt) ? backfill : undefined].filter(
    (judged): judged is JudgedRun => judged !== undefined && LOOKED_AFTER.has(judged.verdict),
  );
  if (shown.length === 0) return undefined;
  const { location, keepPerJob } = workspace.environment.history;
  // A relative directory is the environment file's, as the history opens it (run-history.ts): said whole.
  const place = location.includes('://') || path.isAbsolute(location) ? location : path.resolve(path.dirname(workspace.configFile), location);
  const items = shown.flatMap((judged) => (judged.verdict === 'killed' ? killedRunsOwn(judged, { location: place, keepPerJob }) : []));
  const unchecked: LeftBehind['unchecked'] = [];
  let sinks: Sink[];
  try {
    sinks = await buildSinks(jobForRun(job), workspace.environment, options.seams.sinkOptions);
  } catch (error) {
    return { items, unchecked: [{ sink: 'every sink', where: `job ${job.name}`, reason: messageOf(error) }] };
  }
  for (const sink of sinks) {
    if (sink.leftovers === undefined) {
      unchecked.push({
        sink: sink.kind,
        where: `job ${job.name}`,
        reason: `a ${sink.kind} sink does not look for what runs leave (what its run named is above)`,
      });
      continue;
    }
    const survey = await sink.leftovers({ jobName: job.name, logger: options.logger });
    // What the run's record already names (its `left behind:` line) is not said twice.
    const named = last?.record.leftBehind ?? [];
    if ('unchecked' in survey) unchecked.push({ sink: sink.kind, where: survey.where, reason: survey.unchecked });
    else items.push(...survey.found.filter((found) => !named.some((text) => text.includes(found.what)) && !items.some((known) => known.what === found.what)));
  }
  return items.length === 0 && unchecked.length === 0 ? undefined : { items, unchecked };
}

/** A killed run's own: its record, which stays "running", and each lineage run it left open. */
function killedRunsOwn({ record, shard }: JudgedRun, history: { location: string; keepPerJob: number }): Leftover[] {
  const name = recordNameOf({ startedAt: record.startedAt, runId: record.runId, shard });
  const items: Leftover[] = [
    {
      what: `its record ${history.location.replace(/\/+$/, '')}/${record.job}/${name}, still "running"`,
      goes: `kept as the history's account of the kill; it goes with the job's oldest records once history.keepPerJob (${history.keepPerJob}) newer ones are kept`,
    },
  ];
  const lineage = record.lineage;
  for (const runId of lineage === undefined ? [] : openLineageRunIds(record))
    items.push({
      what: `OpenLineage run ${runId} of ${lineage!.namespace} ${lineage!.job}, open (its START has no end: a catalog shows it running)`,
      goes: 'the next run of the job with lineage on closes it with a FAIL of its own',
    });
  return items;
}
