import { describe, expect, it } from 'vitest';
import { SANDBOX_TILE, type Sandbox } from '../../sandbox/index.js';
import { runCli, writeWorkspace, refusalCode } from '../support/cli-harness.js';
import { detailQuery } from '../support/queries.js';
import { otelSettingsOf, parseKeyValueList, telemetryWanted } from '../../src/telemetry/otel-settings.js';
import { tempDirEachTest } from '../support/temp-dir-hooks.js';
import { REDACTED, scrubSecrets } from '../../src/secret-scrubber.js';

const ENDPOINT = 'http://127.0.0.1:4318';

describe('otelSettingsOf', () => {
  it('is off with no OTEL variable (and then nothing of OpenTelemetry is loaded)', () => {
    expect(otelSettingsOf({})).toEqual({ temporality: 'delta', warnings: [], refusals: [] });
    expect(telemetryWanted({ OTEL_SERVICE_NAME: 'x', TRACEPARENT: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' })).toBe(false);
  });

  it('turns both signals on with the general endpoint, each at its own path', () => {
    const settings = otelSettingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: `${ENDPOINT}/` });
    expect(settings.traces).toEqual({ url: `${ENDPOINT}/v1/traces`, timeoutMs: 10_000, headers: {} });
    expect(settings.metrics).toEqual({ url: `${ENDPOINT}/v1/metrics`, timeoutMs: 10_000, headers: {} });
    expect(telemetryWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT })).toBe(true);
  });

  it('takes a per-signal endpoint as it is, and turns on only that signal', () => {
    const settings = otelSettingsOf({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/custom/traces' });
    expect(settings.traces?.url).toBe('http://collector:4318/custom/traces');
    expect(settings.metrics).toBeUndefined();
  });

  it('honours OTEL_SDK_DISABLED=true, OTEL_TRACES_EXPORTER=none and OTEL_METRICS_EXPORTER=none', () => {
    expect(telemetryWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, OTEL_SDK_DISABLED: 'TRUE' })).toBe(false);
    // Anything but "true" leaves the SDK enabled (the spec's boolean rule).
    expect(telemetryWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, OTEL_SDK_DISABLED: 'false' })).toBe(true);
    const noTraces = otelSettingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, OTEL_TRACES_EXPORTER: 'none' });
    expect([noTraces.traces, noTraces.metrics?.url]).toEqual([undefined, `${ENDPOINT}/v1/metrics`]);
    const noMetrics = otelSettingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, OTEL_METRICS_EXPORTER: 'none' });
    expect([noMetrics.traces?.url, noMetrics.metrics]).toEqual([`${ENDPOINT}/v1/traces`, undefined]);
    expect(telemetryWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, OTEL_TRACES_EXPORTER: 'none', OTEL_METRICS_EXPORTER: 'none' })).toBe(false);
  });

  it('reads headers (the per-signal ones win, values percent-decoded) and timeouts', () => {
    const settings = otelSettingsOf({
      OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT,
      OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20abc,x-tenant=a',
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'x-tenant=b',
      OTEL_EXPORTER_OTLP_TIMEOUT: '2500',
      OTEL_EXPORTER_OTLP_METRICS_TIMEOUT: '700',
    });
    expect(settings.traces).toMatchObject({ headers: { authorization: 'Bearer abc', 'x-tenant': 'b' }, timeoutMs: 2500 });
    expect(settings.metrics).toMatchObject({ headers: { authorization: 'Bearer abc', 'x-tenant': 'a' }, timeoutMs: 700 });
  });

  it('warns about what it cannot do, and does not export there: grpc, other exporters, a bad timeout', () => {
    const grpc = otelSettingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' });
    expect([grpc.traces, grpc.metrics]).toEqual([undefined, undefined]);
    expect(grpc.warnings).toEqual([expect.stringMatching(/grpc is not supported.*no traces/), expect.stringMatching(/grpc is not supported.*no metrics/)]);
    // http/json and http/protobuf both go to the OTLP/HTTP port, sent as JSON.
    expect(otelSettingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }).traces).toBeDefined();
    const zipkin = otelSettingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, OTEL_TRACES_EXPORTER: 'zipkin' });
    expect(zipkin.traces).toBeUndefined();
    expect(zipkin.warnings).toEqual([expect.stringMatching(/OTEL_TRACES_EXPORTER=zipkin is not supported/)]);
    const badTimeout = otelSettingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, OTEL_EXPORTER_OTLP_TIMEOUT: 'soon' });
    expect(badTimeout.traces?.timeoutMs).toBe(10_000);
    expect(badTimeout.warnings[0]).toMatch(/OTEL_EXPORTER_OTLP_TIMEOUT="soon" is not a positive number/);
  });

  it('defaults the metrics temporality to delta, and honours the preference variable', () => {
    expect(otelSettingsOf({ OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE: 'Cumulative' }).temporality).toBe('cumulative');
    expect(otelSettingsOf({ OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE: 'lowmemory' }).temporality).toBe('lowmemory');
  });
});

describe('parseKeyValueList', () => {
  it('skips malformed pairs and keeps a value that is not percent-encoded as written', () => {
    expect(parseKeyValueList('a=1,,=x,b,c=%zz, d = 2 ')).toEqual({ a: '1', c: '%zz', d: '2' });
  });
});

describe('tilehouse validate and the OTEL variables', () => {
  // validate reads no network: the sandbox's address is never used.
  const offline = { url: 'http://127.0.0.1:9' } as Sandbox;
  const temp = tempDirEachTest();

  it('warns about what a run could not do with them (--strict refuses it), and says nothing of valid ones', async () => {
    const root = temp.path;
    const workspace = await writeWorkspace(root, offline, [{ name: 'incident_detail', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }] }]);
    const args = ['validate', '--config', workspace.configFile, '--jobs', workspace.jobsDir];
    const env = { TEST_CLIENT_ID: 'id', TEST_CLIENT_SECRET: 'secret-value-1234' };
    const fine = await runCli(args, { env: { ...env, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' } });
    expect(fine.exitCode).toBe(0);
    expect(fine.stderr).not.toMatch(/telemetry/);
    const grpc = { ...env, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' };
    const warned = await runCli(args, { env: grpc });
    expect(warned.exitCode).toBe(0);
    expect(warned.stderr).toMatch(/^warning: \(environment\): telemetry: OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported/m);
    const strict = await runCli([...args, '--strict'], { env: grpc });
    expect(strict.exitCode).toBe(2);
    expect(refusalCode(strict)).toBe('config_invalid');
  });
});

describe('otelSettingsOf and credentials', () => {
  it('refuses an endpoint with a password by its variable, never its value, and exports nothing there', () => {
    const settings = otelSettingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://collector:S3cr3t-otlp-Zq9@otel.internal:4318' });
    expect(settings.traces).toBeUndefined();
    expect(settings.metrics).toBeUndefined();
    expect(settings.refusals).toHaveLength(1);
    expect(settings.refusals[0]).toMatch(/^OTEL_EXPORTER_OTLP_ENDPOINT: a password in the URL \(user:password@host\) is refused/);
    expect(JSON.stringify(settings)).not.toContain('S3cr3t');
  });

  it('takes an endpoint with a user and no password', () => {
    expect(otelSettingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://collector@otel.internal:4318' }).traces?.url).toBe(
      'https://collector@otel.internal:4318/v1/traces',
    );
  });

  it('masks the value of a credential header wherever it is printed, and not an ordinary one', () => {
    otelSettingsOf({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318',
      OTEL_EXPORTER_OTLP_HEADERS: 'Authorization=Basic%20b3RscC1zZWNyZXQtdmFsdWU,x-tenant=acme-tenant-name',
    });
    expect(scrubSecrets('sent Basic b3RscC1zZWNyZXQtdmFsdWU to acme-tenant-name')).toBe(`sent ${REDACTED} to acme-tenant-name`);
  });
});
