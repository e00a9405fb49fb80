import { z } from 'zod';

/**
 * One run of one job as the run history keeps it: a document of its own per run
 * (`<job>/<started>_<run id>.json`, a backfill shard's `…~shard-<i>-of-<n>.json`: recordNameOf),
 * written "running" when the run starts and replaced whole when it ends, so that concurrent runs
 * never rewrite each other's records and a run killed between the two leaves a "running" record
 * that its owner or its heartbeat shows dead.
 *
 * It holds what the morning asks and nothing secret: the outcome, its code and message, the run
 * and trace ids, when and how long, what each target took, what the run left behind, where its
 * time went, and the job's definition as it ran, part by part (value-types/job-definition.ts:
 * the job file's values; credentials are never in them). Read back, it is untrusted (another
 * version, a hand edit): this schema is its one gate.
 */
export const RUN_RECORD_VERSION = 1;

/** How often a running run rewrites its records' `heartbeatAt`: a reader on another host judges a silent one dead after STALE_AFTER_MS (read-history.ts). */
export const HEARTBEAT_MS = 60_000;

const windowSchema = z.object({ from: z.string(), to: z.string() });

/** A target a run published to; a day window's (a backfill's, an incremental run's) names its window (`to` exclusive). */
const targetSchema = z.object({ sink: z.string(), target: z.string(), rows: z.number(), window: windowSchema.optional() });

export const runRecordSchema = z.object({
  version: z.literal(RUN_RECORD_VERSION),
  job: z.string(),
  tile: z.string(),
  runId: z.string(),
  /** `running` until the run ends; then what the run summary said of the job. */
  state: z.enum(['running', 'succeeded', 'failed', 'partially_published']),
  /** What started the run: a `run` (a CronJob's pod runs one), a tick of `schedule`, a `backfill` (by hand, or a shard of an Indexed Job). */
  trigger: z.enum(['run', 'schedule', 'backfill']),
  /** A backfill: the range it was asked for, its step, how many windows this process ran (its shard's, when sharded). */
  backfill: z
    .object({
      from: z.string(),
      to: z.string(),
      step: z.string(),
      windows: z.number(),
      shard: z.object({ index: z.number(), count: z.number() }).optional(),
    })
    .optional(),
  startedAt: z.string(),
  /** The last time the running process said it was alive (written at start and every HEARTBEAT_MS). */
  heartbeatAt: z.string(),
  /**
   * When the run began to publish (phase 2: every sink prepared, the guards passed), written before
   * the first target changed; only for a run id given by the caller, which a retried pod reuses.
   * A killed try without it never published: its retry need not ask what it left.
   */
  publishingAt: z.string().optional(),
  finishedAt: z.string().optional(),
  durationMs: z.number().optional(),
  /** The process that wrote it (src/temp-owner.ts's tag): a running record whose owner is gone was killed. */
  owner: z.string(),
  traceId: z.string().optional(),
  /**
   * Telemetry on (a trace id recorded): when the collector last accepted a span of the run's trace,
   * as of this record's last write (the first acceptance is written at once, later ones with the
   * heartbeat); null: none yet, so a run killed then has no span to find. Absent on a record of a
   * version that did not keep it: unknown.
   */
  spansExportedAt: z.string().nullable().optional(),
  /** Lineage on: the OpenLineage job its events name and the run id of each try (one per tile run: an incremental job's windows, several), to find them in a catalog. */
  lineage: z.object({ namespace: z.string(), job: z.string(), runIds: z.array(z.string()) }).optional(),
  /** A killed run's lineage runs, left open, closed by a later run of the job with a FAIL of its own (history/killed-runs.ts): once. */
  lineageClosed: z.object({ eventType: z.literal('FAIL'), at: z.string(), byRunId: z.string(), runIds: z.array(z.string()) }).optional(),
  error: z.object({ code: z.string(), message: z.string() }).optional(),
  rows: z.number().optional(),
  pages: z.number().optional(),
  /** The targets this run published to, with their rows. */
  targets: z.array(targetSchema).default([]),
  /** A failed run: the targets it opened and did not publish to. */
  attempted: z.array(z.string()).optional(),
  /** Targets that still hold the previous run, hold neither whole, or may hold either (a partial publish). */
  unpublished: z.array(z.string()).optional(),
  mixed: z.array(z.string()).optional(),
  outcomeUnknown: z.array(z.string()).optional(),
  /** A run of day windows (a backfill's, an incremental job's): every window it ran (`to` exclusive), oldest first; `failedWindows` says which did not succeed. */
  windows: z.array(windowSchema).optional(),
  /** An incremental job's run or a backfill: the day windows (`to` exclusive) that did not succeed, oldest first, for the repair command. */
  failedWindows: z.array(windowSchema).optional(),
  /** What the cleanup could not remove (staging tables, temp objects), by name. */
  leftBehind: z.array(z.string()).optional(),
  /** Where the time went, in milliseconds, by name (source, reading, each sink's prepare and publish). */
  timings: z.record(z.string(), z.number()).optional(),
  /** The job's definition as it ran: its fingerprint, and each part's value under the fingerprint's part names. */
  definition: z.object({
    fingerprint: z.string(),
    tile: z.string(),
    values: z.record(z.string(), z.unknown()),
  }),
});

export type RunRecord = z.infer<typeof runRecordSchema>;

/** A shard of a backfill run as an Indexed Job's pods run it: its index (0-based) of how many. */
export interface BackfillShard {
  index: number;
  count: number;
}

/**
 * `<started, compact>_<run id>.json`: names sort by start whatever a --run-id looks like. A shard's
 * record ends `~shard-<index>-of-<count>`: the pods of an Indexed Job share the run id (the Job's
 * name) and start together, and one record must not overwrite another's. `~` is no run id's.
 */
export function recordNameOf(record: { startedAt: string; runId: string; shard?: BackfillShard | undefined }): string {
  const shard = record.shard === undefined ? '' : `~shard-${record.shard.index}-of-${record.shard.count}`;
  return `${record.startedAt.replace(/[-:]/g, '')}_${record.runId}${shard}.json`;
}

const RECORD_NAME = /^[0-9T.Z]+_(.+?)(?:~shard-(\d+)-of-(\d+))?\.json$/;

/** The run id a record's name carries. */
export function runIdOfRecordName(name: string): string | undefined {
  return RECORD_NAME.exec(name)?.[1];
}

/** The backfill shard a record's name carries: known from its first write, before its range is. */
export function shardOfRecordName(name: string): BackfillShard | undefined {
  const match = RECORD_NAME.exec(name);
  return match?.[2] === undefined ? undefined : { index: Number(match[2]), count: Number(match[3]) };
}
