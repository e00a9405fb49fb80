import { readdir, readFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, sandboxEnv } from '../support/cli-harness.js';
import { exitWithin, spawnCli } from '../support/child-process.js';
import { detailCsvJob } from '../support/queries.js';
import { sandboxWorkspaceForAll } from '../support/sandbox-fixture.js';
import { waitUntil } from '../support/wait-until.js';

/**
 * A run killed with SIGKILL writes nothing at its end: what it wrote at its start, a "running"
 * record in the run history, is all the morning has. The next `status` judges it by its owner
 * process (gone: the pid is free, or another process holds it) and says the run was killed.
 */

const fixture = sandboxWorkspaceForAll({ incidents: 600 }, [detailCsvJob], { itemsPerPage: 20, concurrency: 1 });

const historyDir = () => path.join(fixture.workspace.root, '.tilehouse', 'history', 'incident_detail');

async function recordsOf(): Promise<Array<Record<string, unknown>>> {
  const names = await readdir(historyDir()).catch(() => [] as string[]);
  return Promise.all(names.filter((name) => name.endsWith('.json')).map(async (name) => JSON.parse(await readFile(path.join(historyDir(), name), 'utf8'))));
}

describe('a run killed with SIGKILL', () => {
  it('leaves a "running" record that the next status shows as killed, its process gone', async () => {
    // Page 5 never comes in time: the run is mid-export when it is killed.
    fixture.sandbox.inject({ kind: 'delay', endpoint: 'export', pageNumber: 5, delayMs: 120_000, times: Number.POSITIVE_INFINITY });
    const child = spawnCli(['run', '--config', fixture.workspace.configFile, '--jobs', fixture.workspace.jobsDir], {
      env: { ...process.env, ...sandboxEnv(fixture.sandbox), CI: '' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = exitWithin(child, 60_000);
    await waitUntil(
      async () => fixture.sandbox.requests.filter((request) => request.endpoint === 'export').length >= 5 && (await recordsOf()).length === 1,
      `the run's "running" record and its fifth page request (stderr: ${stderr})`,
      { gaveUp: () => child.exitCode !== null },
    );
    const [running] = await recordsOf();
    expect(running).toMatchObject({ job: 'incident_detail', state: 'running', trigger: 'run' });
    child.kill('SIGKILL');
    expect((await exited).signal).toBe('SIGKILL');

    const status = await runCli(['status', '--config', fixture.workspace.configFile, '--jobs', fixture.workspace.jobsDir], {
      env: sandboxEnv(fixture.sandbox),
    });
    const lines = status.stdout.split('\n');
    const runId = String(running!.runId);
    expect(lines[1]).toMatch(new RegExp(`^ {2}last run: KILLED, run ${runId} of \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d UTC$`));
    expect(lines[2]).toBe(
      `    still "running" in the history, but its process (pid ${child.pid} on ${hostname()
        .replace(/[^A-Za-z0-9.-]/g, '-')
        .slice(0, 63)}) is gone: killed (SIGKILL, an evicted pod, a lost node)`,
    );
    expect(lines).toContain(`  repair: tilehouse run --config ${fixture.workspace.configFile} --jobs ${fixture.workspace.jobsDir} --job incident_detail`);
    expect(status.exitCode).toBe(1);
    // The record holds the definition as it ran, never the credentials the run was given.
    const text = await readFile(path.join(historyDir(), (await readdir(historyDir()))[0]!), 'utf8');
    expect(text).toContain('"query.filters:Number"');
    expect(text).not.toContain(fixture.sandbox.clientSecret);
  }, 90_000);
});
