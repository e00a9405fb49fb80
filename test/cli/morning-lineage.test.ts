// "What lineage says", the sixth morning question of issue 53: `status`'s last-run line names the
// OpenLineage job and the run id of the try, so the run is found in the catalog without the logs.
// Each try is a run of its own (src/lineage/run-uuid.ts): a retry with the same --run-id must show
// the new try's id, not the failed one's, and each id must be the one the try's terminal event carries.
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { fileTransportEnv, lineageEventsIn, type LineageEvent } from '../support/lineage-events.js';
import { runCli, sandboxEnv, writeWorkspace } from '../support/cli-harness.js';
import { detailQuery } from '../support/queries.js';
import { sandboxAndRootForAll } from '../support/sandbox-fixture.js';

const NIGHT = { at: '2026-11-28T02:00:00.000Z', runId: '20261128T020000Z-7a8b9c' };
const RETRY = '2026-11-28T07:10:00.000Z';
const MORNING = '2026-11-28T07:30:00.000Z';
const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}';

interface LastRunJson {
  runId: string;
  verdict: string;
  lineage?: { namespace: string; job: string; runIds: string[] };
}

const terminalOf = (events: readonly LineageEvent[], job: string) =>
  events.filter((event) => event.job.name === job && ['COMPLETE', 'FAIL', 'ABORT'].includes(event.eventType));

describe('status and lineage the morning after', () => {
  const fixture = sandboxAndRootForAll({ incidents: 40 });

  it("prints each try's OpenLineage run id and job, the id of the try's terminal event in the lineage file", async () => {
    const ws = await writeWorkspace(fixture.root, fixture.sandbox, [{ name: 'open_csv', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }] }]);
    const lineageDir = await mkdtemp(path.join(os.tmpdir(), 'morning-lineage-'));
    const env = { ...sandboxEnv(fixture.sandbox), ...fileTransportEnv(lineageDir) };
    const cli = (now: string, args: string[]) =>
      runCli([...args, '--config', ws.configFile, '--jobs', ws.jobsDir], { env, seams: { now: () => new Date(now) } });

    // The night's try fails on the first page; the morning's retry, same run id, succeeds.
    fixture.sandbox.inject({ kind: 'malformed-json', endpoint: 'export', pageNumber: 0, times: Number.POSITIVE_INFINITY });
    const night = await cli(NIGHT.at, ['run', '--run-id', NIGHT.runId]);
    expect(night.exitCode, night.stderr).toBe(1);
    const failed = terminalOf(await lineageEventsIn(lineageDir), 'open_csv');
    expect(failed.map((event) => event.eventType)).toEqual(['FAIL']);
    const failedTry = failed[0]!;

    const afterNight = JSON.parse((await cli(MORNING, ['status', '--json'])).stdout) as Array<{ job: string; lastRun: LastRunJson }>;
    expect(afterNight.find((entry) => entry.job === 'open_csv')!.lastRun).toMatchObject({
      runId: NIGHT.runId,
      verdict: 'failed',
      lineage: { namespace: failedTry.job.namespace, job: 'open_csv', runIds: [failedTry.run.runId] },
    });

    fixture.sandbox.clearFaults();
    const retry = await cli(RETRY, ['run', '--run-id', NIGHT.runId]);
    expect(retry.exitCode, retry.stderr).toBe(0);
    const tries = terminalOf(await lineageEventsIn(lineageDir), 'open_csv');
    expect(tries.map((event) => event.eventType)).toEqual(['FAIL', 'COMPLETE']);
    const newTry = tries[1]!;
    expect(newTry.run.runId).not.toBe(failedTry.run.runId);

    const status = await cli(MORNING, ['status']);
    expect(status.exitCode, status.stderr).toBe(0);
    const lastRun = status.stdout.split('\n').filter((line) => line.startsWith('  last run: '));
    expect(lastRun).toHaveLength(1);
    expect(lastRun[0]).toMatch(
      new RegExp(
        `^ {2}last run: OK, run ${NIGHT.runId} of 2026-11-28 07:10:00 UTC \\(lineage ${escape(newTry.job.namespace)} open_csv run ${newTry.run.runId}\\); 40 rows, 1 page in \\d+\\.\\d s$`,
      ),
    );
    expect(newTry.run.runId).toMatch(new RegExp(`^${UUID}$`));
    const json = JSON.parse((await cli(MORNING, ['status', '--json'])).stdout) as Array<{ job: string; lastRun: LastRunJson }>;
    expect(json.find((entry) => entry.job === 'open_csv')!.lastRun.lineage).toEqual({
      namespace: newTry.job.namespace,
      job: 'open_csv',
      runIds: [newTry.run.runId],
    });
  });

  it('prints no lineage on the last-run line when lineage is off', async () => {
    fixture.sandbox.clearFaults();
    const ws = await writeWorkspace(path.join(fixture.root, 'off'), fixture.sandbox, [
      { name: 'plain_csv', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }] },
    ]);
    const cli = (now: string, args: string[]) =>
      runCli([...args, '--config', ws.configFile, '--jobs', ws.jobsDir], { env: sandboxEnv(fixture.sandbox), seams: { now: () => new Date(now) } });
    expect((await cli(NIGHT.at, ['run', '--run-id', NIGHT.runId])).exitCode).toBe(0);
    const status = await cli(MORNING, ['status']);
    expect(status.stdout).not.toContain('lineage');
    const json = JSON.parse((await cli(MORNING, ['status', '--json'])).stdout) as Array<{ job: string; lastRun: LastRunJson }>;
    expect(json.find((entry) => entry.job === 'plain_csv')!.lastRun).not.toHaveProperty('lineage');
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}
