// Issue 53's repair line for an incremental job: its last run failed some day windows, and `status`
// gives the `tilehouse backfill … --from … --to … --resume` that exports just those days. The test
// runs the printed command as printed: the failed days land.
import { describe, expect, it } from 'vitest';
import { listFiles, runCli, sandboxEnv, summaryOf, writeWorkspace } from '../support/cli-harness.js';
import { dailyManifestJob } from '../support/queries.js';
import { sandboxAndRootForAll } from '../support/sandbox-fixture.js';

describe('the repair of an incremental job whose last run failed windows', () => {
  const fixture = sandboxAndRootForAll({ incidents: 600, now: new Date('2026-07-03T12:00:00Z') });

  it('prints the backfill --resume command for the failed days, and that command repairs them', async () => {
    const ws = await writeWorkspace(fixture.root, fixture.sandbox, [dailyManifestJob({ startFrom: '2026-07-01' })]);
    const env = sandboxEnv(fixture.sandbox);
    const flags = ['--config', ws.configFile, '--jobs', ws.jobsDir];

    // Every export answer of the night is malformed: each day window fails.
    fixture.sandbox.inject({ kind: 'malformed-json', endpoint: 'export', pageNumber: 0, times: Number.POSITIVE_INFINITY });
    const night = await runCli(['run', ...flags, '--json'], { env });
    expect(night.exitCode, night.stderr).toBe(1);
    const failed = summaryOf(night.stdout, 'run').incremental![0]!.failed;
    expect(failed.length).toBeGreaterThan(0);
    expect(await listFiles(ws.outDir)).toEqual([]);

    const status = await runCli(['status', ...flags], { env });
    const repair = status.stdout.split('\n').filter((line) => /^( {2}repair: | {10}\S)/.test(line));
    const command = `tilehouse backfill ${flags.join(' ')} --job daily --from ${failed[0]!.from} --to ${failed.at(-1)!.to} --resume`;
    expect(repair).toEqual([
      `  repair: ${command}  # the day windows the last run failed; --resume skips those every sink shows done`,
      '          kubectl create job -n tilehouse --from=cronjob/tilehouse-daily tilehouse-daily-$(date +%s)',
    ]);
    const json = JSON.parse((await runCli(['status', ...flags, '--json'], { env })).stdout) as Array<{ repair: { commands: string[] } }>;
    expect(json[0]!.repair.commands[0]).toBe(command);

    // The command as printed repairs just those days.
    fixture.sandbox.clearFaults();
    const repaired = await runCli(command.split(' ').slice(1), { env });
    expect(repaired.exitCode, repaired.stderr).toBe(0);
    const days = failed.map((window) => window.from);
    expect((await listFiles(ws.outDir)).filter((file) => file.endsWith('.csv'))).toEqual(days.map((day) => `daily/${day}.csv`));
  });
});
