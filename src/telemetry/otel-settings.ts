/**
 * What the standard OpenTelemetry environment variables ask of this process, read with the meaning
 * the specification gives them (opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/).
 * The JS SDK's plain providers read none of the switches (only sdk-node does, which tilehouse does
 * not use: it pulls in every exporter, gRPC included), so they are read here, without loading any
 * OpenTelemetry module: this file decides whether the implementation is imported at all.
 *
 * Off unless an OTLP endpoint is given: a run that sets no OTEL_* variable loads nothing.
 */

import { registerSecret } from '../secret-scrubber.js';

export type Signal = 'traces' | 'metrics';

export interface SignalSettings {
  /** The OTLP/HTTP URL the signal's exporter posts to (`<endpoint>/v1/<signal>` for the general endpoint). */
  url: string;
  /** OTEL_EXPORTER_OTLP_[SIGNAL_]TIMEOUT, ms: how long one export may take, retries included. */
  timeoutMs: number;
  /** OTEL_EXPORTER_OTLP_[SIGNAL_]HEADERS, decoded. */
  headers: Record<string, string>;
}

export interface OtelSettings {
  traces?: SignalSettings;
  metrics?: SignalSettings;
  /** OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE; tilehouse's default is delta (docs/observability.md). */
  temporality: 'delta' | 'cumulative' | 'lowmemory';
  /** What the variables asked for that this build cannot do (one warning each, once the logger exists). */
  warnings: string[];
  /**
   * What the variables give that must not be used: an endpoint with a password in it
   * (`https://user:password@collector`). The signal is not exported (a run warns), and
   * `tilehouse validate` refuses it as config_invalid. Each names the variable, never its value.
   */
  refusals: string[];
}

/** The spec's default for OTEL_EXPORTER_OTLP_TIMEOUT. */
export const DEFAULT_EXPORT_TIMEOUT_MS = 10_000;

const SUFFIX: Record<Signal, string> = { traces: 'TRACES', metrics: 'METRICS' };

const SECRET_HEADER = /auth|key|token|secret|pass|cookie|credential|signature/i;

function nonEmpty(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed === undefined || trimmed === '' ? undefined : trimmed;
}

/** `k1=v1,k2=v2`, values percent-decoded (the spec's W3C-baggage-like format); malformed pairs are skipped. */
export function parseKeyValueList(text: string | undefined): Record<string, string> {
  const pairs: Record<string, string> = {};
  for (const part of (text ?? '').split(',')) {
    const at = part.indexOf('=');
    if (at <= 0) continue;
    const key = part.slice(0, at).trim();
    let value = part.slice(at + 1).trim();
    try {
      value = decodeURIComponent(value);
    } catch {
      // Not percent-encoded after all: taken as written.
    }
    if (key !== '') pairs[key] = value;
  }
  return pairs;
}

function timeoutOf(env: NodeJS.ProcessEnv, signal: Signal, warnings: string[]): number {
  const name = `OTEL_EXPORTER_OTLP_${SUFFIX[signal]}_TIMEOUT`;
  const text = nonEmpty(env[name]) ?? nonEmpty(env.OTEL_EXPORTER_OTLP_TIMEOUT);
  if (text === undefined) return DEFAULT_EXPORT_TIMEOUT_MS;
  const value = Number(text);
  if (Number.isInteger(value) && value > 0) return value;
  warnings.push(
    `${env[name] === undefined ? 'OTEL_EXPORTER_OTLP_TIMEOUT' : name}=${JSON.stringify(text)} is not a positive number of milliseconds; using ${DEFAULT_EXPORT_TIMEOUT_MS}`,
  );
  return DEFAULT_EXPORT_TIMEOUT_MS;
}

/** The exporters a signal asks for (OTEL_TRACES_EXPORTER, OTEL_METRICS_EXPORTER; default `otlp`). */
function exportersOf(env: NodeJS.ProcessEnv, signal: Signal): string[] {
  const text = nonEmpty(env[`OTEL_${SUFFIX[signal]}_EXPORTER`]) ?? 'otlp';
  return text
    .split(',')
    .map((name) => name.trim().toLowerCase())
    .filter((name) => name !== '');
}

/**
 * A collector's credential belongs in a header from a Secret: a password in the endpoint's URL
 * would be printed by every export error that names where it went.
 */
function endpointPasswordRefusal(env: NodeJS.ProcessEnv, signal: Signal): string | undefined {
  for (const name of [`OTEL_EXPORTER_OTLP_${SUFFIX[signal]}_ENDPOINT`, 'OTEL_EXPORTER_OTLP_ENDPOINT']) {
    const value = nonEmpty(env[name]);
    if (value === undefined) continue;
    if (URL.canParse(value) && new URL(value).password !== '')
      return `${name}: a password in the URL (user:password@host) is refused (the value is not shown): remove it and give the collector's credential as a header in OTEL_EXPORTER_OTLP_HEADERS (e.g. Authorization=Basic%20…), from a Secret`;
    return undefined; // the signal's own endpoint, when set, is the one used
  }
  return undefined;
}

function signalSettings(env: NodeJS.ProcessEnv, signal: Signal, warnings: string[], refusals: string[]): SignalSettings | undefined {
  const exporters = exportersOf(env, signal);
  if (exporters.includes('none')) return undefined;
  for (const name of exporters.filter((candidate) => candidate !== 'otlp')) {
    warnings.push(`OTEL_${SUFFIX[signal]}_EXPORTER=${name} is not supported by tilehouse (otlp and none are); no ${signal} go there`);
  }
  if (!exporters.includes('otlp')) return undefined;
  const specific = nonEmpty(env[`OTEL_EXPORTER_OTLP_${SUFFIX[signal]}_ENDPOINT`]);
  const general = nonEmpty(env.OTEL_EXPORTER_OTLP_ENDPOINT);
  if (specific === undefined && general === undefined) return undefined;
  const protocol = nonEmpty(env[`OTEL_EXPORTER_OTLP_${SUFFIX[signal]}_PROTOCOL`]) ?? nonEmpty(env.OTEL_EXPORTER_OTLP_PROTOCOL) ?? 'http/protobuf';
  if (protocol === 'grpc') {
    warnings.push(
      `OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported by tilehouse (it sends OTLP/HTTP); no ${signal} are exported. Point it at the collector's OTLP/HTTP port (4318)`,
    );
    return undefined;
  }
  const refusal = endpointPasswordRefusal(env, signal);
  if (refusal !== undefined) {
    if (!refusals.includes(refusal)) refusals.push(refusal);
    return undefined;
  }
  // The spec's per-signal endpoint is used as is; the general one gets the signal's path appended.
  const url = specific ?? `${general!.replace(/\/+$/, '')}/v1/${signal}`;
  if (!URL.canParse(url)) {
    // Not quoted: a mistyped URL may still hold a credential.
    const variable = specific === undefined ? 'OTEL_EXPORTER_OTLP_ENDPOINT' : `OTEL_EXPORTER_OTLP_${SUFFIX[signal]}_ENDPOINT`;
    warnings.push(`the OTLP ${signal} endpoint (${variable}) is not a URL (the value is not shown); no ${signal} are exported`);
    return undefined;
  }
  const headers = { ...parseKeyValueList(env.OTEL_EXPORTER_OTLP_HEADERS), ...parseKeyValueList(env[`OTEL_EXPORTER_OTLP_${SUFFIX[signal]}_HEADERS`]) };
  // A header whose name says credential (Authorization=Basic …, an API key) is masked wherever it is echoed.
  for (const [name, value] of Object.entries(headers)) if (SECRET_HEADER.test(name)) registerSecret(value, { permanent: true });
  return { url, timeoutMs: timeoutOf(env, signal, warnings), headers };
}

/** What the environment asks for; neither signal when OTEL_SDK_DISABLED is true or no endpoint is set. */
export function otelSettingsOf(env: NodeJS.ProcessEnv): OtelSettings {
  const warnings: string[] = [];
  const refusals: string[] = [];
  const preference = (nonEmpty(env.OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE) ?? 'delta').toLowerCase();
  const temporality = preference === 'cumulative' || preference === 'lowmemory' ? preference : 'delta';
  if (nonEmpty(env.OTEL_SDK_DISABLED)?.toLowerCase() === 'true') return { temporality, warnings, refusals };
  const traces = signalSettings(env, 'traces', warnings, refusals);
  const metrics = signalSettings(env, 'metrics', warnings, refusals);
  return { ...(traces === undefined ? {} : { traces }), ...(metrics === undefined ? {} : { metrics }), temporality, warnings, refusals };
}

/** Whether this environment turns telemetry on at all (cheap: no OpenTelemetry module is loaded to answer). */
export function telemetryWanted(env: NodeJS.ProcessEnv): boolean {
  const settings = otelSettingsOf(env);
  return settings.traces !== undefined || settings.metrics !== undefined;
}
