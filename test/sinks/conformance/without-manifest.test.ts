// The file kinds without a manifest (issues 51, 63): a local file names no run, so every view
// names it from the run history (the run that published it last, when the file last changed
// within that run), with the rows counted in the file, never nothing and never another run's id;
// and a failed night is still NOT PUBLISHED, told by that run's start.
import { readFile, utimes, writeFile } from 'node:fs/promises';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { SANDBOX_TILE } from '../../../sandbox/index.js';
import { type CliResult, runCli, sandboxEnv, summaryOf, type Workspace, writeWorkspace } from '../../support/cli-harness.js';
import { detailQueryAbove } from '../../support/queries.js';
import { sandboxAndRootForAll } from '../../support/sandbox-fixture.js';
import { SCHEDULE } from './scenarios.js';

const NIGHTS = {
  first: { at: '2026-11-27T02:00:00.000Z', runId: '20261127T020000Z-d0f001' },
  second: { at: '2026-11-28T02:00:00.000Z', runId: '20261128T020000Z-d0f002' },
  failed: { at: '2026-11-29T02:00:00.000Z', runId: '20261129T020000Z-d0f003' },
} as const;
const KINDS = ['csv', 'parquet'] as const;
const jobName = (kind: string) => `unrecorded_${kind}`;

describe('a file without a manifest is named by the run history, and every view says so', () => {
  const fixture = sandboxAndRootForAll({ incidents: 130 });
  let workspace: Workspace;
  const seen: Record<string, CliResult> = {};
  const targets: Record<string, string> = {};
  const cli = (now: string, args: string[]) =>
    runCli([...args, '--config', workspace.configFile, '--jobs', workspace.jobsDir], { env: sandboxEnv(fixture.sandbox), seams: { now: () => new Date(now) } });
  /** The file's modification time as a night's run would have left it (the test's clock is the seams', not the machine's). */
  const minuteAfter = (iso: string) => new Date(Date.parse(iso) + 60_000);
  const morningAfter = (iso: string) => new Date(Date.parse(iso) + 5.5 * 3_600_000).toISOString();

  beforeAll(async () => {
    const jobs = KINDS.map((kind) => ({ name: jobName(kind), tile: SANDBOX_TILE, schedule: SCHEDULE, query: detailQueryAbove(0), sinks: [{ type: kind }] }));
    workspace = await writeWorkspace(fixture.root, fixture.sandbox, jobs);
    const config = parse(await readFile(workspace.configFile, 'utf8')) as { sinks: Record<string, unknown> };
    config.sinks.parquet = { directory: workspace.outDir };
    await writeFile(workspace.configFile, stringify(config));
    for (const name of ['first', 'second'] as const) {
      seen[name] = await cli(NIGHTS[name].at, ['run', '--run-id', NIGHTS[name].runId, '--json']);
      for (const output of summaryOf(seen[name].stdout, 'run').tiles.flatMap((tile) => tile.outputs)) {
        targets[output.sink] = output.target;
        await utimes(output.target, minuteAfter(NIGHTS[name].at), minuteAfter(NIGHTS[name].at));
      }
    }
    seen.status = await cli(morningAfter(NIGHTS.second.at), ['status', '--json']);
    seen['status-text'] = await cli(morningAfter(NIGHTS.second.at), ['status']);
    fixture.sandbox.inject({ kind: 'server-error', endpoint: 'export', status: 500, times: Number.POSITIVE_INFINITY });
    try {
      seen.failed = await cli(NIGHTS.failed.at, ['run', '--run-id', NIGHTS.failed.runId, '--json']);
    } finally {
      fixture.sandbox.clearFaults();
    }
    seen['failed:status'] = await cli(morningAfter(NIGHTS.failed.at), ['status', '--json']);
    seen['failed:status-text'] = await cli(morningAfter(NIGHTS.failed.at), ['status']);
  }, 120_000);

  const statusOf = (result: CliResult, kind: string) => {
    const statuses = JSON.parse(result.stdout) as Array<{ job: string; targets: Array<Record<string, unknown>> }>;
    const status = statuses.find((candidate) => candidate.job === jobName(kind))!;
    expect(status.targets).toHaveLength(1);
    return status.targets[0]!;
  };

  it('status --json: the run the history says wrote it, when that run started, the rows counted in the file', () => {
    expect(seen.second!.exitCode, seen.second!.stderr).toBe(0);
    const summary = summaryOf(seen.second!.stdout, 'run');
    for (const kind of KINDS) {
      const output = summary.tiles.flatMap((tile) => tile.outputs).find((candidate) => candidate.sink === kind)!;
      expect(output.rows).toBe(130);
      const target = statusOf(seen.status!, kind);
      expect(target).toEqual({
        sink: kind,
        target: output.target,
        state: 'written',
        runId: NIGHTS.second.runId,
        rows: output.rows,
        at: NIGHTS.second.at,
        readFrom: 'the run history; file modified; rows counted',
      });
    }
  });

  it('status, as a person reads it: "run R of …, 130 rows (the run history; …)"', () => {
    for (const kind of KINDS) {
      expect(seen['status-text']!.stdout).toContain(
        `  ${kind} ${targets[kind]}: run ${NIGHTS.second.runId} of 2026-11-28 02:00:00 UTC, 130 rows (the run history; file modified; rows counted)\n`,
      );
    }
    const targetLines = seen['status-text']!.stdout.split('\n').filter((line) => KINDS.some((kind) => line.startsWith(`  ${kind} `)));
    expect(targetLines).toHaveLength(KINDS.length);
  });

  it("a failed night: the file is still the second night's, and status says the due run did not publish it and exits 1", () => {
    expect(seen.failed!.exitCode).toBe(1);
    for (const kind of KINDS) {
      const target = statusOf(seen['failed:status']!, kind);
      expect(target).toMatchObject({ state: 'written', runId: NIGHTS.second.runId, rows: 130, at: NIGHTS.second.at, late: { due: NIGHTS.failed.at } });
      expect(seen['failed:status-text']!.stdout).toContain(
        `  ${kind} ${targets[kind]}: run ${NIGHTS.second.runId} of 2026-11-28 02:00:00 UTC, 130 rows (the run history; file modified; rows counted); NOT PUBLISHED: the run due 2026-11-29 02:00:00 UTC, run ${NIGHTS.failed.runId}, FAILED source_server_error\n`,
      );
    }
    expect(seen['failed:status']!.exitCode).toBe(1);
    expect(seen['failed:status-text']!.exitCode).toBe(1);
  });
});
