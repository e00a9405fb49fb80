import { mkdir, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, afterEach, describe, expect, it, vi } from 'vitest';
import { SANDBOX_TILE, startSandbox, type Sandbox } from '../../sandbox/index.js';
import { listFiles, runCli, sandboxEnv, summaryOf, writeWorkspace, type Workspace } from '../support/cli-harness.js';
import { readCsv } from '../support/csv-read.js';
import { detailQuery } from '../support/queries.js';
import { HookedSink, loadForRun, PublishFailsSink, runLoaded } from '../support/run-jobs-harness.js';
import { makeTempDir } from '../support/temp-dir.js';
import { DEAD_PID, startLiveProcess, tagOf } from '../support/temp-owners.js';

// Through the CLI no test sink can be injected; a rename onto b.csv that fails with EIO (a volume
// gone bad between the two publishes) is the same failure at the file-system edge.
const renameFailsOnto = vi.hoisted(() => ({ basename: undefined as string | undefined }));
vi.mock('node:fs/promises', async (importOriginal) => {
  const fs = await importOriginal<typeof import('node:fs/promises')>();
  const rename: typeof fs.rename = async (from, to) => {
    if (renameFailsOnto.basename !== undefined && String(to).endsWith(`/${renameFailsOnto.basename}`)) {
      throw Object.assign(new Error(`EIO: i/o error, rename '${String(from)}' -> '${String(to)}'`), { code: 'EIO' });
    }
    return fs.rename(from, to);
  };
  return { ...fs, rename, default: { ...fs, rename } };
});

const INCIDENTS = 180;
const PREVIOUS_A = Buffer.from('Number\r\nprevious a\r\n\u00e9\r\n');
const PREVIOUS_B = Buffer.from('Number\r\nprevious b\r\n');
const job = {
  name: 'incident_detail',
  tile: SANDBOX_TILE,
  query: detailQuery,
  sinks: [
    { type: 'csv', path: 'a.csv' },
    { type: 'csv', path: 'b.csv' },
  ],
};

let sandbox: Sandbox;
let root: string;
let workspace: Workspace;
let fileA: string;
let fileB: string;

beforeAll(async () => {
  sandbox = await startSandbox({ incidents: INCIDENTS });
});
afterAll(async () => {
  await sandbox.close();
});
beforeEach(async () => {
  root = await makeTempDir();
  workspace = await writeWorkspace(root, sandbox, [job], { itemsPerPage: 50 });
  fileA = path.join(workspace.outDir, 'a.csv');
  fileB = path.join(workspace.outDir, 'b.csv');
  await mkdir(workspace.outDir, { recursive: true });
  await writeFile(fileA, PREVIOUS_A);
  await writeFile(fileB, PREVIOUS_B);
});
afterEach(async () => {
  renameFailsOnto.basename = undefined;
  await rm(root, { recursive: true, force: true });
});

describe('a job with two CSV sinks (runJobs against the sandbox)', () => {
  it('publishes both when both prepare and publish', async () => {
    const summary = await runLoaded(await loadForRun(workspace, sandbox));
    expect(summary).toMatchObject({ succeeded: 1, failed: 0, partiallyPublished: 0 });
    expect(summary.tiles[0]!.outputs.map((o) => o.target)).toEqual([fileA, fileB]);
    expect((await readFile(fileA)).equals(await readFile(fileB))).toBe(true);
    expect((await readCsv(fileA)).rows).toHaveLength(INCIDENTS);
    expect(await listFiles(workspace.outDir)).toEqual(['a.csv', 'b.csv']);
  });

  it('fails without publishing either when the second target is a directory: the first keeps its previous bytes', async () => {
    await rm(fileB);
    await mkdir(path.join(fileB, 'inside'), { recursive: true });
    const summary = await runLoaded(await loadForRun(workspace, sandbox));
    expect(summary).toMatchObject({ succeeded: 0, failed: 1, partiallyPublished: 0 });
    expect(summary.tiles[0]).toMatchObject({ status: 'failed', outputs: [], error: { code: 'target_is_directory' } });
    expect(summary.tiles[0]!.error!.message).toContain(fileB);
    expect((await readFile(fileA)).equals(PREVIOUS_A)).toBe(true);
    expect(await listFiles(workspace.outDir)).toEqual(['a.csv']);
  });

  it('reports partially_published when the second publish fails after the first, then a healthy re-run converges', async () => {
    const loaded = await loadForRun(workspace, sandbox);
    const summary = await runLoaded(loaded, { sinksFor: (_job, [a, b]) => [a!, new PublishFailsSink(b!)] });
    expect(summary).toMatchObject({ succeeded: 0, failed: 0, partiallyPublished: 1 });
    const tile = summary.tiles[0]!;
    expect(tile).toMatchObject({ status: 'partially_published', unpublished: [fileB], error: { code: 'partially_published' } });
    expect(tile.outputs.map((o) => o.target)).toEqual([fileA]);
    expect(tile.error!.message).toContain('EIO');
    // The first holds the new run, the second its previous bytes; no temp file is left.
    const newRun = await readFile(fileA);
    expect((await readCsv(fileA)).rows).toHaveLength(INCIDENTS);
    expect((await readFile(fileB)).equals(PREVIOUS_B)).toBe(true);
    expect(await listFiles(workspace.outDir)).toEqual(['a.csv', 'b.csv']);

    const rerun = await runLoaded(loaded);
    expect(rerun).toMatchObject({ succeeded: 1, failed: 0, partiallyPublished: 0 });
    expect((await readFile(fileA)).equals(newRun)).toBe(true);
    expect((await readFile(fileB)).equals(newRun)).toBe(true);
    expect(await listFiles(workspace.outDir)).toEqual(['a.csv', 'b.csv']);
  });
});

describe('a stop signal around the publish of a two-sink job (runJobs)', () => {
  it('stopped after reading, before phase 2: run_stopped, both targets keep their previous bytes, no temp file', async () => {
    const controller = new AbortController();
    const summary = await runLoaded(await loadForRun(workspace, sandbox), {
      signal: controller.signal,
      sinksFor: (_job, [a, b]) => [a!, new HookedSink(b!, 'prepare', () => controller.abort(new Error('SIGTERM received')))],
    });
    expect(summary.tiles[0]).toMatchObject({ status: 'failed', outputs: [], error: { code: 'run_stopped' } });
    expect(summary.tiles[0]!.error!.message).toContain('SIGTERM received');
    expect((await readFile(fileA)).equals(PREVIOUS_A)).toBe(true);
    expect((await readFile(fileB)).equals(PREVIOUS_B)).toBe(true);
    expect(await listFiles(workspace.outDir)).toEqual(['a.csv', 'b.csv']);
  });

  it('stopped during phase 2: publishing runs to the end and the run succeeds with both targets new', async () => {
    const controller = new AbortController();
    const summary = await runLoaded(await loadForRun(workspace, sandbox), {
      signal: controller.signal,
      sinksFor: (_job, [a, b]) => [new HookedSink(a!, 'publish', () => controller.abort(new Error('SIGTERM received'))), b!],
    });
    expect(summary.tiles[0]).toMatchObject({ status: 'succeeded', outputs: [{ target: fileA }, { target: fileB }] });
    expect((await readCsv(fileA)).rows).toHaveLength(INCIDENTS);
    expect((await readFile(fileA)).equals(await readFile(fileB))).toBe(true);
    expect(await listFiles(workspace.outDir)).toEqual(['a.csv', 'b.csv']);
  });
});

describe('the sweep at the start of a run (runJobs)', () => {
  it("removes a dead run's temp file, keeps a live process's and a fresh foreign one, and touches nothing else", async () => {
    const live = await startLiveProcess();
    try {
      const dayAgo = new Date(Date.now() - 2 * 24 * 3_600_000);
      const name = (tag: string) => `.a.csv.tilehouse-20260101T000000Z-abcdef+${tag}.tmp`;
      const dead = name(tagOf({ pid: DEAD_PID, start: '5' }));
      const kept = [name(live.tag), name(tagOf({ host: 'other-pod' })), '.a.csv.tmp', 'notes.txt'];
      for (const file of [dead, ...kept]) {
        await writeFile(path.join(workspace.outDir, file), 'left over');
        await utimes(path.join(workspace.outDir, file), dayAgo, dayAgo);
      }
      // The foreign one is fresh: written an hour ago.
      const hourAgo = new Date(Date.now() - 3_600_000);
      await utimes(path.join(workspace.outDir, kept[1]!), hourAgo, hourAgo);
      const summary = await runLoaded(await loadForRun(workspace, sandbox));
      expect(summary.succeeded).toBe(1);
      expect(await listFiles(workspace.outDir)).toEqual(['a.csv', 'b.csv', ...kept].sort());
    } finally {
      await live.stop();
    }
  });
});

describe('tilehouse run with two CSV sinks', () => {
  const run = () => runCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir], { env: sandboxEnv(sandbox) });

  it('exits 3 with a PART line when the second publish fails, and 0 on the re-run', async () => {
    renameFailsOnto.basename = 'b.csv';
    const result = await run();
    expect(result.exitCode).toBe(3);
    // The summary states the exit code (a process exits with what main returns when no signal came).
    const stated = await runCli(['run', '--json', '--config', workspace.configFile, '--jobs', workspace.jobsDir], { env: sandboxEnv(sandbox) });
    expect(stated.exitCode).toBe(3);
    expect(summaryOf(stated.stdout, 'run').exitCode).toBe(3);
    expect(result.stderr).toMatch(/0 succeeded, 0 failed, 1 PARTIALLY PUBLISHED/);
    expect(result.stderr).toMatch(
      new RegExp(
        `^  PART incident_detail \\(.*\\): partially_published: .*new run in: ${fileA.replace(/[.]/g, '\\.')}; previous run still in: ${fileB.replace(/[.]/g, '\\.')}`,
        'm',
      ),
    );
    expect((await readFile(fileB)).equals(PREVIOUS_B)).toBe(true);
    expect((await readCsv(fileA)).rows).toHaveLength(INCIDENTS);
    expect(await listFiles(workspace.outDir)).toEqual(['a.csv', 'b.csv']);

    renameFailsOnto.basename = undefined;
    const rerun = await run();
    expect(rerun.exitCode).toBe(0);
    expect((await readFile(fileA)).equals(await readFile(fileB))).toBe(true);
  });

  it('exits 1 with a FAIL line naming target_is_directory when the second target is a directory', async () => {
    await rm(fileB);
    await mkdir(fileB);
    const result = await run();
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(/^  FAIL incident_detail \(.*\): target_is_directory: /m);
    expect((await readFile(fileA)).equals(PREVIOUS_A)).toBe(true);
    expect(await listFiles(workspace.outDir)).toEqual(['a.csv']);
  });
});
