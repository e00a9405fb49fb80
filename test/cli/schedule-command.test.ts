import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { listFiles, runCli, sandboxEnv, writeWorkspace } from '../support/cli-harness.js';
import { detailQuery } from '../support/queries.js';
import { sandboxAndRootForAll } from '../support/sandbox-fixture.js';
import { waitUntil } from '../support/wait-until.js';

const CLI = path.resolve('src/cli.ts');

// 12 pages × 110 ms one at a time ≈ 1.3 s per run: longer than the 1 s between ticks.
const fixture = sandboxAndRootForAll({ incidents: 240, latencyMs: 110 });

describe('tilehouse schedule as a process', () => {
  it('runs the job every second, skips overlapping ticks, and drains on SIGTERM with exit 143', async () => {
    const job = {
      name: 'every_second',
      tile: SANDBOX_TILE,
      schedule: { cron: '* * * * * *', timezone: 'Europe/Berlin' },
      query: detailQuery,
      sinks: [{ type: 'csv' }],
    };
    const ws = await writeWorkspace(fixture.root, fixture.sandbox, [job], { itemsPerPage: 20, concurrency: 1 });
    const reference = await writeWorkspace(path.join(fixture.root, 'reference'), fixture.sandbox, [job], { itemsPerPage: 20 });
    expect((await runCli(['run', '--config', reference.configFile, '--jobs', reference.jobsDir], { env: sandboxEnv(fixture.sandbox) })).exitCode).toBe(0);

    const tokensBeforeSpawn = fixture.sandbox.requests.filter((r) => r.endpoint === 'token').length;
    const child = spawn(process.execPath, ['--import', 'tsx', CLI, 'schedule', '--config', ws.configFile, '--jobs', ws.jobsDir, '--grace-seconds', '10'], {
      env: { ...process.env, ...sandboxEnv(fixture.sandbox) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    // Logs are on stderr; stdout carries nothing for `schedule`.
    let logs = '';
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (logs += chunk.toString()));
    const deadline = Date.now() + 25_000;
    // Two finished runs and at least one skipped tick, then stop while a third run is under way.
    while ((logs.match(/job every_second succeeded/g) ?? []).length < 2 || !logs.includes('skipped a run of every_second')) {
      if (Date.now() > deadline) throw new Error(`schedule did not get going:\n${logs}`);
      await sleep(50);
    }
    // A run is under way when more runs have fetched a token than have finished.
    const started = () => fixture.sandbox.requests.filter((r) => r.endpoint === 'token').length - tokensBeforeSpawn;
    const finished = () => (logs.match(/job every_second succeeded/g) ?? []).length;
    await waitUntil(() => started() > finished(), `no third run under way:\n${logs}`, { withinMs: 10_000, gaveUp: () => child.exitCode !== null });
    child.kill('SIGTERM');
    const [code] = (await once(child, 'exit')) as [number | null];

    expect(logs.split('\n').some((line) => line.includes('"msg":"scheduled every_second"') && /"nextRun":"\d{4}-/.test(line))).toBe(true);
    expect(logs).toContain('stopped: every running tile finished');
    expect(code).toBe(143);
    expect(stdout).toBe('');
    expect((logs.match(/job every_second succeeded/g) ?? []).length).toBeGreaterThanOrEqual(3);
    expect(await readFile(path.join(ws.outDir, 'every_second.csv'), 'utf8')).toBe(await readFile(path.join(reference.outDir, 'every_second.csv'), 'utf8'));
    expect(await listFiles(ws.outDir)).toEqual(['every_second.csv']);
    // Every tick left its record in the run history, the drained one included: none stays "running".
    const historyDir = path.join(ws.root, '.tilehouse', 'history', 'every_second');
    const records = await Promise.all(
      (await readdir(historyDir)).map(async (name) => JSON.parse(await readFile(path.join(historyDir, name), 'utf8')) as { trigger: string; state: string }),
    );
    expect(records).toHaveLength((logs.match(/job every_second succeeded/g) ?? []).length);
    expect(new Set(records.map((record) => `${record.trigger} ${record.state}`))).toEqual(new Set(['schedule succeeded']));
  }, 40_000);
});
