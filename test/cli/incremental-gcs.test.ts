// An incremental job whose CSV sink writes gs:// objects: what each day's target holds is read from
// the `<object>.manifest.json` objects the sink publishes, on fake-gcs-server. The sandbox's clock
// is moved from run to run (a sandbox per "day"), as in incremental-run.test.ts. A day replaced under
// its manifest and a bucket that cannot be read: incremental-objects.test.ts, for gs:// and s3://.
import path from 'node:path';
import { parse } from 'csv-parse/sync';
import { expect, it } from 'vitest';
import { type Sandbox } from '../../sandbox/index.js';
import { sandboxEnv, summaryOf, writeWorkspace } from '../support/cli-harness.js';
import { describeWithFakeGcs } from '../support/fake-gcs-server.js';
import { spawnCli } from '../support/spawn-cli.js';
import { dailyIncrementalJob, dailySourceRows, daySandboxesForAll } from '../support/day-sandboxes.js';

const sandboxes = daySandboxesForAll();

const job = (bucket: string) => dailyIncrementalJob({ type: 'csv', path: `gs://${bucket}/daily/{date}.csv`, manifest: true });

const exports = (sandbox: Sandbox) => sandbox.requests.filter((request) => request.endpoint === 'export').length;

describeWithFakeGcs('an incremental job writing gs:// objects', (gcs) => {
  /** `tilehouse run --json` as a user runs it: a child process, STORAGE_EMULATOR_HOST in its environment. */
  async function runChild(sandbox: Sandbox, bucket: string, name: string) {
    const workspace = await writeWorkspace(path.join(sandboxes.root, name), sandbox, [job(bucket)]);
    const result = await spawnCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir, '--json'], {
      env: { ...sandboxEnv(sandbox), STORAGE_EMULATOR_HOST: gcs.origin },
      timeoutMs: 90_000,
    });
    expect(result.code, result.stderr).toBe(0);
    const summary = summaryOf(result.stdout, 'run');
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
    const day1 = await sandboxes.at('2026-07-01');
    const first = await runChild(day1, bucket, 'day-1');
    expect(first.report).toMatchObject({ today: '2026-07-01', firstRun: true, windows: [{ from: '2026-07-01', to: '2026-07-02' }], failed: [], left: [] });
    expect(Object.keys(await generations(bucket)).sort()).toEqual(['daily/2026-07-01.csv', 'daily/2026-07-01.csv.manifest.json']);
    expect(await objectRows(bucket, '2026-07-01')).toEqual(dailySourceRows(day1, '2026-07-01', '2026-07-02'));
    expect((await manifestOf(bucket, '2026-07-01')).window).toEqual({ from: '2026-07-01', to: '2026-07-02', open: true });

    const day5 = await sandboxes.at('2026-07-05');
    const fifth = await runChild(day5, bucket, 'day-5');
    // Day 1 was exported while it was going on: open, so exported again, now whole.
    const days = ['2026-07-01', '2026-07-02', '2026-07-03', '2026-07-04', '2026-07-05'];
    expect(fifth.report.windows.map((window) => window.from)).toEqual(days);
    expect(fifth.report.reason).toContain('2026-07-01 published while open: exported again');
    for (const day of days) {
      const rows = dailySourceRows(day5, day, days[days.indexOf(day) + 1] ?? '2026-07-06');
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
  // A day replaced under its manifest, and a bucket that cannot be read: incremental-objects.test.ts, for gs:// and s3:// alike.
});
