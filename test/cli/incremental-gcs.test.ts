// An incremental job whose CSV sink writes gs:// objects: what each day's target holds is read from
// the `<object>.manifest.json` objects the sink publishes, on fake-gcs-server. The sandbox's clock
// is moved from run to run (a sandbox per "day"), as in incremental-run.test.ts.
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SANDBOX_TILE, startSandbox, type Sandbox } from '../../sandbox/index.js';
import { summarySchema } from '../../src/pipeline/summary-schema.js';
import { runCli, sandboxEnv, writeWorkspace } from '../support/cli-harness.js';
import { describeWithFakeGcs } from '../support/fake-gcs-server.js';
import { dailySeverityQuery } from '../support/queries.js';
import { spawnCli } from '../support/spawn-cli.js';
import { makeTempDir } from '../support/temp-dir.js';

const opened: Sandbox[] = [];
let root: string;
beforeAll(async () => {
  root = await makeTempDir();
});
afterAll(async () => {
  for (const sandbox of opened) await sandbox.close();
  await rm(root, { recursive: true, force: true });
});

async function sandboxAt(day: string): Promise<Sandbox> {
  const sandbox = await startSandbox({ incidents: 10_000, now: new Date(`${day}T12:00:00Z`) });
  opened.push(sandbox);
  return sandbox;
}

const job = (bucket: string) => ({
  name: 'daily',
  tile: SANDBOX_TILE,
  query: dailySeverityQuery,
  sinks: [{ type: 'csv', path: `gs://${bucket}/daily/{date}.csv`, manifest: true }],
  columns: { Day: { type: 'DATE' }, Incidents: { type: 'INT64' } },
  incremental: { item: 'day', bucketColumn: 'Day', startFrom: '2026-07-01', lookbackDays: 0 },
});

/** What the source holds for [from, to), straight from its own evaluator (no rw filter), as CSV text reads back. */
function sourceRows(sandbox: Sandbox, from: string, to: string): string[][] {
  const all = sandbox.evaluate({ ...dailySeverityQuery, items: dailySeverityQuery.items.map((item) => ({ ...item, filters: [] })) }, SANDBOX_TILE);
  return all.rows.filter((row) => (row[0] as string) >= from && (row[0] as string) < to).map((row) => row.map(String));
}

const exports = (sandbox: Sandbox) => sandbox.requests.filter((request) => request.endpoint === 'export').length;

describeWithFakeGcs('an incremental job writing gs:// objects', (gcs) => {
  /** `tilehouse run --json` as a user runs it: a child process, STORAGE_EMULATOR_HOST in its environment. */
  async function runChild(sandbox: Sandbox, bucket: string, name: string) {
    const workspace = await writeWorkspace(path.join(root, name), sandbox, [job(bucket)]);
    const result = await spawnCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir, '--json'], {
      env: { ...sandboxEnv(sandbox), STORAGE_EMULATOR_HOST: gcs.origin },
      timeoutMs: 90_000,
    });
    expect(result.code, result.stderr).toBe(0);
    const summary = summarySchema.parse(JSON.parse(result.stdout));
    if (summary.command !== 'run') throw new Error('not a run summary');
    return { ...result, summary, report: summary.incremental![0]! };
  }

  /** The same run in this process, with the test's storage client. */
  async function runHere(sandbox: Sandbox, bucket: string, name: string) {
    const workspace = await writeWorkspace(path.join(root, name), sandbox, [job(bucket)]);
    const result = await runCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir, '--json'], {
      env: sandboxEnv(sandbox),
      seams: { sinkOptions: { storageClient: gcs.storage } },
    });
    const summary = summarySchema.parse(JSON.parse(result.stdout));
    if (summary.command !== 'run') throw new Error('not a run summary');
    return { ...result, summary, report: summary.incremental![0]! };
  }

  async function objectRows(bucket: string, day: string): Promise<string[][]> {
    const [bytes] = await gcs.storage.bucket(bucket).file(`daily/${day}.csv`).download();
    const [header, ...rows] = parse(bytes) as string[][];
    expect(header).toEqual(['Day', 'Severity', 'Incidents']);
    return rows;
  }

  async function manifestOf(bucket: string, day: string): Promise<{ window: { from: string; to: string; open: boolean } }> {
    const [bytes] = await gcs.storage.bucket(bucket).file(`daily/${day}.csv.manifest.json`).download();
    return JSON.parse(bytes.toString('utf8')) as { window: { from: string; to: string; open: boolean } };
  }

  async function generations(bucket: string): Promise<Record<string, string>> {
    const [files] = await gcs.storage.bucket(bucket).getFiles();
    return Object.fromEntries(files.map((file) => [file.name, String(file.metadata.generation)]));
  }

  it('exports day 1 on day 1 (open), days 1-5 on day 5, each object exactly that day of the source, and only the open day 5 on a repeat', async () => {
    const bucket = await gcs.newBucket('incremental');
    const day1 = await sandboxAt('2026-07-01');
    const first = await runChild(day1, bucket, 'day-1');
    expect(first.report).toMatchObject({ today: '2026-07-01', firstRun: true, windows: [{ from: '2026-07-01', to: '2026-07-02' }], failed: [], left: [] });
    expect(Object.keys(await generations(bucket)).sort()).toEqual(['daily/2026-07-01.csv', 'daily/2026-07-01.csv.manifest.json']);
    expect(await objectRows(bucket, '2026-07-01')).toEqual(sourceRows(day1, '2026-07-01', '2026-07-02'));
    expect((await manifestOf(bucket, '2026-07-01')).window).toEqual({ from: '2026-07-01', to: '2026-07-02', open: true });

    const day5 = await sandboxAt('2026-07-05');
    const fifth = await runChild(day5, bucket, 'day-5');
    // Day 1 was exported while it was going on: open, so exported again, now whole.
    const days = ['2026-07-01', '2026-07-02', '2026-07-03', '2026-07-04', '2026-07-05'];
    expect(fifth.report.windows.map((window) => window.from)).toEqual(days);
    expect(fifth.report.reason).toContain('2026-07-01 published while open: exported again');
    for (const day of days) {
      const rows = sourceRows(day5, day, days[days.indexOf(day) + 1] ?? '2026-07-06');
      expect(rows.length, day).toBeGreaterThan(0);
      expect(await objectRows(bucket, day), day).toEqual(rows);
    }
    expect(await Promise.all(days.map(async (day) => (await manifestOf(bucket, day)).window.open))).toEqual([false, false, false, false, true]);
    const afterFifth = await generations(bucket);
    expect(Object.keys(afterFifth).length).toBe(10); // five objects, five manifests, no temp object left

    const requests = exports(day5);
    const repeat = await runChild(day5, bucket, 'day-5-repeat');
    expect(repeat.report).toMatchObject({ windows: [{ from: '2026-07-05', to: '2026-07-06' }], left: [], firstUnpublished: '2026-07-05' });
    expect(exports(day5)).toBe(requests + 1);
    // The closed days' objects and manifests were not written again; the open day's were.
    const afterRepeat = await generations(bucket);
    for (const name of Object.keys(afterFifth)) {
      if (name.startsWith('daily/2026-07-05')) expect(afterRepeat[name], name).not.toBe(afterFifth[name]);
      else expect(afterRepeat[name], name).toBe(afterFifth[name]);
    }
  }, 180_000);

  it('exports a day again when its object is not the one its manifest describes (replaced by another writer, or a run that died between the two)', async () => {
    const bucket = await gcs.newBucket('replaced');
    const day5 = await sandboxAt('2026-07-05');
    expect((await runHere(day5, bucket, 'replaced-1')).exitCode).toBe(0);
    const objects = gcs.storage.bucket(bucket);
    // Same size as before, other bytes, no tilehouse run id: only the run id can tell it apart.
    const [original] = await objects.file('daily/2026-07-03.csv').download();
    await objects.file('daily/2026-07-03.csv').save(Buffer.from(original.toString('latin1').replace(/SEV/g, 'XXX'), 'latin1'));
    // Another day's manifest cut short (not JSON): that day did not finish either.
    await objects.file('daily/2026-07-04.csv.manifest.json').save('{"manifestVersion":1,"fi');

    const again = await runHere(day5, bucket, 'replaced-2');
    expect(again.exitCode, again.stderr).toBe(0);
    expect(again.report.windows.map((window) => window.from)).toEqual(['2026-07-03', '2026-07-04', '2026-07-05']);
    expect(again.report.reason).toContain('resume after 2026-07-02');
    expect(await objectRows(bucket, '2026-07-03')).toEqual(sourceRows(day5, '2026-07-03', '2026-07-04'));
    expect((await runHere(day5, bucket, 'replaced-3')).report.windows).toEqual([{ from: '2026-07-05', to: '2026-07-06' }]);
  }, 120_000);

  it('fails with incremental_state_unreadable and exports nothing when the bucket cannot be read', async () => {
    const day5 = await sandboxAt('2026-07-05');
    const requests = exports(day5);
    const run = await runHere(day5, 'no-such-bucket-tilehouse', 'missing-bucket');
    expect(run.exitCode).toBe(1);
    expect(run.summary.tiles.map((tile) => tile.error?.code)).toEqual(['incremental_state_unreadable']);
    expect(run.report.error?.message).toBe(
      "job daily: cannot read gs://no-such-bucket-tilehouse/daily/{date}.csv's state: the bucket gs://no-such-bucket-tilehouse does not exist (or these credentials cannot see it)",
    );
    expect(run.report.windows).toEqual([]);
    expect(exports(day5)).toBe(requests);
  }, 60_000);
});
