import type { Logger } from 'pino';
import type { Column, TypedRow } from '../transform/column.js';

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
  window?: { from: string; to: string };
  columns: readonly Column[];
  logger: Logger;
  signal?: AbortSignal;
}

/** What a sink reports once its output is visible. Goes into the run summary. */
export interface SinkResult {
  sink: 'csv' | 'bigquery';
  /** File path or `project.dataset.table[$partition]`. */
  target: string;
  rows: number;
  details?: Record<string, string | number | boolean>;
}

/**
 * A sink writes one tile run. Pages arrive strictly in order; nothing becomes visible to readers
 * until `commit` resolves; `abort` (called on any failure, also after a failed commit) leaves the
 * previous output untouched and removes every temporary artefact. Both are safe to call once each.
 */
export interface SinkWriter {
  writeRows(rows: readonly TypedRow[]): Promise<void>;
  commit(): Promise<SinkResult>;
  abort(): Promise<void>;
}

/** What a run would do to a sink's target, found without writing anything (`tilehouse plan`). */
export interface SinkPlan {
  sink: SinkResult['sink'];
  target: string;
  /** create: no output yet; unchanged: same columns; change: a run would change them; refuse: a run would fail. */
  action: 'create' | 'unchanged' | 'change' | 'refuse';
  /** One line per difference, e.g. `+ resolved_share NUMERIC`, `- Owner`. */
  details: string[];
}

export interface Sink {
  readonly kind: SinkResult['sink'];
  open(context: SinkRunContext): Promise<SinkWriter>;
  /** Compares the columns a run would write with what the target holds now. Reads, never writes. */
  plan(context: SinkRunContext): Promise<SinkPlan>;
}
