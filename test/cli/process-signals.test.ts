import { mkdir, rm, writeFile, readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SANDBOX_TILE, startSandbox, type Sandbox } from '../../sandbox/index.js';
import { listFiles, sandboxEnv, writeWorkspace, type Workspace } from '../support/cli-harness.js';
import { exitWithin, spawnCli, splitStderr } from '../support/child-process.js';
import { detailQuery } from '../support/queries.js';
import { makeTempDir } from '../support/temp-dir.js';

const PREVIOUS = 'previous output\r\n';

let sandbox: Sandbox;
let root: string;
let workspace: Workspace;

beforeAll(async () => {
  // 30 pages at 60 ms each: a run takes long enough to be stopped in the middle.
  sandbox = await startSandbox({ incidents: 600, latencyMs: 60 });
  root = await makeTempDir();
  workspace = await writeWorkspace(root, sandbox, [{ name: 'incident_detail', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }] }], {
    itemsPerPage: 20,
    concurrency: 1,
  });
});
afterAll(async () => {
  await sandbox.close();
  await rm(root, { recursive: true, force: true });
});

/** Spawns the real CLI (through tsx) and sends `signal` once the export is under way. */
async function runAndSignal(signal: NodeJS.Signals): Promise<{ code: number | null; stderr: string }> {
  const before = sandbox.requests.length;
  const child = spawnCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir], {
    env: { ...process.env, ...sandboxEnv(sandbox), CI: '' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = exitWithin(child, 30_000);
  const deadline = Date.now() + 20_000;
  while (sandbox.requests.slice(before).filter((r) => r.endpoint === 'export').length < 5) {
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`the run never got going: ${stderr}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  child.kill(signal);
  const { code } = await exited;
  return { code, stderr };
}

describe('tilehouse run as a process', () => {
  it.each([
    { signal: 'SIGTERM' as const, code: 143 },
    { signal: 'SIGINT' as const, code: 130 },
  ])('stops on $signal mid-export with exit $code, no partial file, previous output untouched', async ({ signal, code }) => {
    await mkdir(workspace.outDir, { recursive: true });
    const target = path.join(workspace.outDir, 'incident_detail.csv');
    await writeFile(target, PREVIOUS);
    const result = await runAndSignal(signal);
    const { logs, text } = splitStderr(result.stderr);
    expect(logs.map((line) => line.msg)).toEqual([
      'run starting',
      expect.stringMatching(new RegExp(`^job incident_detail failed: .*stopped by ${signal}`)),
      'run finished',
    ]);
    expect(text).toEqual([
      `tilehouse: ${signal} received; stopping cleanly within 20 s (send again to exit at once)`,
      expect.stringMatching(/^run \S+: 0 succeeded, 1 failed in [\d.]+ s$/),
      expect.stringMatching(new RegExp(`^  FAIL incident_detail \\([\\d.]+ s\\): \\w+: .*stopped by ${signal}`)),
      '',
    ]);
    expect(result.code).toBe(code);
    expect(await readFile(target, 'utf8')).toBe(PREVIOUS);
    expect(await listFiles(workspace.outDir)).toEqual(['incident_detail.csv']);
  });
});
