// tilehouse run, as a user runs it (a child process, STORAGE_EMULATOR_HOST in its environment),
// to gs:// through gcs-fault-proxy.ts (in front of gcs-precondition-proxy.ts, which enforces
// ifGenerationMatch on rewrites as Cloud Storage does and fake-gcs-server does not). The rewrite
// onto the target is performed and its answer lost, as issue 26 saw it: the run must exit 0 with
// the object holding its complete export, and no printed line may say otherwise.
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SANDBOX_TILE, startSandbox, type Sandbox } from '../../sandbox/index.js';
import { runCli, sandboxEnv, writeWorkspace } from '../support/cli-harness.js';
import { describeWithFakeGcs, usePreconditionProxy } from '../support/fake-gcs-server.js';
import { startGcsFaultProxy, type GcsFaultProxy } from '../support/gcs-fault-proxy.js';
import { detailQuery } from '../support/queries.js';
import { spawnCli } from '../support/spawn-cli.js';
import { makeTempDir } from '../support/temp-dir.js';
import { RUN_ID_METADATA_KEY } from '../../src/sinks/stores/gcs/temp-objects.js';

const PREVIOUS = 'Number,Created,Description,Severity\r\nprevious run\r\n';
let sandbox: Sandbox;
let root: string;
let localBytes: Buffer;

beforeAll(async () => {
  sandbox = await startSandbox({ incidents: 150 });
  root = await makeTempDir();
  const local = await writeWorkspace(
    path.join(root, 'local'),
    sandbox,
    [{ name: 'incident_detail', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }] }],
    { itemsPerPage: 40 },
  );
  expect((await runCli(['run', '--config', local.configFile, '--jobs', local.jobsDir], { env: sandboxEnv(sandbox) })).exitCode).toBe(0);
  localBytes = await readFile(path.join(local.outDir, 'incident_detail.csv'));
});
afterAll(async () => {
  await sandbox?.close();
  await rm(root, { recursive: true, force: true });
});

describeWithFakeGcs('tilehouse run to gs:// when Cloud Storage loses an answer', (gcs) => {
  const through = usePreconditionProxy(gcs);
  let faults: GcsFaultProxy;
  beforeAll(async () => {
    faults = await startGcsFaultProxy(through.proxy.origin);
  });
  afterAll(async () => {
    await faults?.close();
  });

  async function runThroughFaults(name: string, bucket: string) {
    const workspace = await writeWorkspace(
      path.join(root, name),
      sandbox,
      [{ name: 'incident_detail', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv', manifest: true }] }],
      { itemsPerPage: 40 },
    );
    await writeFile(workspace.configFile, (await readFile(workspace.configFile, 'utf8')).replace(/directory: .*/, `directory: gs://${bucket}/nightly`));
    return spawnCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir, '--run-id', `run-${name}`], {
      env: { ...sandboxEnv(sandbox), STORAGE_EMULATOR_HOST: faults.origin },
      timeoutMs: 60_000,
    });
  }

  it.each([
    ['the rewrite onto the target performed, its answer lost', 'rewrite', { kind: 'lost-answer' }],
    ['the rewrite performed, then answered 503', 'rewrite', { kind: 'answer-instead', status: 503 }],
    ['the finalizing upload request performed, its answer lost', 'finalize', { kind: 'lost-answer' }],
  ] as const)("%s: exit 0, the object is this run's whole export, and no line says otherwise", async (_title, on, fault) => {
    const bucket = await gcs.newBucket('lost');
    await gcs.storage.bucket(bucket).file('nightly/incident_detail.csv').save(PREVIOUS, { resumable: false });
    const fired = faults.fired.length;
    faults.fail({ on, fault, urlContains: on === 'rewrite' ? 'incident_detail.csv?' : '' });
    const name = `${on}-${fault.kind}`;
    const result = await runThroughFaults(name, bucket);
    expect(faults.fired.slice(fired)).toEqual([`${on}:${fault.kind}`]);
    expect(result.code, result.stderr).toBe(0);
    const object = gcs.storage.bucket(bucket).file('nightly/incident_detail.csv');
    expect((await object.download())[0].equals(localBytes)).toBe(true);
    expect((await object.getMetadata())[0].metadata?.[RUN_ID_METADATA_KEY]).toBe(`run-${name}`);
    const [files] = await gcs.storage.bucket(bucket).getFiles();
    expect(files.map((file) => file.name).sort()).toEqual(['nightly/incident_detail.csv', 'nightly/incident_detail.csv.manifest.json']);
    // Every printed line, judged: none claims a conflict, a failure or that nothing was published.
    const lines = `${result.stdout}\n${result.stderr}`.split('\n').filter((line) => line.trim() !== '');
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) {
      // A retry line says a try failed and is retried: true. Every other line claims success only.
      const parsed = line.startsWith('{') ? (JSON.parse(line) as { msg: string; summary?: { tiles?: Array<{ status: string }>; status?: string } }) : undefined;
      // The tally "1 succeeded, 0 failed" names failure only to count none.
      const text = (parsed?.msg ?? line).replace(/\b0 failed\b/, '');
      if (/failed transiently; retrying$/.test(text)) continue;
      expect(text).not.toMatch(/published nothing|untouched|changed while|target_changed|write_failed|conflict|fail|error|partially/i);
    }
    expect(result.stderr).toMatch(/1 succeeded, 0 failed/);
    // The published output is reported as such, with the retry the publish needed counted.
    const summary = lines
      .map((line) =>
        line.startsWith('{')
          ? (JSON.parse(line) as { msg: string; summary?: { status?: string; retries?: number; outputs?: Array<{ details?: { retries?: number } }> } })
          : undefined,
      )
      .find((entry) => entry?.msg.startsWith('job incident_detail succeeded'));
    expect(summary?.summary?.status).toBe('succeeded');
    // The retry was drawn from the tile run's one budget, so the tile's count includes it.
    expect(summary?.summary?.retries).toBeGreaterThanOrEqual(1);
    expect(summary?.summary?.outputs?.[0]?.details?.retries).toBe(1);
    if (on === 'rewrite') expect(result.stderr).toMatch(/the target holds this run's object.*published/);
  });
});
