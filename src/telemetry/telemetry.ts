import { isTilehouseError, messageOf } from '../errors.js';
import { redactText } from '../redaction.js';

/**
 * The one small interface the pipeline reports to, on the seams the code already has: a
 * span around each unit a user already knows (the run, a tile, a token, a page, a sink's prepare
 * and publish, a window) and the run metrics of each tile. The code it observes calls
 * `telemetry()`; what answers is the no-op below unless a command opened OpenTelemetry
 * (open-telemetry.ts), whose implementation is imported only then: off, tracing costs one
 * function call per seam and loads nothing.
 */

export type AttributeValue = string | number | boolean | readonly string[];
/** Attributes of a span or an event; undefined values are left out. */
export type Attributes = Readonly<Record<string, AttributeValue | undefined>>;

/** The span names, once (docs/observability.md is their reference). */
export const SPANS = {
  run: 'tilehouse.run',
  tile: 'tilehouse.tile',
  token: 'tilehouse.token',
  page: 'tilehouse.page',
  window: 'tilehouse.window',
  prepare: 'tilehouse.sink.prepare',
  publish: 'tilehouse.sink.publish',
} as const;
export type SpanName = (typeof SPANS)[keyof typeof SPANS];

/**
 * Attribute names, once: OpenTelemetry's semantic conventions where one exists (HTTP client,
 * `error.type`), `tilehouse.*` otherwise.
 */
export const ATTR = {
  errorType: 'error.type',
  httpMethod: 'http.request.method',
  httpStatus: 'http.response.status_code',
  httpBodySize: 'http.response.body.size',
  httpResendCount: 'http.request.resend_count',
  urlFull: 'url.full',
  command: 'tilehouse.command',
  runId: 'tilehouse.run_id',
  jobs: 'tilehouse.jobs',
  exitCode: 'tilehouse.exit_code',
  job: 'tilehouse.job',
  tileId: 'tilehouse.tile_id',
  status: 'tilehouse.status',
  rows: 'tilehouse.rows',
  pages: 'tilehouse.pages',
  bytes: 'tilehouse.bytes',
  retries: 'tilehouse.retries',
  throttled: 'tilehouse.throttled_responses',
  tokenFetches: 'tilehouse.token_fetches',
  restarts: 'tilehouse.restarts',
  pageNumber: 'tilehouse.page.number',
  pageRows: 'tilehouse.page.rows',
  attempts: 'tilehouse.attempts',
  sinkTarget: 'tilehouse.sink.target',
  sinkKind: 'tilehouse.sink.kind',
  /** A sink's result details (job ids, object generation, file) are `tilehouse.sink.<detail>`. */
  sinkDetailPrefix: 'tilehouse.sink.',
  windowStart: 'tilehouse.window.start',
  windowEnd: 'tilehouse.window.end',
  windowLabel: 'tilehouse.window.label',
  guardVerdict: 'tilehouse.guard.verdict',
  guardRule: 'tilehouse.guard.rule',
  guardHeld: 'tilehouse.guard.held_rows',
  guardExported: 'tilehouse.guard.exported_rows',
  guardReason: 'tilehouse.guard.reason',
  guardChangedSinceRun: 'tilehouse.guard.definition_changed_since_run',
} as const;

/** Span event names. */
export const EVENTS = {
  retry: 'tilehouse.retry',
  throttled: 'tilehouse.throttled',
  reauthenticate: 'tilehouse.reauthenticate',
  signal: 'tilehouse.signal',
  /** The publish guard's verdict on one target (one event per target, on the tile's span). */
  publishGuard: 'tilehouse.publish_guard',
} as const;

/** A failure as a span shows it: the error's stable code and its message, scrubbed like the logs. */
export interface SpanFailure {
  code: string;
  message: string;
}

/** What a failed step's span is told: a thrown error (its code, else `internal_error`) or a summary's error. */
export function failureOf(error: unknown): SpanFailure {
  if (typeof error === 'object' && error !== null && !(error instanceof Error) && 'code' in error && 'message' in error) {
    const { code, message } = error as SpanFailure;
    return { code: String(code), message: redactText(String(message)) };
  }
  return { code: isTilehouseError(error) ? error.code : 'internal_error', message: redactText(messageOf(error)) };
}

export interface SpanHandle {
  setAttributes(attributes: Attributes): void;
  addEvent(name: string, attributes?: Attributes): void;
  /** Status ERROR with `error.type` = the code and the scrubbed message (a step that returns its failure). */
  fail(failure: SpanFailure): void;
}

export interface SpanOptions {
  /** Whether a thrown error fails the span (default: every one); others end it OK, named in an event. */
  isFailure?: (error: unknown) => boolean;
}

/** The run's root span: the command ends it with its outcome before telemetry shuts down. */
export interface RunSpan extends SpanHandle {
  /** Runs `fn` with this span as the parent of every span it starts. */
  within<T>(fn: () => Promise<T>): Promise<T>;
  /** Ends the root span: ERROR when `failure` is given. Idempotent. */
  end(exitCode: number, failure?: SpanFailure): void;
}

/** One tile run's metrics, as the Pushgateway push has them (metrics/metric-names.ts' TileRunMetrics). */
export interface RunMetrics {
  job: string;
  status: 'succeeded' | 'failed' | 'partially_published';
  rows: number;
  pages: number;
  bytes: number;
  durationMs: number;
  retries: number;
  throttled: number;
  tokenFetches: number;
  /** The failure's code, when it failed. */
  errorCode?: string | undefined;
  /** `backfill` for a backfill's one run (its own group at the Pushgateway). */
  mode?: string | undefined;
  /** Where the run's time went, in ms by phase (`source`, `reading`, `prepare:<kind>`, `publish:<kind>`; the summary's `timings`). */
  timings?: Record<string, number> | undefined;
}

export interface Telemetry {
  readonly enabled: boolean;
  /** Runs `fn` inside a child span of the caller's current one; the span ends when `fn` settles. */
  inSpan<T>(name: SpanName, attributes: Attributes, fn: (span: SpanHandle) => Promise<T>, options?: SpanOptions): Promise<T>;
  /** The innermost span of the caller's async context (a no-op handle outside every span). */
  current(): SpanHandle;
  /** The run's root span, a child of the caller's trace when TRACEPARENT says so. */
  startRun(attributes: Attributes): RunSpan;
  /** Adds one tile run (or a backfill's one run) to the run metrics. */
  recordRun(run: RunMetrics): void;
  /** `trace_id` and `span_id` of the current span, for a log line; empty outside a span or when off. */
  logFields(): Record<string, string>;
  /**
   * Calls `listener` with the trace ids of the spans each export the collector accepted carried:
   * the run history notes that its run's trace holds spans (a run killed before its first export
   * holds none). Returns the unsubscribe.
   */
  onSpansExported(listener: (traceIds: ReadonlySet<string>) => void): () => void;
  /** Sends what is left (spans, the metrics' one collection) within a bounded time; never throws. */
  shutdown(): Promise<void>;
}

const NO_SPAN: SpanHandle = { setAttributes: () => undefined, addEvent: () => undefined, fail: () => undefined };

/** Telemetry off: every seam runs its work as it would without it. */
export const NO_TELEMETRY: Telemetry = {
  enabled: false,
  inSpan: (_name, _attributes, fn) => fn(NO_SPAN),
  current: () => NO_SPAN,
  startRun: () => ({ ...NO_SPAN, within: (fn) => fn(), end: () => undefined }),
  recordRun: () => undefined,
  // A new object each call: a caller (pino's mixin) may add to it.
  logFields: () => ({}),
  onSpansExported: () => () => undefined,
  shutdown: async () => undefined,
};

// Process-wide, as the secret scrubber is: the seams are deep in the source and the pipeline, and
// threading a reporter through every signature would put telemetry into the logic it observes.
let active: Telemetry = NO_TELEMETRY;

/** The process's telemetry: OpenTelemetry once a command opened it, else the no-op. */
export function telemetry(): Telemetry {
  return active;
}

/** Installs `next` as the process's telemetry (open-telemetry.ts; tests); returns the previous one. */
export function useTelemetry(next: Telemetry): Telemetry {
  const previous = active;
  active = next;
  return previous;
}
