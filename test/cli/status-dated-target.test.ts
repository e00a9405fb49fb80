import { beforeAll, describe, expect, it } from 'vitest';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { runCli, sandboxEnv, writeWorkspace, type Workspace } from '../support/cli-harness.js';
import { detailQuery } from '../support/queries.js';
import { sandboxAndRootForAll } from '../support/sandbox-fixture.js';

/**
 * `status` of a job whose file is dated (`{date}`): the target it reads is the one the schedule's
 * latest run wrote. The morning after a 22:00 run the file of that run's day is current; today's
 * does not exist yet and is not late (it was: status read the file a run now would write).
 */
const SCHEDULE = { cron: '0 22 * * *', timezone: 'UTC' };
const RUN = { at: '2026-11-27T22:00:00.000Z', runId: '20261127T220000Z-d4a1e2' };
const fixture = sandboxAndRootForAll({ incidents: 20 });
let workspace: Workspace;

const cli = (now: string, args: string[]) =>
  runCli([...args, '--config', workspace.configFile, '--jobs', workspace.jobsDir], { env: sandboxEnv(fixture.sandbox), seams: { now: () => new Date(now) } });

beforeAll(async () => {
  workspace = await writeWorkspace(fixture.root, fixture.sandbox, [
    { name: 'dated', tile: SANDBOX_TILE, schedule: SCHEDULE, query: detailQuery, sinks: [{ type: 'csv', path: 'dated-{date}.csv', manifest: true }] },
  ]);
  const run = await cli(RUN.at, ['run', '--run-id', RUN.runId]);
  expect(run.exitCode, run.stderr).toBe(0);
});

describe('status of a dated target', () => {
  it('the morning after, names the run that wrote the day of the latest scheduled run, not late', async () => {
    const status = await cli('2026-11-28T07:30:00.000Z', ['status']);
    expect(status.exitCode, status.stdout + status.stderr).toBe(0);
    expect(status.stdout).toContain(`dated-2026-11-27.csv: run ${RUN.runId}`);
    expect(status.stdout).not.toContain('2026-11-28.csv');
    expect(status.stdout).not.toContain('LATE');
  });

  it("after the next scheduled time with no run, says that day's file is late", async () => {
    const status = await cli('2026-11-28T22:30:00.000Z', ['status']);
    expect(status.exitCode).toBe(1);
    expect(status.stdout).toMatch(/dated-2026-11-28\.csv: nothing yet; LATE: the run due 2026-11-28 22:00:00 UTC has not published it/);
  });
});
