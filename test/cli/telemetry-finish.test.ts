// The root span of `run` and `backfill` ends, and telemetry is uninstalled, whatever throws between
// its start and the command's end: here writing the summary, after the jobs ran (a bug there, as
// reportSummary itself never throws). The spans reach a small OTLP receiver only when the root
// span was ended and flushed.
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { NO_TELEMETRY, telemetry, useTelemetry } from '../../src/telemetry/telemetry.js';
import { runCli, sandboxEnv } from '../support/cli-harness.js';
import { dailySeverityQuery, detailQuery } from '../support/queries.js';
import { sandboxWorkspaceForAll } from '../support/sandbox-fixture.js';
import { dayFromToday } from '../support/window-oracle.js';

vi.mock('../../src/cli/report-summary.js', () => ({
  reportSummary: () => Promise.reject(new Error('the summary could not be reported')),
}));

const daily = {
  name: 'daily',
  tile: SANDBOX_TILE,
  query: dailySeverityQuery,
  sinks: [{ type: 'csv' }],
  columns: { Day: { type: 'DATE' } },
  backfill: { item: 'day', bucketColumn: 'Day' },
};
// rw windows are relative to the server's "now": the real clock.
const fixture = sandboxWorkspaceForAll(
  { incidents: 60, now: new Date() },
  [{ name: 'detail', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }] }, daily],
  {
    itemsPerPage: 50,
  },
);

let receiver: Server;
let received: string[] = [];
beforeAll(async () => {
  receiver = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      received.push(`${request.url} ${Buffer.concat(chunks).toString('latin1')}`);
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  receiver.listen(0, '127.0.0.1');
  await once(receiver, 'listening');
});
afterAll(async () => {
  receiver.closeAllConnections();
  await new Promise<void>((resolve) => receiver.close(() => resolve()));
});
afterEach(() => {
  received = [];
  useTelemetry(NO_TELEMETRY);
});

const otelEnv = () => ({ OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`, OTEL_EXPORTER_OTLP_TIMEOUT: '3000' });

describe('a throw after the jobs ran, before the command ends', () => {
  it.each([
    ['run', ['--job', 'detail']],
    ['backfill', ['--job', 'daily', '--from', dayFromToday(-3), '--to', dayFromToday(-1)]],
  ])('%s: still ends and sends the root span, and uninstalls telemetry', async (command, args) => {
    const { configFile, jobsDir } = fixture.workspace;
    const result = await runCli([command, '--config', configFile, '--jobs', jobsDir, ...args], { env: { ...sandboxEnv(fixture.sandbox), ...otelEnv() } });
    expect(result.stderr).toContain('the summary could not be reported');
    expect(result.exitCode).not.toBe(0);
    expect(telemetry()).toBe(NO_TELEMETRY);
    const traces = received.filter((request) => request.startsWith('/v1/traces '));
    expect(traces.some((request) => request.includes('tilehouse.run'))).toBe(true);
  });
});
