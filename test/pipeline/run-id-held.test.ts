// One answer per run id across sinks (issue 62): a retry of a run id (a Kubernetes Job's pod
// retried) after the source's answer changed publishes that answer nowhere new. A job writing a
// PostgreSQL table and a CSV file, the CSV without a manifest, so only the run history can say
// which run wrote it; and a lone CSV whose earlier try cannot be told. The sandbox answers 130
// incidents on the first try and 145 on the retry.
import { createHash } from 'node:crypto';
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { expect, it } from 'vitest';
import { SANDBOX_TILE, type Sandbox } from '../../sandbox/index.js';
import { runCli, sandboxEnv, summaryOf, writeWorkspace } from '../support/cli-harness.js';
import { exitWithin, spawnCli } from '../support/child-process.js';
import { addPostgresSettings, postgresBlocker, postgresOrSkip, usePostgresDatabase } from '../support/postgres.js';
import { detailQuery } from '../support/queries.js';
import { sandboxAndRootForAll, sandboxForAll } from '../support/sandbox-fixture.js';
import { describeUnless } from '../support/skip.js';
import { waitUntil } from '../support/wait-until.js';

const server = postgresOrSkip();
const FIRST_TRY = '2026-12-01T02:00:00.000Z';
const RETRY = '2026-12-01T02:10:00.000Z';

const fileContents = async (target: string) => {
  const bytes = await readFile(target);
  return `${bytes.length} bytes, sha256 ${createHash('sha256').update(bytes).digest('hex')}`;
};

describeUnless(postgresBlocker(server))('a retry of a run id after the source changed', () => {
  const fixture = sandboxAndRootForAll({ incidents: 130 });
  const changed = sandboxForAll({ incidents: 145 });
  const database = usePostgresDatabase(server!);

  /** A job's workspace on `sandbox` (under its own folder: a target, a history of its own), and one run of it. */
  const tryRun = async (sandbox: Sandbox, job: Record<string, unknown>, runId: string, now: string) => {
    const workspace = await writeWorkspace(path.join(fixture.root, String(job.name)), sandbox, [job]);
    const env = await addPostgresSettings(workspace.configFile, server!, database.name);
    const result = await runCli(['run', '--run-id', runId, '--json', '--config', workspace.configFile, '--jobs', workspace.jobsDir], {
      env: { ...sandboxEnv(sandbox), ...env },
      seams: { now: () => new Date(now) },
    });
    return { result, workspace, tile: summaryOf(result.stdout, 'run').tiles[0]! };
  };
  const tableRows = async (table: string) => JSON.stringify(await database.query(`SELECT * FROM public.${table} ORDER BY number`));
  const historyOf = (root: string, job: string) => path.join(root, '.tilehouse', 'history', job);

  /**
   * What SIGKILL leaves of a try in the run history: its record "running", naming no target. Right
   * after its publish (the default) the record says it had begun to publish (`publishingAt`, kept
   * from the finished record); `beforePublish`: killed mid-read, no `publishingAt`. `alive`: the
   * try's process is still there (a pod the Job controller replaced while it runs), else gone.
   */
  const asKilled = async (folder: string, runId: string, { beforePublish = false, alive = false } = {}) => {
    const name = (await readdir(folder)).find((candidate) => candidate.includes(runId))!;
    const record = JSON.parse(await readFile(path.join(folder, name), 'utf8')) as Record<string, unknown>;
    if (record.state !== 'running') expect(record.publishingAt, 'a try of a given run id marks its record before it publishes').toEqual(expect.any(String));
    const { finishedAt: _f, durationMs: _d, rows: _r, pages: _p, timings: _t, publishingAt, ...started } = record;
    const owner = alive ? String(record.owner) : String(record.owner).replace(/\+[^+]+$/, '+gone0');
    const heartbeatAt = alive ? new Date().toISOString() : record.startedAt;
    await writeFile(
      path.join(folder, name),
      JSON.stringify({ ...started, ...(beforePublish ? {} : { publishingAt }), state: 'running', owner, heartbeatAt, targets: [] }),
    );
  };

  const mixedJob = (name: string) => ({ name, tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'postgres', table: name }, { type: 'csv' }] });

  it('PostgreSQL and a CSV without a manifest: the retry adopts in both (the CSV by the run history), nothing committed, exit 0', async () => {
    const job = mixedJob('mixed_adopts');
    const first = await tryRun(fixture.sandbox, job, 'r-mixed-1', FIRST_TRY);
    expect(first.result.exitCode, first.result.stderr).toBe(0);
    const csv = first.tile.outputs.find((output) => output.sink === 'csv')!.target;
    const [fileBefore, tableBefore] = [await fileContents(csv), await tableRows('mixed_adopts')];

    const retry = await tryRun(changed.sandbox, job, 'r-mixed-1', RETRY);
    expect(retry.result.exitCode, retry.result.stderr).toBe(0);
    expect(retry.tile.rows).toBe(145);
    expect(retry.tile.outputs).toEqual([
      expect.objectContaining({ sink: 'postgres', target: 'public.mixed_adopts', rows: 130, adopted: true, keptEarlierPublish: true }),
      expect.objectContaining({
        sink: 'csv',
        target: csv,
        rows: 130,
        adopted: true,
        keptEarlierPublish: true,
        details: expect.objectContaining({ heldFrom: "the run history's record of run r-mixed-1" }),
      }),
    ]);
    expect(await fileContents(csv)).toBe(fileBefore);
    expect(await tableRows('mixed_adopts')).toBe(tableBefore);
    expect(retry.result.stderr).toContain(
      `: 145 rows read, 3 pages → public.mixed_adopts (adopted: nothing committed, 130 rows of the earlier publish), ${csv} (adopted: nothing committed, 130 rows of the earlier publish)\n`,
    );
    // Nothing of the retry is left beside the file (its temp file removed when it adopted).
    expect(await readdir(path.dirname(csv))).toEqual([path.basename(csv)]);
  });

  it('PostgreSQL holds the run id and the CSV cannot tell (its try killed, no manifest): nothing is published, run_id_unverified, exit 1', async () => {
    const job = mixedJob('mixed_unverified');
    const first = await tryRun(fixture.sandbox, job, 'r-mixed-2', FIRST_TRY);
    expect(first.result.exitCode, first.result.stderr).toBe(0);
    const csv = first.tile.outputs.find((output) => output.sink === 'csv')!.target;
    const [fileBefore, tableBefore] = [await fileContents(csv), await tableRows('mixed_unverified')];
    await asKilled(historyOf(first.workspace.root, job.name), 'r-mixed-2');

    const retry = await tryRun(changed.sandbox, job, 'r-mixed-2', RETRY);
    expect(retry.result.exitCode).toBe(1);
    expect(retry.tile).toMatchObject({ status: 'failed', outputs: [], error: { code: 'run_id_unverified' } });
    expect(retry.tile.error!.message).toBe(
      'job mixed_unverified: run id r-mixed-2 may already be published, and its targets cannot be shown to hold one answer for it: ' +
        'public.mixed_unverified holds it (the run ledger); ' +
        `${csv} cannot tell (no manifest describes the file; the run history has a try of run r-mixed-2 that ended without saying what it published (killed, or still running)). ` +
        'Nothing was published: publishing the current data where a target cannot tell could leave two answers under one run id. ' +
        'Re-run with a new --run-id to publish the current data to every target (a file sink with manifest: true can tell next time)',
    );
    expect(await fileContents(csv)).toBe(fileBefore);
    expect(await tableRows('mixed_unverified')).toBe(tableBefore);
    expect(retry.result.stderr).toContain('FAIL mixed_unverified (');
    expect(retry.result.stderr).toContain('run_id_unverified: run id r-mixed-2 may already be published');
  });

  it('a lone CSV without a manifest: a try killed after its publish leaves it unable to tell (run_id_unverified); a run id the run history has no record of is new, and publishes', async () => {
    const job = { name: 'lone_csv', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }] };
    const first = await tryRun(fixture.sandbox, job, 'r-lone', FIRST_TRY);
    expect(first.result.exitCode, first.result.stderr).toBe(0);
    const csv = first.tile.outputs[0]!.target;
    const before = await fileContents(csv);
    const folder = historyOf(first.workspace.root, job.name);
    await asKilled(folder, 'r-lone');

    const refused = await tryRun(changed.sandbox, job, 'r-lone', RETRY);
    expect(refused.result.exitCode).toBe(1);
    expect(refused.tile.error).toMatchObject({ code: 'run_id_unverified' });
    expect(refused.tile.error!.message).toContain(
      `${csv} cannot tell (no manifest describes the file; the run history has a try of run r-lone that ended without saying`,
    );
    expect(refused.tile.error!.message).toContain('. Nothing was published. Re-run with a new --run-id');
    expect(await fileContents(csv)).toBe(before);

    // The history keeps no record of the run id (every try's record gone): no try of it ran here, so the file is another run's.
    await rm(folder, { recursive: true });
    const fresh = await tryRun(changed.sandbox, job, 'r-lone', RETRY);
    expect(fresh.result.exitCode, fresh.result.stderr).toBe(0);
    expect(fresh.tile.outputs).toEqual([expect.objectContaining({ target: csv, rows: 145 })]);
    expect(fresh.tile.outputs[0]!.adopted).toBeUndefined();
    expect(await fileContents(csv)).not.toBe(before);
  });

  it('a lone CSV without a manifest: a try killed before it began to publish (mid-read) published nothing, so its retry publishes; one still running refuses', async () => {
    const job = { name: 'mid_read_csv', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }] };
    const first = await tryRun(fixture.sandbox, job, 'r-mid', FIRST_TRY);
    expect(first.result.exitCode, first.result.stderr).toBe(0);
    const csv = first.tile.outputs[0]!.target;
    const before = await fileContents(csv);
    const folder = historyOf(first.workspace.root, job.name);

    // Its process alive (its heartbeat fresh): it may still publish, so the retry cannot tell.
    await asKilled(folder, 'r-mid', { beforePublish: true, alive: true });
    const running = await tryRun(changed.sandbox, job, 'r-mid', RETRY);
    expect(running.result.exitCode).toBe(1);
    expect(running.tile.error).toMatchObject({ code: 'run_id_unverified' });
    expect(await fileContents(csv)).toBe(before);

    // Its process gone before it began to publish: the file is not that try's, and the retry publishes the current answer.
    await asKilled(folder, 'r-mid', { beforePublish: true });
    const retry = await tryRun(changed.sandbox, job, 'r-mid', RETRY);
    expect(retry.result.exitCode, retry.result.stderr).toBe(0);
    expect(retry.tile.outputs).toEqual([expect.objectContaining({ target: csv, rows: 145 })]);
    expect(retry.tile.outputs[0]!.adopted).toBeUndefined();
    expect(await fileContents(csv)).not.toBe(before);
  });

  it('a first try killed with SIGKILL right after its publish (a CSV with a manifest, its history record left "running"): the retry adopts it', async () => {
    const job = { name: 'killed_csv', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv', manifest: true }] };
    const workspace = await writeWorkspace(path.join(fixture.root, job.name), fixture.sandbox, [job]);
    const folder = historyOf(workspace.root, job.name);
    const target = path.join(workspace.outDir, 'killed_csv.csv');
    // The kill lands once the publish is logged, racing the history's end record: a try whose record
    // was ended before the kill landed is tried again under the next run id, until one is left "running".
    let runId = '';
    let killedAfterPublish = false;
    for (let attempt = 1; attempt <= 8 && !killedAfterPublish; attempt++) {
      runId = `r-killed-${attempt}`;
      const child = spawnCli(['run', '--run-id', runId, '--log-level', 'debug', '--config', workspace.configFile, '--jobs', workspace.jobsDir], {
        env: { ...process.env, ...sandboxEnv(fixture.sandbox), CI: '' },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr!.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
        if (stderr.includes('"msg":"published"')) child.kill('SIGKILL');
      });
      const exit = await exitWithin(child, 60_000);
      if (exit.signal !== 'SIGKILL') continue;
      await waitUntil(async () => (await readdir(folder).catch(() => [])).some((name) => name.includes(runId)), 'the try record');
      const name = (await readdir(folder)).find((candidate) => candidate.includes(runId))!;
      const record = JSON.parse(await readFile(path.join(folder, name), 'utf8')) as { state: string; targets: unknown[] };
      killedAfterPublish = record.state === 'running' && record.targets.length === 0;
    }
    expect(killedAfterPublish, 'a try killed after its publish and before its history record ended').toBe(true);
    const manifest = JSON.parse(await readFile(`${target}.manifest.json`, 'utf8')) as { runId: string; rows: number };
    expect(manifest).toMatchObject({ runId, rows: 130 });
    const before = await fileContents(target);

    // The retry's source is the changed sandbox.
    await writeWorkspace(workspace.root, changed.sandbox, [job]);
    const retry = await runCli(['run', '--run-id', runId, '--json', '--config', workspace.configFile, '--jobs', workspace.jobsDir], {
      env: sandboxEnv(changed.sandbox),
      seams: { now: () => new Date(RETRY) },
    });
    expect(retry.exitCode, retry.stderr).toBe(0);
    const tile = summaryOf(retry.stdout, 'run').tiles[0]!;
    expect(tile.outputs).toEqual([
      expect.objectContaining({ target, rows: 130, adopted: true, details: expect.objectContaining({ heldFrom: 'its manifest' }) }),
    ]);
    expect(await fileContents(target)).toBe(before);
  }, 240_000);
});
