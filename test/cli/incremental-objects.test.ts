// What an incremental job's object targets hold, read back the same way at gs:// and s3://
// (sinks/stores/window-open.ts, objectWindowsHeld): a day is held when its manifest describes its
// object (run id and size), and a bucket that cannot be read is an error, never "nothing held".
import path from 'node:path';
import { parse } from 'csv-parse/sync';
import { expect, it } from 'vitest';
import type { Sandbox } from '../../sandbox/index.js';
import { runCli, sandboxEnv, summaryOf, writeWorkspace } from '../support/cli-harness.js';
import { dailyIncrementalJob, dailySourceRows, daySandboxesForAll } from '../support/day-sandboxes.js';
import { describeWithObjectStores } from '../support/object-stores.js';

const sandboxes = daySandboxesForAll();

const exports = (sandbox: Sandbox) => sandbox.requests.filter((request) => request.endpoint === 'export').length;

describeWithObjectStores('an incremental job writing objects', (store) => {
  /** `tilehouse run --json` in this process, its CSV sink at `<scheme>://bucket/daily/{date}.csv` with manifests. */
  async function run(sandbox: Sandbox, bucket: string, name: string) {
    const job = dailyIncrementalJob({ type: 'csv', path: `${store.scheme}://${bucket}/daily/{date}.csv`, manifest: true });
    const workspace = await writeWorkspace(path.join(sandboxes.root, `${store.kind}-${name}`), sandbox, [job]);
    await store.configure(workspace.configFile);
    const result = await runCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir, '--json'], {
      env: sandboxEnv(sandbox),
      seams: store.seams(),
    });
    const summary = summaryOf(result.stdout, 'run');
    return { ...result, summary, report: summary.incremental![0]! };
  }

  it('exports a day again when its object is not the one its manifest describes (replaced by another writer, or a run that died between the two)', async () => {
    const bucket = await store.newBucket('replaced');
    const day5 = await sandboxes.at('2026-07-05');
    expect((await run(day5, bucket, 'replaced-1')).exitCode).toBe(0);
    // Same size as before, other bytes, no tilehouse run id: only the run id can tell it apart.
    const original = (await store.bytes(bucket, 'daily/2026-07-03.csv')).toString('utf8');
    await store.put(bucket, 'daily/2026-07-03.csv', original.replace(/SEV/g, 'XXX'));
    // Another day's manifest cut short (not JSON): that day did not finish either.
    await store.put(bucket, 'daily/2026-07-04.csv.manifest.json', '{"manifestVersion":1,"fi');

    const again = await run(day5, bucket, 'replaced-2');
    expect(again.exitCode, again.stderr).toBe(0);
    expect(again.report.windows.map((window) => window.from)).toEqual(['2026-07-03', '2026-07-04', '2026-07-05']);
    expect(again.report.reason).toContain('resume after 2026-07-02');
    const [header, ...rows] = parse(await store.bytes(bucket, 'daily/2026-07-03.csv')) as string[][];
    expect(header).toEqual(['Day', 'Severity', 'Incidents']);
    expect(rows).toEqual(dailySourceRows(day5, '2026-07-03', '2026-07-04'));
    expect((await run(day5, bucket, 'replaced-3')).report.windows).toEqual([{ from: '2026-07-05', to: '2026-07-06' }]);
  }, 120_000);

  it('fails with incremental_state_unreadable and exports nothing when the bucket cannot be read', async () => {
    const day5 = await sandboxes.at('2026-07-05');
    const requests = exports(day5);
    const failed = await run(day5, 'no-such-bucket-tilehouse', 'missing-bucket');
    expect(failed.exitCode).toBe(1);
    expect(failed.summary.tiles.map((tile) => tile.error?.code)).toEqual(['incremental_state_unreadable']);
    expect(failed.report.error?.message).toBe(
      `job daily: cannot read ${store.scheme}://no-such-bucket-tilehouse/daily/{date}.csv's state: the bucket ${store.scheme}://no-such-bucket-tilehouse does not exist (or these credentials cannot see it)`,
    );
    expect(failed.report.windows).toEqual([]);
    expect(exports(day5)).toBe(requests);
  }, 60_000);
});
