// A tick of `tilehouse schedule` that throws is recorded on its root span with the error's own
// code, as a run's is (not a placeholder), and the worker's telemetry is flushed and uninstalled
// when it stops. The runner is replaced by one whose tick throws; the spans reach a small OTLP
// receiver.
import { describe, expect, it, vi } from 'vitest';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { NO_TELEMETRY, telemetry } from '../../src/telemetry/telemetry.js';
import { runCli, sandboxEnv } from '../support/cli-harness.js';
import { detailQuery } from '../support/queries.js';
import { otlpReceiverForAll } from '../support/otlp-receiver.js';
import { sandboxWorkspaceForAll } from '../support/sandbox-fixture.js';
import { waitUntil } from '../support/wait-until.js';

const ticks = vi.hoisted(() => ({ count: 0 }));
vi.mock('../../src/workspace/workspace-runner.js', async () => {
  const { StopDeadlineError } = await import('../../src/stop-deadline.js');
  return {
    WorkspaceRunner: {
      open: async () => ({
        runTick: async () => {
          ticks.count += 1;
          throw new StopDeadlineError(1000, 'a tick');
        },
      }),
    },
  };
});

const fixture = sandboxWorkspaceForAll({ incidents: 10 }, [
  { name: 'every_second', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }], schedule: { cron: '* * * * * *', timezone: 'UTC' } },
]);

const receiver = otlpReceiverForAll();

describe('tilehouse schedule with telemetry, a tick that throws', () => {
  it("records the tick's own error code on its root span, then flushes and uninstalls telemetry on stop", async () => {
    const stop = new AbortController();
    const { configFile, jobsDir } = fixture.workspace;
    const running = runCli(['schedule', '--config', configFile, '--jobs', jobsDir], {
      env: { ...sandboxEnv(fixture.sandbox), OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint },
      io: { signal: stop.signal },
    });
    await waitUntil(() => ticks.count >= 1, 'a tick', { withinMs: 20_000 });
    stop.abort(new Error('SIGTERM'));
    const result = await running;
    expect(result.logs.some((line) => line.msg === 'run of every_second crashed')).toBe(true);
    expect(telemetry()).toBe(NO_TELEMETRY);
    const traces = receiver.traces();
    expect(traces).toContain('tilehouse.run');
    expect(traces).toContain('stop_deadline_passed');
    expect(traces).not.toContain('the tick threw');
  });
});
