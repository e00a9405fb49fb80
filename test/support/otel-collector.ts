import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe } from 'vitest';
import { freePort } from './bigquery-emulator-process.js';
import { stopProcess } from './child-process.js';
import { makeTempDir } from './temp-dir.js';
import { describeUnless } from './skip.js';
import { underCi } from './ci.js';

/**
 * The real OpenTelemetry Collector (core OTLP receiver, contrib file exporter), built by
 * scripts/install-otelcol.sh into .tools/bin/otelcol (or $OTELCOL_BIN). It writes what it
 * receives as OTLP/JSON lines to a file, which the tests read. Absent outside CI: the tests are
 * skipped, and say so; absent under CI: they fail.
 */
export function otelcolBinaryOrSkip(): string | null {
  const binary = process.env.OTELCOL_BIN ?? path.resolve('.tools/bin/otelcol');
  if (existsSync(binary)) return binary;
  if (underCi()) throw new Error(`CI is set but no OpenTelemetry Collector is installed at ${binary}: run \`npm run setup:otelcol\`.`);
  return null;
}

export type AnyValue = { stringValue?: string; intValue?: string | number; doubleValue?: number; boolValue?: boolean; arrayValue?: { values?: AnyValue[] } };
type KeyValue = { key: string; value: AnyValue };

/** An attribute's value as JavaScript (OTLP/JSON writes 64-bit integers as strings). */
function valueOf(value: AnyValue): unknown {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.arrayValue !== undefined) return (value.arrayValue.values ?? []).map(valueOf);
  return undefined;
}

export function attributesOf(list: KeyValue[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map(({ key, value }) => [key, valueOf(value)]));
}

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  attributes: Record<string, unknown>;
  resource: Record<string, unknown>;
  /** 0 unset, 1 ok, 2 error. */
  status: { code: number; message: string };
  events: Array<{ name: string; attributes: Record<string, unknown> }>;
  startNs: bigint;
  endNs: bigint;
}

export interface ReceivedPoint {
  metric: string;
  unit: string;
  /** The sum's temporality: 1 delta, 2 cumulative; undefined for gauges. */
  temporality: number | undefined;
  attributes: Record<string, unknown>;
  resource: Record<string, unknown>;
  value: number;
}

/** A hex id as the file exporter writes it (hex in OTLP/JSON). */
const hex = (id: string | undefined): string => id ?? '';

/** Every span and metric point in the collector's output file, in the order received. */
export function parseReceived(text: string): { spans: ReceivedSpan[]; points: ReceivedPoint[]; lines: number } {
  const spans: ReceivedSpan[] = [];
  const points: ReceivedPoint[] = [];
  // The last line may still be being written: only whole lines count.
  const lines = text
    .slice(0, text.lastIndexOf('\n') + 1)
    .split('\n')
    .filter((line) => line.trim() !== '');
  for (const line of lines) {
    const document = JSON.parse(line) as Record<string, unknown>;
    for (const resourceSpans of (document.resourceSpans ?? []) as Array<Record<string, any>>) {
      const resource = attributesOf(resourceSpans.resource?.attributes);
      for (const scope of resourceSpans.scopeSpans ?? []) {
        for (const span of scope.spans ?? []) {
          spans.push({
            traceId: hex(span.traceId),
            spanId: hex(span.spanId),
            parentSpanId: hex(span.parentSpanId),
            name: span.name,
            attributes: attributesOf(span.attributes),
            resource,
            status: { code: span.status?.code ?? 0, message: span.status?.message ?? '' },
            events: (span.events ?? []).map((event: { name: string; attributes?: KeyValue[] }) => ({
              name: event.name,
              attributes: attributesOf(event.attributes),
            })),
            startNs: BigInt(span.startTimeUnixNano ?? 0),
            endNs: BigInt(span.endTimeUnixNano ?? 0),
          });
        }
      }
    }
    for (const resourceMetrics of (document.resourceMetrics ?? []) as Array<Record<string, any>>) {
      const resource = attributesOf(resourceMetrics.resource?.attributes);
      for (const scope of resourceMetrics.scopeMetrics ?? []) {
        for (const metric of scope.metrics ?? []) {
          const data = metric.sum ?? metric.gauge ?? metric.histogram;
          for (const point of data?.dataPoints ?? []) {
            const value = metric.histogram !== undefined ? Number(point.sum) : Number(point.asInt ?? point.asDouble ?? 0);
            points.push({
              metric: metric.name,
              unit: metric.unit ?? '',
              temporality: data.aggregationTemporality,
              attributes: attributesOf(point.attributes),
              resource,
              value,
            });
          }
        }
      }
    }
  }
  return { spans, points, lines: lines.length };
}

export interface RunningCollector {
  /** The OTLP/HTTP base URL, the value OTEL_EXPORTER_OTLP_ENDPOINT takes. */
  endpoint: string;
  /** Everything received so far. */
  received(): Promise<{ spans: ReceivedSpan[]; points: ReceivedPoint[]; bytes: number; lines: number }>;
  /** The file exporter's output as written (OTLP/JSON lines): every byte the collector received, for a search. */
  raw(): Promise<string>;
  /** Waits (up to `timeoutMs`) until `done` holds for what was received: the exporter writes a second or so later. */
  until<T>(done: (received: { spans: ReceivedSpan[]; points: ReceivedPoint[] }) => T | undefined, timeoutMs?: number): Promise<T>;
  stop(): Promise<void>;
}

/** Starts the collector on a free loopback port, writing to a file of its own. */
export async function startCollector(binary: string): Promise<RunningCollector> {
  const directory = await makeTempDir();
  const port = await freePort();
  const output = path.join(directory, 'received.jsonl');
  const config = path.join(directory, 'otelcol.yaml');
  await writeFile(
    config,
    [
      'receivers:',
      '  otlp:',
      '    protocols:',
      '      http:',
      `        endpoint: 127.0.0.1:${port}`,
      'exporters:',
      '  file:',
      `    path: ${output}`,
      '    flush_interval: 100ms',
      'service:',
      '  telemetry:',
      '    metrics:',
      '      level: none',
      '    logs:',
      '      level: warn',
      '  pipelines:',
      '    traces: { receivers: [otlp], exporters: [file] }',
      '    metrics: { receivers: [otlp], exporters: [file] }',
      '',
    ].join('\n'),
  );
  const child = spawn(binary, ['--config', config], { stdio: ['ignore', 'ignore', 'pipe'] });
  let tail = '';
  child.stderr!.on('data', (chunk: Buffer) => (tail = (tail + chunk.toString()).slice(-4000)));
  const endpoint = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`otelcol exited early (code ${child.exitCode}):\n${tail}`);
    const ready = await fetch(`${endpoint}/v1/traces`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }).then(
      (response) => response.ok,
      () => false,
    );
    if (ready) break;
    if (Date.now() > deadline) {
      await stopProcess(child);
      throw new Error(`otelcol did not answer on ${endpoint}:\n${tail}`);
    }
    await sleep(50);
  }
  const received = async () => {
    const text = await readFile(output, 'utf8').catch(() => '');
    return { ...parseReceived(text), bytes: Buffer.byteLength(text) };
  };
  return {
    endpoint,
    received,
    raw: () => readFile(output, 'utf8').catch(() => ''),
    async until(done, timeoutMs = 10_000) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const result = done(await received());
        if (result !== undefined && result !== false) return result;
        if (Date.now() > until) throw new Error(`the collector did not receive what was awaited within ${timeoutMs} ms`);
        await sleep(100);
      }
    },
    stop: () => stopProcess(child),
  };
}

/** `describe` for tests that need the collector: one per block, skipped when absent outside CI. */
export function describeWithCollector(title: string, body: (collector: RunningCollector) => void): void {
  const binary = otelcolBinaryOrSkip();
  const fullTitle = `${title} (otelcol)`;
  if (binary === null) {
    describeUnless('the OpenTelemetry Collector is not installed (npm run setup:otelcol)')(fullTitle, () => undefined);
    return;
  }
  describe(fullTitle, () => {
    let running: RunningCollector | undefined;
    const collector: RunningCollector = {
      get endpoint() {
        return running!.endpoint;
      },
      received: () => running!.received(),
      raw: () => running!.raw(),
      until: (done, timeoutMs) => running!.until(done, timeoutMs),
      stop: async () => running?.stop(),
    };
    beforeAll(async () => {
      running = await startCollector(binary);
    }, 30_000);
    afterAll(async () => {
      await running?.stop();
    });
    body(collector);
  });
}
