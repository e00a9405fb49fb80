import type { LineageDatasetName } from '../sinks/lineage-dataset-name.js';
import type { SinkResult, StoredSchema } from '../sinks/sink.js';

type SinkKindName = SinkResult['sink'];

/**
 * The one small interface the pipeline reports tile runs to for OpenLineage (docs/lineage.md), as
 * it reports spans to telemetry: `lineage()` answers the no-op below unless a command opened
 * lineage (open-lineage.ts), whose implementation (events, transports) is imported only then:
 * off, a tile run costs two function calls and loads nothing.
 *
 * The folder, module by module: `lineage-settings.ts` (the clients' OPENLINEAGE_* variables, the
 * OPENLINEAGE_CONFIG YAML and the environment's `lineage:` section, `config/lineage-schema.ts`, read
 * without loading the rest; `lineage_config_invalid`), `open-lineage.ts` (the no-op, or the emitter
 * by a dynamic import), `openlineage-emitter.ts` (events sent in order in the background; one
 * warning; the exit's wait bounded by the transport's timeout), `run-events.ts` (the RunEvents and
 * their facets, checked against `schema/openlineage/`), `run-uuid.ts` (a fresh UUIDv7 for each try),
 * `lineage-transport.ts` (what a transport is, the POST they share), `transport-of.ts` (http, file,
 * console; Google's loaded only when asked for), `google-lineage-transport.ts` (Data Lineage's
 * `processOpenLineageRunEvent` with the sinks' Google credentials, its 5 MB limit).
 */

/** What a tile run is when it starts: enough to name its run, job and input. */
export interface LineageTileStart {
  job: string;
  tile: string;
  /** The tilehouse run id of this tile run (a window's own, derived from its backfill's). */
  runId: string;
  /** The tenant (`source.baseUrl`): the input dataset's namespace is its origin. */
  sourceUrl: string;
  startedAt: Date;
  /** A backfill's or an incremental run's day window (`to` exclusive) in the job's timezone. */
  window?: { from: string; to: string } | undefined;
  timezone: string;
}

/** What a tile run did, as the pipeline's JobRunSummary has it (the fields lineage reads). */
export interface LineageTileEnd {
  status: 'succeeded' | 'failed' | 'partially_published';
  rows: number;
  columns: ReadonlyArray<{ name: string; header: string; type: string }>;
  outputs: ReadonlyArray<{ sink: SinkKindName; target: string; rows: number; details?: Readonly<Record<string, string | number | boolean>> | undefined }>;
  /** Every writer the run opened (its sink kind and target), published or not. */
  opened: ReadonlyArray<{ sink: SinkKindName; target: string; dataset?: LineageDatasetName; schema?: StoredSchema }>;
  bigqueryJobIds: readonly string[];
  /**
   * A run that did not succeed: the target each of the job's sinks would write, named before it
   * opened (Sink.plannedDataset), or why the sink cannot name it; a FAIL or ABORT names those the
   * run did not open. Absent for a run that succeeded.
   */
  planned?: ReadonlyArray<{ sink: SinkKindName; dataset: LineageDatasetName } | { sink: SinkKindName; unknown: string }> | undefined;
  error?: { code: string; message: string } | undefined;
  guard?:
    | {
        tripped: boolean;
        overridden: boolean;
        verdicts: ReadonlyArray<{
          target: string;
          verdict: string;
          rule?: string | undefined;
          reason?: string | undefined;
          /** Rows the target held (of what a publish replaces), or the recent runs' median. */
          held?: number | undefined;
          /** Rows this export brought. */
          exported?: number | undefined;
          /** The setting that lets a refused publish pass. */
          setting?: string | undefined;
          /** The run that wrote the target, and what changed in the job's definition since. */
          changedSince?: { runId: string; changes: ReadonlyArray<{ part: string; details?: readonly string[] | undefined }> } | undefined;
        }>;
      }
    | undefined;
}

/** Where a catalog finds a try: its OpenLineage run id, under the job (namespace and name) its events name. */
export interface LineageRunRef {
  namespace: string;
  job: string;
  runId: string;
}

/** One tile run as an OpenLineage run: START sent when it began, one terminal event when it ends. */
export interface LineageTileRun {
  /** The try's OpenLineage run (the runId of its START and terminal event); absent when lineage is off. */
  readonly ref?: LineageRunRef | undefined;
  /** COMPLETE, FAIL, or ABORT when `stopped` (SIGTERM, SIGINT). Sent in the background; never throws. */
  end(result: LineageTileEnd, stopped: boolean): void;
}

/**
 * A try whose process ended between its START and its terminal event (SIGKILL, an evicted pod: the
 * run history judged it killed), as a later run of the same job closes it (docs/lineage.md).
 */
export interface AbandonedTileRun {
  job: string;
  tile: string;
  /** The tilehouse run id of the killed try (a window's own). */
  runId: string;
  /** The OpenLineage run its START opened, which this closes. */
  lineageRunId: string;
  sourceUrl: string;
  /** Why it is known to be dead, for the error message facet: "its process (pid … on …) is gone". */
  killedBecause: string;
  /** The tilehouse run id of the run that closes it. */
  closedBy: string;
}

export interface Lineage {
  readonly enabled: boolean;
  /** Sends START for a tile run (in the background) and returns the run to end. */
  startTile(start: LineageTileStart): LineageTileRun;
  /**
   * Sends FAIL for a killed try's open run, after what is in flight; resolves true once the
   * transport accepted it, false when it did not (or lineage is off). Never throws.
   */
  closeAbandoned(run: AbandonedTileRun): Promise<boolean>;
  /** Waits for the events in flight within a bounded time (the transport's timeout); never throws. */
  shutdown(): Promise<void>;
}

const NO_RUN: LineageTileRun = { end: () => undefined };

/** Lineage off: nothing is built, nothing is sent. */
export const NO_LINEAGE: Lineage = {
  enabled: false,
  startTile: () => NO_RUN,
  closeAbandoned: async () => false,
  shutdown: async () => undefined,
};

/** A START the transport accepted: which tile run (its job and tilehouse run id) opened which OpenLineage run. */
export interface LineageStartSent {
  job: string;
  runId: string;
  ref: LineageRunRef;
}

const startsSent = new Set<(sent: LineageStartSent) => void>();

/**
 * Calls `listener` for every START a transport accepts: the run history keeps each try's
 * OpenLineage run id in its "running" record from then on, so a try killed before its terminal
 * event leaves a record naming the run it left open. Returns the unsubscribe.
 */
export function onLineageStartSent(listener: (sent: LineageStartSent) => void): () => void {
  startsSent.add(listener);
  return () => startsSent.delete(listener);
}

/** @internal The emitter's: a START was accepted. */
export function lineageStartSent(sent: LineageStartSent): void {
  for (const listener of startsSent) {
    try {
      listener(sent);
    } catch {
      // The history's bookkeeping never fails an event.
    }
  }
}

// Process-wide, as telemetry is: the seam is deep in the pipeline (each tile and window run), and
// threading an emitter through every runner would put lineage into the logic it observes.
let active: Lineage = NO_LINEAGE;

/** The process's lineage: OpenLineage once a command opened it, else the no-op. */
export function lineage(): Lineage {
  return active;
}

/** Installs `next` as the process's lineage (open-lineage.ts; tests); returns the previous one. */
export function useLineage(next: Lineage): Lineage {
  const previous = active;
  active = next;
  return previous;
}
