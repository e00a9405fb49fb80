import type { Logger } from 'pino';
import type { SinkConfig } from '../config/job-schema.js';
import type { RetryBudget } from '../retry.js';
import type { Column, TypedRow } from '../transform/column.js';
import type { GuardCheck, GuardVerdict } from './publish-guard.js';
import type { LineageDatasetName } from './lineage-dataset-name.js';
import type { JobDefinition } from '../value-types/job-definition.js';

/**
 * A window as a sink records it. `open`: the window had not ended on the source's clock when its
 * export started (today's, or a later day's), so rows may still arrive for it: a target records it
 * as open, and an incremental run or `backfill --resume` never counts it as held.
 */
export interface SinkWindow {
  from: string;
  to: string;
  open?: boolean;
}

/** What a sink knows about the run it is writing for. */
export interface SinkRunContext {
  /** The job's `name` (file and table names derive from it). */
  jobName: string;
  tileId: string;
  /** Unique per run; lineage columns and temp-file names carry it. */
  runId: string;
  /** When extraction started; `{date}` templates and `_extracted_at` use it. */
  startedAt: Date;
  /** For backfills: the window being written, [from, to) as YYYY-MM-DD in the job's timezone. */
  window?: SinkWindow;
  columns: readonly Column[];
  /** The fingerprint of the job's definition (query, columns, sinks), recorded beside what the run writes (a manifest). */
  definition?: JobDefinition;
  /** The job's schedule, for `plan` to count a day's runs (BigQuery's per-table daily limits). */
  schedule?: { cron: string; timezone: string };
  logger: Logger;
  /** The stop (SIGTERM/SIGINT): aborts every request in flight and every wait of the run. */
  signal?: AbortSignal;
  /** The tile run's retry budget (src/retry.ts), shared with the source: a sink that retries its own requests spends it. */
  retryBudget?: RetryBudget;
}

/** What a sink's access check knows of its caller. */
export interface AccessCheckContext {
  jobName: string;
  logger: Logger;
  signal?: AbortSignal;
  /**
   * A run's check (true) may create what the run would create anyway and readers do not see (an
   * empty BigQuery dataset): whether it may be created is only known by creating it. `tilehouse
   * check`, which writes nothing, only reads (false).
   */
  createMissing?: boolean;
}

/** What a sink reports once its output is visible. Goes into the run summary. */
export interface SinkResult {
  /** The sink's kind (registry.ts). */
  sink: SinkConfig['type'];
  /** File path or `project.dataset.table[$partition]`. */
  target: string;
  /** Rows the target took from this publish: for an adopted earlier publish, what that one wrote. */
  rows: number;
  details?: Record<string, string | number | boolean>;
  /**
   * The target already held a publish of this run id with other rows (a re-run over changed data)
   * and kept it: this run published nothing there. A `warning:` line, a failure under --strict.
   */
  keptEarlierPublish?: boolean;
  /**
   * This run committed nothing here: the target already held a publish of this run id (an
   * earlier try's), and kept it. `rows` is what that publish wrote, when the target says.
   */
  adopted?: boolean;
  /**
   * Rows of this publish that fell in partitions the target's partition expiration had already
   * passed: BigQuery drops them at once, so `rows` does not count them. With a `warning:` line.
   */
  expiredRows?: number;
  /** Lines for the summary's `warning:`s, each naming the target. */
  warnings?: string[];
}

/**
 * A sink writes one tile run, and publishes it in two phases so that a job with several sinks
 * publishes all of them or none:
 *
 * 1. `prepare` does everything that can fail on its own (flush, fsync, upload, a load into a
 *    staging table) without changing what readers of the target see;
 * 2. `publish`, called only once every sink of the run has prepared, makes the run visible in one
 *    short atomic step (a rename, a copy job).
 *
 * Pages arrive strictly in order. `abort` (called on any failure, also after a failed prepare or
 * publish) removes every temporary artefact and, before `publish` succeeded, leaves the previous
 * output untouched. `abort` is idempotent; after a successful publish it does nothing.
 */
export interface SinkWriter {
  /** Where the run goes (file path or `project.dataset.table[$partition]`), for summaries. */
  readonly target: string;
  /**
   * The OpenLineage dataset of the target when the writer knows more of it than its target's
   * text (a PostgreSQL table's server and database); absent: the kind names it from the target
   * (SinkKind.lineage).
   */
  readonly lineageDataset?: LineageDatasetName;
  writeRows(rows: readonly TypedRow[]): Promise<void>;
  prepare(): Promise<void>;
  /**
   * Not cancelled by the run's abort signal: once started, a publish runs to its outcome (within
   * the sink's own bounded waits), so the summary can say what the target holds.
   */
  publish(): Promise<SinkResult>;
  abort(): Promise<void>;
  /**
   * After `abort`: what it could not remove (a staging table, a temp object, a job that may still
   * run), each by name, for the summary. Empty when everything is gone.
   */
  leftBehind?(): string[];
  /**
   * The publish guard of this writer's target (publish-guard.ts), read after `prepare` and before
   * any sink of the tile publishes; absent: the writer has none (a test's sink).
   */
  readonly guard?: GuardCheck;
  /**
   * Whether the target already holds a publish of this run's id (an earlier try's), asked after
   * every sink prepared and before any publishes (pipeline/run-id-held.ts): one answer per run id
   * across the tile's targets. Reads, never writes. Absent: the writer cannot hold an earlier try
   * (a test's sink), as `no`.
   */
  heldRun?(): Promise<RunHeld>;
}

/**
 * What a target says of a run id before the run publishes (SinkWriter.heldRun). `yes`: a publish
 * of it is there, or was (its ledger, its snapshot, its manifest), with the rows it wrote when
 * known; `no`: none is; `unknown`: the target cannot tell (a file no manifest describes), and the
 * run history may (pipeline/run-id-held.ts). `readFrom` says where the answer was read.
 */
export type RunHeld =
  | { held: 'yes'; sink: SinkResult['sink']; target: string; rows?: number; readFrom: string; details?: SinkResult['details'] }
  | { held: 'no'; sink: SinkResult['sink']; target: string; readFrom: string }
  | { held: 'unknown'; sink: SinkResult['sink']; target: string; readFrom: string };

/**
 * A publish error that says its target changed in part before it failed: a sink whose publish is
 * several atomic steps (BigQuery's one copy per partition) may leave some of its target holding
 * the new run and the rest the previous one. Then the run is partially published even when that
 * sink was the first to publish, because its target no longer holds the previous run whole.
 */
export interface PartialPublishFailure {
  readonly partialPublish: true;
}

/**
 * A publish error that says what its target now holds is not known: the request's answer never
 * came, and the target could not be read afterwards (or the stop deadline passed first). Neither
 * "published" nor "previous run still there" may then be said of that target.
 */
export interface PublishOutcomeUnknown {
  readonly publishOutcomeUnknown: true;
}

/** Whether a publish error says its target's outcome is unknown (see PublishOutcomeUnknown). */
export function isPublishOutcomeUnknown(error: unknown): error is PublishOutcomeUnknown {
  return typeof error === 'object' && error !== null && (error as { publishOutcomeUnknown?: unknown }).publishOutcomeUnknown === true;
}

/** Whether a publish error says its target changed in part (see PartialPublishFailure). */
export function isPartialPublish(error: unknown): error is PartialPublishFailure {
  return typeof error === 'object' && error !== null && (error as { partialPublish?: unknown }).partialPublish === true;
}

/** One column as its target stores it: the name there, the type in the target's own terms (`bigint`, `DECIMAL(38,9)`). */
export interface StoredField {
  name: string;
  type: string;
}

/**
 * The columns a target stores for a run's columns, in the target's order (lineage's schema facet
 * and column lineage), or the sentence that says why the kind cannot tell.
 */
export type StoredSchema = { fields: StoredField[] } | { unknown: string };

/**
 * Whether `plan` ran the sink's access check (what `check` verifies: privileges, a read-only
 * server, the target's directory or bucket) and what it said: `checked`, with its note; `refused`,
 * with the error a run would fail with; `not checked`, with why.
 */
export type PlanAccess =
  | { verdict: 'checked'; note?: string }
  | { verdict: 'refused'; code: string; message: string }
  | { verdict: 'not checked'; reason: string };

/** What a run would do to a sink's target, found without writing anything (`tilehouse plan`). */
export interface SinkPlan {
  sink: SinkResult['sink'];
  target: string;
  /** How a run writes the target when that is not the sink's default, e.g. `merge on incident`; shown on the sink's line. */
  mode?: string;
  /** create: no output yet; unchanged: same columns; change: a run would change them; refuse: a run would fail. */
  action: 'create' | 'unchanged' | 'change' | 'refuse';
  /** One line per difference, e.g. `+ resolved_share NUMERIC`, `- Owner`. */
  details: string[];
  /** The publish guard's verdict on a run of the tile's current rows (publish-guard.ts); absent: not judged. */
  guard?: GuardVerdict;
  /** What `check` would say of the target, asked by `plan` too (pipeline/plan-job.ts); absent: a sink planned alone. */
  access?: PlanAccess;
}

/**
 * Which run wrote a target as it is now, as its kind records it (`tilehouse status`): a file's
 * manifest, an object's metadata, the run ledger. `written`: the run is known; `unrecorded`: the
 * target exists but nothing names its run (a local file without a manifest: its modification time
 * and rows only); `none`: no target yet; `unreadable`: it could not be read (`note` says why).
 */
export interface TargetPublication {
  sink: SinkResult['sink'];
  target: string;
  state: 'written' | 'unrecorded' | 'none' | 'unreadable';
  runId?: string;
  /** When that run started (ISO 8601); for `unrecorded`, when the target was last changed. */
  at?: string;
  rows?: number;
  /** The job definition that run recorded (a manifest, the ledger), to say what changed since. */
  definition?: JobDefinition;
  /** Where it was read, for the line: `its manifest`, `object metadata`, `the run ledger`, ... */
  readFrom: string;
  note?: string;
}

/** Something a run left where a sink writes, found by looking (`status`), and how it goes away. */
export interface Leftover {
  /** What and where: `temp file /out/.x.csv.tilehouse-….tmp`, `PostgreSQL staging table public._tilehouse_stage_…`. */
  what: string;
  /** How it goes away: the next run's sweep, a table's housekeeping, a command. */
  goes: string;
}

/** What looking where a sink writes found (`where`: the directory, prefix, schema or table looked in), or why it could not look. */
export type LeftoverSurvey = { where: string; found: Leftover[] } | { where: string; unchecked: string };

export interface Sink {
  readonly kind: SinkResult['sink'];
  /**
   * Publish order, lowest first: the sink whose publish is likeliest to fail (a remote job) goes
   * before the one least likely to (a local rename), so most failures still publish nothing.
   */
  readonly publishRank: number;
  open(context: SinkRunContext): Promise<SinkWriter>;
  /**
   * Removes temporary artefacts left by runs whose owner process is provably gone (see
   * `temp-owner.ts`), only where this sink writes; returns what it removed. Never touches the
   * artefacts of a live run, this process's included.
   */
  sweep(logger: Logger): Promise<string[]>;
  /**
   * What runs left where this sink writes, found by looking and named with how each goes away:
   * what `sweep` removes (now, or once old enough), a table's files no snapshot references. For
   * `status`, after a run that did not end well. Reads, never writes; never throws (a look that
   * fails is `unchecked`, with why). Absent: the kind does not look (`status` says so).
   */
  leftovers?(context: { jobName: string; logger: Logger }): Promise<LeftoverSurvey>;
  /** Compares the columns a run would write with what the target holds now. Reads, never writes. */
  plan(context: SinkRunContext): Promise<SinkPlan>;
  /**
   * Whether the target could be written, found cheaply and without writing output (a local
   * directory's writability, a bucket's existence and permissions): run by `tilehouse check`, and
   * by every run before its first export request, so a bad target costs no source traffic. A note
   * for the operator, or undefined when there is nothing to say. Throws the error a run would
   * fail with, naming the target.
   */
  checkAccess?(context: AccessCheckContext): Promise<string | undefined>;
  /**
   * The publish guard of the target a run with this context would write, as it is now (for `plan`
   * and `check`; the count of a whole run is the caller's). Reads, never writes. `exported`: every
   * row a run now would write, when the caller has them all (a tile of one page): a kind whose
   * guard compares only what a run replaces (an Iceberg table's days) judges it from them.
   */
  guardCheck?(context: SinkRunContext, exported?: { rows: readonly TypedRow[] }): GuardCheck;
  /** Which run wrote the target a run with this context would write, as the target is now (`status`). Reads, never writes. */
  publication?(context: SinkRunContext): Promise<TargetPublication>;
  /**
   * The OpenLineage dataset a run with this context would write, named as its writer names it once
   * open, found without opening, reading or writing the target (lineage names it on a FAIL or ABORT
   * that came before the writer opened: a refused token, a source error on page 0). `unknown`: the
   * sink cannot name it without the network, in a sentence; the event then names none for it.
   */
  plannedDataset?(context: PlannedDatasetContext): Promise<PlannedDataset>;
  /** The columns the target stores for a run with these columns, as the target names and types them (lineage). Pure. */
  storedSchema?(context: Pick<SinkRunContext, 'jobName' | 'columns' | 'window'>): StoredSchema;
  /**
   * Before a backfill's first page: throws the error that refuses windows the target could not
   * keep (BigQuery: windows whose partitions the table's partition expiration has already passed),
   * and warns of those it keeps but loses some of. Reads, never writes.
   */
  checkWindows?(windows: readonly SinkWindow[], context: WindowCheckContext): Promise<void>;
}

/** What naming a run's target before it opens knows of the run (its columns are not known before page 0). */
export type PlannedDatasetContext = Pick<SinkRunContext, 'jobName' | 'tileId' | 'runId' | 'startedAt' | 'window'>;

/** A target's OpenLineage dataset before it opens, or why the sink cannot name it then. */
export type PlannedDataset = LineageDatasetName | { unknown: string };

/** What a sink's check of a backfill's windows knows of its caller. */
export interface WindowCheckContext extends AccessCheckContext {
  /** `backfill --strict`: a window the target would not keep refuses the backfill even when others are kept. */
  strict: boolean;
  /**
   * What the windows filter on: the backfill's item and bucket column (headers, refs or output
   * names). A target partitioned by one of them has each window's rows in the window's days.
   */
  windowColumns: readonly string[];
}
