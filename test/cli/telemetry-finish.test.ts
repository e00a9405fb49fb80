// The root span of `run` and `backfill` ends, and telemetry is uninstalled, whatever throws between
// its start and the command's end: here writing the summary, after the jobs ran (a bug there, as
// reportSummary itself never throws). The spans reach a small OTLP receiver only when the root
// span was ended and flushed.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { NO_TELEMETRY, telemetry, useTelemetry } from '../../src/telemetry/telemetry.js';
import { runCli, sandboxEnv } from '../support/cli-harness.js';
import { dailyCsvBackfillJob, detailQuery } from '../support/queries.js';
import { otlpReceiverForAll } from '../support/otlp-receiver.js';
import { sandboxWorkspaceForAll } from '../support/sandbox-fixture.js';
import { dayFromToday } from '../support/window-oracle.js';

vi.mock('../../src/cli/report-summary.js', () => ({
  reportSummary: () => Promise.reject(new Error('the summary could not be reported')),
}));

// rw windows are relative to the server's "now": the real clock.
const fixture = sandboxWorkspaceForAll(
  { incidents: 60, now: new Date() },
  [{ name: 'detail', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }] }, dailyCsvBackfillJob],
  {
    itemsPerPage: 50,
  },
);

const receiver = otlpReceiverForAll();
afterEach(() => {
  receiver.received.length = 0;
  useTelemetry(NO_TELEMETRY);
});

const otelEnv = () => ({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_EXPORTER_OTLP_TIMEOUT: '3000' });

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
    expect(receiver.traces()).toContain('tilehouse.run');
  });
});
