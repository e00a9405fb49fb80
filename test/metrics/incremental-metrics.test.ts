import { readFile, writeFile } from 'node:fs/promises';
import { beforeAll, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { METRICS } from '../../src/metrics/push-metrics.js';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { runCli, sandboxEnv, writeWorkspace, type Workspace } from '../support/cli-harness.js';
import { dailySeverityQuery } from '../support/queries.js';
import { describeWithPushgateway, samplesOf } from './pushgateway.js';
import { sandboxAndRootForAll } from '../support/sandbox-fixture.js';

describeWithPushgateway('metrics of an incremental run on a real Pushgateway', (gateway) => {
  const fixture = sandboxAndRootForAll({ incidents: 3000 });
  let workspace: Workspace;
  const job = {
    name: 'inc_daily',
    tile: SANDBOX_TILE,
    query: dailySeverityQuery,
    sinks: [{ type: 'csv', manifest: true }],
    schedule: { cron: '0 6 * * *' },
    incremental: { item: 'day', bucketColumn: 'Day', startFrom: '2026-06-28', lookbackDays: 0 },
  };

  beforeAll(async () => {
    workspace = await writeWorkspace(fixture.root, fixture.sandbox, [job]);
    const config = parse(await readFile(workspace.configFile, 'utf8')) as Record<string, unknown>;
    await writeFile(workspace.configFile, stringify({ ...config, metrics: { pushgatewayUrl: gateway.url } }));
  });

  const sample = async (name: string) => samplesOf(await gateway.scrape(), name).filter((s) => s.labels.job === 'inc_daily');

  it("pushes one run to the schedule's group (the freshness alerts watch it), also when only today's open day was exported again", async () => {
    const run = () => runCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir, '--json'], { env: sandboxEnv(fixture.sandbox) });
    const first = await run();
    expect(first.exitCode).toBe(0);
    const summary = JSON.parse(first.stdout) as { tiles: Array<{ rows: number }> };
    expect(summary.tiles).toHaveLength(4);
    expect(await sample(METRICS.rows)).toEqual([
      { labels: expect.not.objectContaining({ mode: expect.anything() }), value: summary.tiles.reduce((sum, tile) => sum + tile.rows, 0) },
    ]);
    const success = (await sample(METRICS.lastSuccess))[0]!.value;

    await new Promise((resolve) => setTimeout(resolve, 1100));
    // Every closed day is published; today is still open, so it is all the next run exports.
    const again = await run();
    expect(again.exitCode).toBe(0);
    const tiles = (JSON.parse(again.stdout) as { tiles: Array<{ rows: number; outputs: Array<{ target: string }> }> }).tiles;
    expect(tiles).toHaveLength(1);
    expect(tiles[0]!.outputs[0]!.target).toMatch(/2026-07-01\.csv$/);
    expect(await sample(METRICS.rows)).toEqual([{ labels: expect.not.objectContaining({ mode: expect.anything() }), value: tiles[0]!.rows }]);
    expect((await sample(METRICS.lastRunSuccess))[0]?.value).toBe(1);
    expect((await sample(METRICS.lastSuccess))[0]!.value).toBeGreaterThan(success);
  });
});
