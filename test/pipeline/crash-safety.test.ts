import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { beforeAll, describe, expect, it } from 'vitest';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { listFiles, runCli, sandboxEnv, writeWorkspace, type Workspace } from '../support/cli-harness.js';
import { detailQuery } from '../support/queries.js';
import { sandboxAndRootForAll } from '../support/sandbox-fixture.js';

const CLI = path.resolve('src/cli.ts');
const KILLS = 20;
const PREVIOUS = 'previous output\r\n';
const job = { name: 'incident_detail', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }] };

const fixture = sandboxAndRootForAll({ incidents: 600, latencyMs: 15 });
let workspace: Workspace;
let target: string;
let faultFree: string;

function runInProcess(ws: Workspace = workspace) {
  return runCli(['run', '--config', ws.configFile, '--jobs', ws.jobsDir], { env: sandboxEnv(fixture.sandbox) });
}

beforeAll(async () => {
  // 30 pages, 15 ms each, one at a time: a run lasts long enough to be killed anywhere in it.
  workspace = await writeWorkspace(fixture.root, fixture.sandbox, [job], { itemsPerPage: 20, concurrency: 1 });
  target = path.join(workspace.outDir, 'incident_detail.csv');
  expect((await runInProcess()).exitCode).toBe(0);
  faultFree = await readFile(target, 'utf8');
});

describe('a run killed with SIGKILL', () => {
  it(`leaves either the previous or the complete output at ${KILLS} seeded moments, and the next run is exact`, async () => {
    let seed = 20261121;
    const random = () => (seed = (seed * 48271) % 2147483647) / 2147483647;
    const seen = { previous: 0, complete: 0, leftTempFiles: 0 };
    for (let kill = 0; kill < KILLS; kill += 1) {
      await mkdir(workspace.outDir, { recursive: true });
      await writeFile(target, PREVIOUS);
      const before = fixture.sandbox.requests.length;
      const child = spawn(process.execPath, ['--import', 'tsx', CLI, 'run', '--config', workspace.configFile, '--jobs', workspace.jobsDir], {
        env: { ...process.env, ...sandboxEnv(fixture.sandbox) },
        stdio: 'ignore',
      });
      let exitedAlready = false;
      const exited = once(child, 'exit').then(() => (exitedAlready = true));
      // The moment is a point in the export, not on the clock (a loaded CI machine starts tsx
      // slower): after the k-th page request, k from 0 (before the token) to 32 (after the last page).
      const moment = Math.floor(random() * 33);
      const pagesRequested = () => fixture.sandbox.requests.slice(before).filter((r) => r.endpoint === 'export').length;
      while (!exitedAlready && pagesRequested() < moment) await sleep(2);
      child.kill('SIGKILL');
      await exited;

      const after = await readFile(target, 'utf8');
      expect([PREVIOUS, faultFree], `kill ${kill} left a partial file`).toContain(after);
      seen[after === PREVIOUS ? 'previous' : 'complete'] += 1;
      if ((await listFiles(workspace.outDir)).length > 1) seen.leftTempFiles += 1;

      const rerun = await runInProcess();
      expect(rerun.exitCode).toBe(0);
      expect(await readFile(target, 'utf8')).toBe(faultFree);
      expect(await listFiles(workspace.outDir), 'temp files remain').toEqual(['incident_detail.csv']);
    }
    // The seeded moments must actually hit the export mid-write, so the sweep had work to do.
    expect(seen.leftTempFiles).toBeGreaterThan(0);
  }, 120_000);
});

describe('two runs of one tile at the same time', () => {
  it('publish one whole run, never a mix, and leave no temp file', async () => {
    // The two runs differ (one exports a filtered query), so a mix of them would show. The
    // filtered one holds a fifth of the rows: its publish guard, which would refuse replacing the
    // whole run with it, allows any shrink here (this test is about two runs at once).
    const filtered = {
      ...job,
      sinks: [{ type: 'csv', guard: { maxShrink: 1 } }],
      query: {
        ...detailQuery,
        items: detailQuery.items.map((item, i) =>
          i === 3 ? { ...item, filters: [{ operator: 'in', values: ['SEV1', 'SEV2'], beforeAggregate: true }] } : item,
        ),
      },
    };
    const other = await writeWorkspace(path.join(fixture.root, 'other'), fixture.sandbox, [filtered], { itemsPerPage: 20, concurrency: 1 });
    const otherConfig = (await readFile(other.configFile, 'utf8')).replace(other.outDir, workspace.outDir);
    await writeFile(other.configFile, otherConfig);

    const filteredOnly = await writeWorkspace(path.join(fixture.root, 'reference'), fixture.sandbox, [filtered], { itemsPerPage: 20, concurrency: 1 });
    expect((await runInProcess(filteredOnly)).exitCode).toBe(0);
    const filteredOutput = await readFile(path.join(filteredOnly.outDir, 'incident_detail.csv'), 'utf8');
    expect(filteredOutput).not.toBe(faultFree);

    const started = fixture.sandbox.requests.length;
    const [a, b] = await Promise.all([runInProcess(workspace), runInProcess(other)]);
    // Neither sweeps the other's temp file: its owner is alive.
    expect([a.exitCode, b.exitCode]).toEqual([0, 0]);
    // They really overlapped: the second token was issued before the first run's last page.
    const requests = fixture.sandbox.requests.slice(started);
    const tokens = requests.filter((r) => r.endpoint === 'token');
    expect(tokens).toHaveLength(2);
    expect(tokens[1]!.receivedAt).toBeLessThan(Math.max(...requests.filter((r) => r.endpoint === 'export').map((r) => r.receivedAt)));
    expect([faultFree, filteredOutput]).toContain(await readFile(target, 'utf8'));
    expect(await listFiles(workspace.outDir)).toEqual(['incident_detail.csv']);
  });
});

describe('the start of a run', () => {
  it('sweeps temp files whose owner is gone where its sinks write, and nothing else', async () => {
    const { utimes } = await import('node:fs/promises');
    const { DEAD_PID, startLiveProcess, tagOf } = await import('../support/temp-owners.js');
    const live = await startLiveProcess();
    try {
      const ws = await writeWorkspace(path.join(fixture.root, 'sweep'), fixture.sandbox, [job], { itemsPerPage: 50 });
      await mkdir(ws.outDir, { recursive: true });
      const dayAgo = new Date(Date.now() - 25 * 3_600_000);
      const gone = [
        path.join(ws.outDir, `.incident_detail.csv.tilehouse-20260101T000000Z-abcdef+${tagOf({ pid: DEAD_PID, start: '1' })}.tmp`),
        path.join(ws.outDir, '.incident_detail.csv.tilehouse-20250101T000000Z-abcdef.tmp'),
      ];
      const kept = [
        path.join(ws.outDir, `.incident_detail.csv.tilehouse-20260101T000000Z-fedcba+${live.tag}.tmp`),
        path.join(ws.outDir, `.incident_detail.csv.tilehouse-20260101T000000Z-012345+${tagOf({ host: 'another-pod' })}.tmp`),
        path.join(ws.outDir, '.incident_detail.csv.tmp'),
      ];
      for (const file of [...gone, ...kept]) await writeFile(file, 'left over');
      // The untagged one is a day old (an older version's leftover); the other host's is fresh.
      await utimes(gone[1]!, dayAgo, dayAgo);

      const result = await runInProcess(ws);
      expect(result.exitCode).toBe(0);
      expect(await listFiles(ws.outDir)).toEqual(['incident_detail.csv', ...kept.map((file) => path.basename(file))].sort());
      expect(result.logs.find((line) => String(line.msg).includes('left by a run that is gone'))).toMatchObject({ files: expect.arrayContaining(gone) });
    } finally {
      await live.stop();
    }
  });
});
