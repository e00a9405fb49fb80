import { mapWithConcurrency } from '../map-with-concurrency.js';
import type { StoredDocuments } from '../sinks/registry.js';
import { ownerState, parseOwnerTag } from '../temp-owner.js';
import { type BackfillShard, HEARTBEAT_MS, runIdOfRecordName, runRecordSchema, type RunRecord, shardOfRecordName } from './run-record.js';

/**
 * A "running" record whose heartbeat is older than this, written on another host (another pod),
 * is a run that was killed: a live run rewrites it every HEARTBEAT_MS.
 */
export const STALE_AFTER_MS = 5 * HEARTBEAT_MS;

/**
 * A run's outcome as the morning reads it: `ok`; `failed` (with its code); `refused` (a publish
 * guard); `stopped` (SIGTERM, SIGINT); `partial` (some sinks hold it); `running`; `killed` (a
 * "running" record whose process is gone or silent: SIGKILL, an evicted pod, a lost node).
 */
export type RunVerdict = 'ok' | 'failed' | 'refused' | 'stopped' | 'partial' | 'running' | 'killed';

export interface JudgedRun {
  record: RunRecord;
  verdict: RunVerdict;
  /** Why a "running" record is judged killed: its process is gone, or it has been silent since a time. */
  killedBecause?: string;
  /** A backfill shard's record: which shard, as its name says. */
  shard?: BackfillShard;
}

/** The verdict on one record, at `now` on this machine's clock (the heartbeat's). */
export function judgeRun(record: RunRecord, now: number = Date.now()): JudgedRun {
  switch (record.state) {
    case 'succeeded':
      return { record, verdict: 'ok' };
    case 'partially_published':
      return { record, verdict: 'partial' };
    case 'failed': {
      const code = record.error?.code;
      return {
        record,
        verdict: code === 'publish_guard_tripped' ? 'refused' : code === 'run_stopped' || code === 'stop_deadline_passed' ? 'stopped' : 'failed',
      };
    }
    case 'running': {
      const owner = parseOwnerTag(record.owner);
      const state = owner === undefined ? 'unknown' : ownerState(owner);
      if (state === 'gone') return { record, verdict: 'killed', killedBecause: `its process (pid ${owner!.pid} on ${owner!.host}) is gone` };
      if (state === 'unknown' && now - Date.parse(record.heartbeatAt) > STALE_AFTER_MS)
        return { record, verdict: 'killed', killedBecause: `silent since ${record.heartbeatAt}` };
      return { record, verdict: 'running' };
    }
  }
}

/** The newest records of one job, and any other the caller names by run id. */
export interface JobHistory {
  /** Newest first: the last run, then the one before (up to the count asked for). */
  latest: JudgedRun[];
  /** The record of a run id, when the history still keeps it. */
  find(runId: string): Promise<JudgedRun | undefined>;
  /** Every record of a run id, newest first: a backfill's shards (and their pods' retries) each keep one. */
  findAll(runId: string): Promise<JudgedRun[]>;
  /** Every record the history keeps of the job, newest first (read HISTORY_READS at a time; each document once). */
  all(): Promise<JudgedRun[]>;
}

/** Documents read at once by `all`: a bucket's GETs side by side, few enough for any store. */
const HISTORY_READS = 8;

/**
 * Reads a job's history: its `newest` records (those `where` accepts, when given), judged; older
 * ones on request. A record that does not parse is skipped.
 */
export async function readJobHistory(
  documents: StoredDocuments,
  job: string,
  options: { newest: number; now?: number; where?: (record: RunRecord) => boolean },
): Promise<JobHistory> {
  const names = (await documents.list(job))
    .filter((name) => runIdOfRecordName(name) !== undefined)
    .sort()
    .reverse();
  const readDocument = async (name: string): Promise<JudgedRun | undefined> => {
    const text = await documents.get(`${job}/${name}`);
    if (text === undefined) return undefined;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return undefined;
    }
    const record = runRecordSchema.safeParse(parsed);
    if (!record.success) return undefined;
    const shard = shardOfRecordName(name) ?? record.data.backfill?.shard;
    return { ...judgeRun(record.data, options.now), ...(shard === undefined ? {} : { shard }) };
  };
  // Each document is fetched once: `findAll` reads the newest records again (a bucket's GET each).
  const reads = new Map<string, Promise<JudgedRun | undefined>>();
  const read = (name: string): Promise<JudgedRun | undefined> => {
    if (!reads.has(name)) reads.set(name, readDocument(name));
    return reads.get(name)!;
  };
  const latest: JudgedRun[] = [];
  for (const name of names) {
    if (latest.length >= options.newest) break;
    const judged = await read(name);
    if (judged !== undefined && (options.where?.(judged.record) ?? true)) latest.push(judged);
  }
  return {
    latest,
    async find(runId) {
      const kept = latest.find((judged) => judged.record.runId === runId);
      if (kept !== undefined) return kept;
      const name = names.find((candidate) => runIdOfRecordName(candidate) === runId);
      return name === undefined ? undefined : read(name);
    },
    async findAll(runId) {
      const found = await Promise.all(names.filter((name) => runIdOfRecordName(name) === runId).map(read));
      return found.filter((judged) => judged !== undefined);
    },
    async all() {
      const found = await mapWithConcurrency(names, HISTORY_READS, read);
      return found.filter((judged) => judged !== undefined);
    },
  };
}
