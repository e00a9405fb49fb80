// `plan` and `check` are traced as a run is: a root span (tilehouse.run, tilehouse.command = the
// command) with the token and page spans below it, so "is the source still slow?" is answered by
// a trace the morning after, not only by the night's run. The spans reach a small OTLP receiver
// only when the root span was ended and flushed.
import { afterEach, describe, expect, it } from 'vitest';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { NO_TELEMETRY, telemetry, useTelemetry } from '../../src/telemetry/telemetry.js';
import { runCli, sandboxEnv } from '../support/cli-harness.js';
import { otlpReceiverForAll } from '../support/otlp-receiver.js';
import { detailQuery } from '../support/queries.js';
import { sandboxWorkspaceForAll } from '../support/sandbox-fixture.js';

const fixture = sandboxWorkspaceForAll({ incidents: 60 }, [{ name: 'detail', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }] }], {
  itemsPerPage: 50,
});

const receiver = otlpReceiverForAll();
afterEach(() => {
  receiver.received.length = 0;
  useTelemetry(NO_TELEMETRY);
});

describe('plan and check with telemetry on', () => {
  it.each(['plan', 'check'])('%s sends a root span with the token and page spans below it, and uninstalls telemetry', async (command) => {
    const { configFile, jobsDir } = fixture.workspace;
    const result = await runCli([command, '--config', configFile, '--jobs', jobsDir], {
      env: { ...sandboxEnv(fixture.sandbox), OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_EXPORTER_OTLP_TIMEOUT: '3000' },
    });
    expect(result.exitCode).toBe(0);
    expect(telemetry()).toBe(NO_TELEMETRY);
    const traces = receiver.traces();
    for (const span of ['tilehouse.run', 'tilehouse.token', 'tilehouse.page']) expect(traces, span).toContain(span);
    // The root span says which command it was.
    expect(traces).toContain('tilehouse.command');
    expect(traces).toContain(command);
  });
});

describe('a run with telemetry on', () => {
  it("draws its run id and its startedAt from one clock reading: the id's time is the run's start", async () => {
    const { configFile, jobsDir } = fixture.workspace;
    const result = await runCli(['run', '--config', configFile, '--jobs', jobsDir, '--json'], {
      env: { ...sandboxEnv(fixture.sandbox), OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_EXPORTER_OTLP_TIMEOUT: '3000' },
      // A clock that moves on at every reading: two readings would differ by a second.
      seams: { now: ticking(new Date('2026-12-01T22:42:31.700Z')) },
    });
    expect(result.exitCode).toBe(0);
    const summary = JSON.parse(result.stdout) as { runId: string; startedAt: string };
    expect(summary.startedAt).toBe('2026-12-01T22:42:31.700Z');
    expect(summary.runId).toMatch(/^20261201T224231Z-[0-9a-f]{6}$/);
  });
});

/** A clock that reads `start`, then one second later at each further reading. */
function ticking(start: Date): () => Date {
  let readings = 0;
  return () => new Date(start.getTime() + 1000 * readings++);
}
