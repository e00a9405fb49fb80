import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import {
  ROOT_CONTEXT,
  SpanStatusCode,
  trace,
  defaultTextMapGetter,
  type Context,
  type Span,
  type Counter,
  type Histogram,
  type Gauge,
} from '@opentelemetry/api';
import { ExportResultCode, W3CBaggagePropagator, W3CTraceContextPropagator, type ExportResult } from '@opentelemetry/core';
import { OTLPMetricExporter, AggregationTemporalityPreference } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { BatchSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import { messageOf } from '../errors.js';
import type { Logger } from '../log.js';
import { redactText } from '../redaction.js';
import { registerCredentialHeader } from '../secret-scrubber.js';
import type { OtelSettings } from './otel-settings.js';
import {
  ATTR,
  failureOf,
  SPANS,
  type Attributes,
  type RunMetrics,
  type RunSpan,
  type SpanFailure,
  type SpanHandle,
  type SpanName,
  type SpanOptions,
  type Telemetry,
} from './telemetry.js';

// The OpenTelemetry implementation of telemetry.ts, imported (open-telemetry.ts) only when the
// OTEL_* variables turn it on. One matched set of @opentelemetry packages (package.json pins them
// exactly: the OTLP exporters pin core/sdk 3.1.0, and a caret range would install two copies).

export interface OtelTelemetryOptions {
  settings: OtelSettings;
  env: NodeJS.ProcessEnv;
  logger: Logger;
  version: string;
  /** Resource attributes of this process (the command, the run id, the jobs). */
  resource: Attributes;
}

/**
 * The Kubernetes attributes the generated manifests pass through the downward API
 * (src/deploy/pod-template.ts), as the semantic conventions name them.
 */
const K8S_ENV: ReadonlyArray<readonly [string, string]> = [
  ['K8S_POD_NAME', 'k8s.pod.name'],
  ['K8S_POD_UID', 'k8s.pod.uid'],
  ['K8S_NAMESPACE_NAME', 'k8s.namespace.name'],
  ['K8S_NODE_NAME', 'k8s.node.name'],
  ['JOB_COMPLETION_INDEX', 'k8s.job.completion_index'],
];

/**
 * The attributes as they leave for the collector: undefined ones dropped, every text redacted
 * (src/redaction.ts). Every span attribute, event attribute, resource attribute and metric label
 * passes here: this is telemetry's side of the one redaction boundary.
 */
function defined(attributes: Attributes): Record<string, string | number | boolean | string[]> {
  const out: Record<string, string | number | boolean | string[]> = {};
  for (const [key, value] of Object.entries(attributes)) {
    if (value === undefined) continue;
    out[redactText(key)] = Array.isArray(value)
      ? (value as readonly string[]).map((item) => redactText(String(item)))
      : typeof value === 'string'
        ? redactText(value)
        : (value as number | boolean);
  }
  return out;
}

class Handle implements SpanHandle {
  constructor(readonly span: Span) {}
  setAttributes(attributes: Attributes): void {
    this.span.setAttributes(defined(attributes));
  }
  addEvent(name: string, attributes?: Attributes): void {
    this.span.addEvent(name, attributes === undefined ? undefined : defined(attributes));
  }
  fail(failure: SpanFailure): void {
    this.span.setAttribute(ATTR.errorType, redactText(failure.code));
    this.span.setStatus({ code: SpanStatusCode.ERROR, message: redactText(`${failure.code}: ${failure.message}`) });
  }
}

const NO_HANDLE: SpanHandle = { setAttributes: () => undefined, addEvent: () => undefined, fail: () => undefined };

export interface Instruments {
  runs: Counter;
  rows: Counter;
  pages: Counter;
  bytes: Counter;
  retries: Counter;
  throttled: Counter;
  tokenFetches: Counter;
  duration: Histogram;
  phaseDuration: Histogram;
  lastSuccess: Gauge;
  lastRun: Gauge;
}

export class OtelTelemetry implements Telemetry {
  readonly enabled = true;
  private readonly storage = new AsyncLocalStorage<Handle>();
  private readonly tracerProvider: TracerProvider | undefined;
  private readonly meterProvider: MeterProvider | undefined;
  private readonly instruments: Instruments | undefined;
  /** The caller's trace (TRACEPARENT, TRACESTATE, BAGGAGE), or the root context. */
  private readonly parent: Context;
  private readonly shutdownBoundMs: number;
  private warned = false;
  private closed: Promise<void> | undefined;
  private readonly exportListeners = new Set<(traceIds: ReadonlySet<string>) => void>();

  constructor(private readonly options: OtelTelemetryOptions) {
    const { settings, env } = options;
    // `Authorization=Bearer x`: the token alone is what an echo quotes.
    for (const signal of [settings.traces, settings.metrics]) for (const value of Object.values(signal?.headers ?? {})) registerCredentialHeader(value);
    const k8s: Record<string, string> = {};
    for (const [name, key] of K8S_ENV) if (env[name]) k8s[key] = env[name];
    // Ours first, then OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME (envDetector), which win.
    const resource = defaultResource()
      .merge(
        resourceFromAttributes({
          [ATTR_SERVICE_NAME]: 'tilehouse',
          [ATTR_SERVICE_VERSION]: options.version,
          'service.instance.id': randomUUID(),
          ...k8s,
          ...defined(options.resource),
        }),
      )
      .merge(detectResources({ detectors: [envDetector] }));
    this.parent = parentContextOf(env);
    this.shutdownBoundMs = Math.max(settings.traces?.timeoutMs ?? 0, settings.metrics?.timeoutMs ?? 0) + 500;
    if (settings.traces !== undefined) {
      const exporter = new OTLPTraceExporter({ url: settings.traces.url, headers: settings.traces.headers, timeoutMillis: settings.traces.timeoutMs });
      this.watch(exporter, settings.traces.url, (spans) => this.exported(spans as ReadonlyArray<{ spanContext(): { traceId: string } }>));
      // Batched: a million-row run has a thousand page spans. The queue holds a long run's spans
      // between the 5 s exports; a span ended right before shutdown is flushed by it (a
      // SimpleSpanProcessor could drop it: opentelemetry-js#5602).
      const processor = new BatchSpanProcessor({
        exporter,
        maxQueueSize: 8192,
        maxExportBatchSize: 1024,
        scheduledDelayMillis: 5000,
        exportTimeoutMillis: settings.traces.timeoutMs,
      });
      this.tracerProvider = new TracerProvider({ resource, spanProcessors: [processor] });
    }
    if (settings.metrics !== undefined) {
      const temporalityPreference = {
        delta: AggregationTemporalityPreference.DELTA,
        cumulative: AggregationTemporalityPreference.CUMULATIVE,
        lowmemory: AggregationTemporalityPreference.LOWMEMORY,
      }[settings.temporality];
      const exporter = new OTLPMetricExporter({
        url: settings.metrics.url,
        headers: settings.metrics.headers,
        timeoutMillis: settings.metrics.timeoutMs,
        temporalityPreference,
      });
      this.watch(exporter, settings.metrics.url);
      // A run's metrics leave at shutdown (a collection then); a long backfill also every minute.
      const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 60_000, exportTimeoutMillis: settings.metrics.timeoutMs });
      this.meterProvider = new MeterProvider({ resource, readers: [reader] });
      this.instruments = instrumentsOf(this.meterProvider);
    }
  }

  /** The first export that fails logs one warning; the run's outcome never depends on it. `accepted`: told of each export that succeeded. */
  private watch(
    exporter: { export(items: never, done: (result: ExportResult) => void): void },
    url: string,
    accepted?: (items: readonly unknown[]) => void,
  ): void {
    const original = exporter.export.bind(exporter);
    (exporter as { export: (items: never, done: (result: ExportResult) => void) => void }).export = (items, done) =>
      original(items, (result) => {
        if (result.code !== ExportResultCode.SUCCESS) this.warnOnce(`telemetry export to ${url} failed: ${messageOf(result.error ?? 'no detail')}`);
        else accepted?.(items as readonly unknown[]);
        done(result);
      });
  }

  /** The collector accepted these spans: their traces are told to the listeners (a listener that throws is its own problem, never the export's). */
  private exported(spans: ReadonlyArray<{ spanContext(): { traceId: string } }>): void {
    if (this.exportListeners.size === 0 || spans.length === 0) return;
    const traceIds = new Set(spans.map((span) => span.spanContext().traceId));
    for (const listener of this.exportListeners) {
      try {
        listener(traceIds);
      } catch {
        // The history's bookkeeping: an export is never failed by it.
      }
    }
  }

  onSpansExported(listener: (traceIds: ReadonlySet<string>) => void): () => void {
    this.exportListeners.add(listener);
    return () => this.exportListeners.delete(listener);
  }

  private warnOnce(message: string): void {
    if (this.warned) return;
    this.warned = true;
    this.options.logger.warn(`${message}; the run's outcome is unchanged (further telemetry failures are not logged)`);
  }

  private startSpan(name: string, attributes: Attributes, parent: Handle | undefined): Handle | undefined {
    if (this.tracerProvider === undefined) return undefined;
    const context = parent === undefined ? this.parent : trace.setSpan(this.parent, parent.span);
    return new Handle(this.tracerProvider.getTracer('tilehouse', this.options.version).startSpan(name, { attributes: defined(attributes) }, context));
  }

  async inSpan<T>(name: SpanName, attributes: Attributes, fn: (span: SpanHandle) => Promise<T>, options?: SpanOptions): Promise<T> {
    const handle = this.startSpan(name, attributes, this.storage.getStore());
    if (handle === undefined) return fn(NO_HANDLE);
    try {
      return await this.storage.run(handle, () => fn(handle));
    } catch (error) {
      if (options?.isFailure?.(error) ?? true) handle.fail(failureOf(error));
      else handle.addEvent('tilehouse.abandoned', { reason: messageOf(error) });
      throw error;
    } finally {
      handle.span.end();
    }
  }

  current(): SpanHandle {
    return this.storage.getStore() ?? NO_HANDLE;
  }

  startRun(attributes: Attributes): RunSpan {
    const handle = this.startSpan(SPANS.run, attributes, undefined);
    let ended = false;
    return {
      setAttributes: (more) => handle?.setAttributes(more),
      addEvent: (name, more) => handle?.addEvent(name, more),
      fail: (failure) => handle?.fail(failure),
      within: (fn) => (handle === undefined ? fn() : this.storage.run(handle, fn)),
      end: (exitCode, failure) => {
        if (handle === undefined || ended) return;
        ended = true;
        handle.setAttributes({ [ATTR.exitCode]: exitCode });
        if (failure !== undefined) handle.fail(failure);
        handle.span.end();
      },
    };
  }

  recordRun(run: RunMetrics): void {
    if (this.instruments !== undefined) recordRunOn(this.instruments, run);
  }

  logFields(): Record<string, string> {
    const handle = this.storage.getStore();
    if (handle === undefined) return {};
    const { traceId, spanId } = handle.span.spanContext();
    return { trace_id: traceId, span_id: spanId };
  }

  /**
   * Both providers flush in parallel, bounded by the longest export timeout plus half a second:
   * a collector that never answers delays the exit by that much and no more (one warning).
   */
  shutdown(): Promise<void> {
    this.closed ??= (async () => {
      let timer: NodeJS.Timeout | undefined;
      const bound = new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), this.shutdownBoundMs);
        timer.unref();
      });
      const flushed = Promise.allSettled([this.tracerProvider?.shutdown(), this.meterProvider?.shutdown()]).then((results) => {
        const failed = results.find((result) => result.status === 'rejected');
        if (failed !== undefined) this.warnOnce(`telemetry shutdown failed: ${messageOf(failed.reason)}`);
        return 'flushed' as const;
      });
      const outcome = await Promise.race([flushed, bound]);
      clearTimeout(timer);
      if (outcome === 'timeout') this.warnOnce(`telemetry was not sent within ${this.shutdownBoundMs} ms (OTEL_EXPORTER_OTLP_TIMEOUT + 500 ms)`);
    })();
    return this.closed;
  }
}

/**
 * The caller's context from the environment-variable carriers (OpenTelemetry's env-carriers
 * specification): TRACEPARENT and TRACESTATE as W3C trace context, BAGGAGE as W3C baggage. A
 * malformed TRACEPARENT is ignored (the run starts its own trace), as the propagator does.
 */
export function parentContextOf(env: NodeJS.ProcessEnv): Context {
  const carrier: Record<string, string> = {};
  if (env.TRACEPARENT) carrier.traceparent = env.TRACEPARENT;
  if (env.TRACESTATE) carrier.tracestate = env.TRACESTATE;
  if (env.BAGGAGE) carrier.baggage = env.BAGGAGE;
  const withTrace = new W3CTraceContextPropagator().extract(ROOT_CONTEXT, carrier, defaultTextMapGetter);
  return new W3CBaggagePropagator().extract(withTrace, carrier, defaultTextMapGetter);
}

/** One tile run on the run metrics' instruments (the durations in seconds, as the histogram's unit and buckets are). */
export function recordRunOn(instruments: Instruments, run: RunMetrics): void {
  const attributes = defined({ [ATTR.job]: run.job, [ATTR.status]: run.status, 'tilehouse.mode': run.mode });
  instruments.runs.add(1, defined({ ...attributes, [ATTR.errorType]: run.errorCode }));
  instruments.rows.add(run.rows, attributes);
  instruments.pages.add(run.pages, attributes);
  instruments.bytes.add(run.bytes, attributes);
  instruments.retries.add(run.retries, attributes);
  instruments.throttled.add(run.throttled, attributes);
  instruments.tokenFetches.add(run.tokenFetches, attributes);
  instruments.duration.record(run.durationMs / 1000, attributes);
  for (const [phase, ms] of Object.entries(run.timings ?? {})) instruments.phaseDuration.record(ms / 1000, { ...attributes, 'tilehouse.phase': phase });
  const now = Date.now() / 1000;
  const jobOnly = defined({ [ATTR.job]: run.job, 'tilehouse.mode': run.mode });
  instruments.lastRun.record(now, jobOnly);
  if (run.status === 'succeeded') instruments.lastSuccess.record(now, jobOnly);
}

/**
 * The duration histogram's bucket bounds, in seconds: the SDK's default bounds (0, 5, 10 … 10000)
 * were made for milliseconds and put every tile under 5 s in one bucket. These part a sub-second
 * tile from a 2 s one, a 40 s one and a 20-minute one, up to the 4 hours of a long backfill.
 */
export const RUN_DURATION_BUCKETS_S = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400];

export function instrumentsOf(provider: MeterProvider): Instruments {
  const meter = provider.getMeter('tilehouse');
  return {
    runs: meter.createCounter('tilehouse.runs', { description: 'Tile runs (a backfill: one run), by job, status and error.type' }),
    rows: meter.createCounter('tilehouse.rows', { description: 'Rows written' }),
    pages: meter.createCounter('tilehouse.pages', { description: 'Export pages read' }),
    bytes: meter.createCounter('tilehouse.bytes', { description: 'Response bytes received from the source', unit: 'By' }),
    retries: meter.createCounter('tilehouse.retries', { description: 'Retried source requests' }),
    throttled: meter.createCounter('tilehouse.throttled_responses', { description: 'HTTP 429 answers from the source (token endpoint included)' }),
    tokenFetches: meter.createCounter('tilehouse.token_fetches', { description: 'Access tokens fetched' }),
    duration: meter.createHistogram('tilehouse.run.duration', {
      description: 'Duration of a tile run',
      unit: 's',
      advice: { explicitBucketBoundaries: RUN_DURATION_BUCKETS_S },
    }),
    phaseDuration: meter.createHistogram('tilehouse.run.phase.duration', {
      description: "Where a tile run's time went, by tilehouse.phase: source (waiting on the token and pages), reading, prepare:<kind>, publish:<kind>",
      unit: 's',
      advice: { explicitBucketBoundaries: RUN_DURATION_BUCKETS_S },
    }),
    lastSuccess: meter.createGauge('tilehouse.last_success', { description: 'When the job last succeeded (Unix seconds)', unit: 's' }),
    lastRun: meter.createGauge('tilehouse.last_run', { description: 'When the job last finished a run (Unix seconds)', unit: 's' }),
  };
}
