import type { LoadedJob } from '../config/load-config.js';
import { lineage } from '../lineage/lineage.js';
import type { StoredDocuments } from '../sinks/registry.js';
import { readJobHistory } from './read-history.js';
import { recordNameOf, type RunRecord } from './run-record.js';

/**
 * A killed run's lineage, closed by the next run of its job: a try killed between its START and
 * its terminal event (SIGKILL, an evicted pod, a lost node) leaves an OpenLineage run that a
 * catalog shows running forever. The next run of the job (`run`, a `schedule` tick, `backfill`)
 * with lineage on finds its "running" record judged killed among the job's newest records, sends
 * a FAIL for each run id it recorded (lineage.ts's `closeAbandoned`), and writes the record again
 * with `lineageClosed`, so no later run sends it twice. Not `status`: it reads and writes nothing,
 * and may run without the transport the run had.
 */

/** How many of a job's newest records are looked through: the run after a kill closes its lineage, so it is among them. */
const KILLED_LOOK_BACK = 10;

/** The OpenLineage run ids of a killed record that no run has closed yet. */
export function openLineageRunIds(record: RunRecord): string[] {
  const closed = new Set(record.lineageClosed?.runIds ?? []);
  return (record.lineage?.runIds ?? []).filter((runId) => !closed.has(runId));
}

/**
 * Closes the open lineage runs of the job's killed records; returns the OpenLineage run ids it
 * closed. A FAIL the transport did not take stays open for the next run; a record that could not
 * be written again is closed again by the next run (a second FAIL, which a catalog ignores).
 */
export async function closeKilledLineage(
  documents: StoredDocuments,
  job: Pick<LoadedJob, 'name' | 'tile'>,
  options: { sourceUrl: string; byRunId: string; write: (record: RunRecord, name: string) => Promise<void> },
): Promise<string[]> {
  if (!lineage().enabled) return [];
  const history = await readJobHistory(documents, job.name, { newest: KILLED_LOOK_BACK });
  const closed: string[] = [];
  for (const judged of history.latest) {
    const { record } = judged;
    if (judged.verdict !== 'killed') continue;
    const open = openLineageRunIds(record);
    if (open.length === 0) continue;
    const accepted: string[] = [];
    for (const lineageRunId of open) {
      const sent = await lineage().closeAbandoned({
        job: job.name,
        tile: record.tile,
        runId: record.runId,
        lineageRunId,
        sourceUrl: options.sourceUrl,
        killedBecause: judged.killedBecause ?? 'its process ended without saying',
        closedBy: options.byRunId,
      });
      if (sent) accepted.push(lineageRunId);
    }
    if (accepted.length === 0) continue;
    closed.push(...accepted);
    const lineageClosed = {
      eventType: 'FAIL' as const,
      at: new Date().toISOString(),
      byRunId: options.byRunId,
      runIds: [...(record.lineageClosed?.runIds ?? []), ...accepted],
    };
    // The record stays "running" with its owner: `status` still judges it killed, and says who closed its lineage.
    await options.write({ ...record, lineageClosed }, recordNameOf({ startedAt: record.startedAt, runId: record.runId, shard: judged.shard }));
  }
  return closed;
}
