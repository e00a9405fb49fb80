// A stop that stops (issue 26, item 7), Cloud Storage's side: a run writing CSV to gs:// whose
// upload request never gets an answer, sent SIGTERM, exits 143 within the cleanup deadline
// (`stopDeadlineMs`), prints its summary, leaves the target as it was, and either removes its temp
// object or names it. fake-gcs-server answers every request at once, so gcs-fault-proxy.ts in front
// of it holds the requests a field network loses.
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { sandboxEnv, summaryOf, writeWorkspace } from '../support/cli-harness.js';
import { runStoppedWhen, splitStderr } from '../support/child-process.js';
import { describeWithFakeGcs } from '../support/fake-gcs-server.js';
import { startGcsFaultProxy, type FaultRule, type GcsFaultProxy } from '../support/gcs-fault-proxy.js';
import { detailQuery } from '../support/queries.js';
import { sandboxAndRootForAll } from '../support/sandbox-fixture.js';

const STOP_DEADLINE_MS = 4_000;
const PREVIOUS = 'Number,Created,Description,Severity\r\nprevious run\r\n';
const TARGET = 'nightly/incident_detail.csv';

// Enough rows for more than one 2 MiB chunk, so the upload sends a chunk before its final request.
const fixture = sandboxAndRootForAll({ incidents: 40_000 });

describeWithFakeGcs('tilehouse run to gs:// stopped while Cloud Storage does not answer', (gcs) => {
  let faults: GcsFaultProxy;
  beforeAll(async () => {
    faults = await startGcsFaultProxy(gcs.origin);
  });
  afterAll(async () => {
    await faults?.close();
  });

  /** Arms `rules`, runs `tilehouse run --json` as a child, and sends SIGTERM once `held` has fired. */
  async function runAndStop(name: string, bucket: string, rules: FaultRule[], held: string) {
    faults.disarm();
    for (const rule of rules) faults.fail(rule);
    const firedBefore = faults.fired.length;
    const ws = await writeWorkspace(
      path.join(fixture.root, name),
      fixture.sandbox,
      [{ name: 'incident_detail', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv', manifest: true }] }],
      { itemsPerPage: 1000 },
    );
    const environment = parse(await readFile(ws.configFile, 'utf8')) as { sinks: { csv: { directory: string } } };
    environment.sinks.csv.directory = `gs://${bucket}/nightly`;
    await writeFile(ws.configFile, stringify({ ...environment, stopDeadlineMs: STOP_DEADLINE_MS }));
    // Bounded well past the deadline, so that a run that overstays fails on elapsedMs, not here.
    const stopped = await runStoppedWhen(['run', '--config', ws.configFile, '--jobs', ws.jobsDir, '--json', '--run-id', `run-${name}`], {
      env: { ...process.env, ...sandboxEnv(fixture.sandbox), STORAGE_EMULATOR_HOST: faults.origin, CI: '' },
      detached: true,
      ready: () => faults.fired.slice(firedBefore).includes(held),
      awaited: `${held} (fired: ${faults.fired.slice(firedBefore).join(', ')})`,
      exitWithinMs: STOP_DEADLINE_MS + 20_000,
    });
    return { ...stopped, fired: faults.fired.slice(firedBefore) };
  }

  /**
   * Every line the process printed, judged: the summary on stdout says the tile failed as stopped
   * and what was left; on stderr the text lines are the signal's notice and the summary, each
   * expected; no line carries the client secret or claims anything was published.
   */
  function expectStoppedLines(run: { stdout: string; stderr: string }, leftBehind: string[]) {
    const summary = summaryOf(run.stdout, 'run');
    expect(summary.tiles).toHaveLength(1);
    expect(summary.tiles[0]).toMatchObject({ status: 'failed', outputs: [], error: { code: 'run_stopped' } });
    expect(summary.tiles[0]!.leftBehind ?? []).toEqual(leftBehind);
    const { logs, text } = splitStderr(run.stderr);
    expect(text.filter((line) => line !== '')).toEqual([
      `tilehouse: SIGTERM received; stopping cleanly within ${STOP_DEADLINE_MS / 1000} s (send again to exit at once)`,
      expect.stringMatching(/^run run-\S+: 0 succeeded, 1 failed in [\d.]+ s$/),
      expect.stringMatching(
        /^ {2}FAIL incident_detail \([\d.]+ s\): run_stopped: stopped by SIGTERM before publishing; every target still holds its previous run$/,
      ),
      // Where its time went; a stop after the writer opened has a prepare too.
      expect.stringMatching(/^ {7}time: source [\d.]+ s, reading [\d.]+ s(, prepare csv [\d.]+ s)?$/),
      ...leftBehind.map((left) => `       left behind: ${left}`),
    ]);
    for (const log of logs)
      expect(['run starting', 'run finished', 'csv: could not delete a temp object; a later sweep or the bucket lifecycle rule removes it']).toContain(
        (log.msg as string).startsWith('job incident_detail failed: ') ? 'run finished' : log.msg,
      );
    for (const line of `${run.stdout}\n${run.stderr}`.split('\n')) expect(line).not.toContain(fixture.sandbox.clientSecret);
    // What a person reads (text lines, log messages) never claims a publish or a success.
    for (const line of [...text, ...logs.map((log) => log.msg as string)])
      expect(line).not.toMatch(/\bpublished\b|\bsucceeded\b(?!, 1 failed)|cleanup did not finish/);
  }

  async function objectsIn(bucket: string): Promise<string[]> {
    const [files] = await gcs.storage.bucket(bucket).getFiles();
    return files.map((file) => file.name).sort();
  }

  it('exits 143 within stopDeadlineMs when a chunk request hangs; the target keeps its previous content and nothing is left', async () => {
    const bucket = await gcs.newBucket('stop-chunk');
    await gcs.storage.bucket(bucket).file(TARGET).save(PREVIOUS, { resumable: false });
    const run = await runAndStop('chunk', bucket, [{ on: 'chunk', fault: { kind: 'hang' } }], 'chunk:hang');
    expect(run.exit.code, run.stderr).toBe(143);
    expect(run.exit.elapsedMs, run.stderr).toBeLessThan(STOP_DEADLINE_MS);
    expect(run.fired).toEqual(['chunk:hang']);
    expect((await gcs.storage.bucket(bucket).file(TARGET).download())[0].toString()).toBe(PREVIOUS);
    // The upload never sent its final request, so no temp object was created: none to name.
    expect(await objectsIn(bucket)).toEqual([TARGET]);
    expectStoppedLines(run, []);
  }, 120_000);

  it("exits 143 within stopDeadlineMs when the temp object's delete hangs after the stop, naming the temp object", async () => {
    const bucket = await gcs.newBucket('stop-delete');
    await gcs.storage.bucket(bucket).file(TARGET).save(PREVIOUS, { resumable: false });
    // The stop comes while the manifest's upload starts: the CSV's temp object is whole by then.
    const run = await runAndStop(
      'delete',
      bucket,
      [
        { on: 'session-start', fault: { kind: 'hang' }, urlContains: 'manifest.json' },
        { on: 'delete', fault: { kind: 'hang' } },
      ],
      'session-start:hang',
    );
    expect(run.exit.code, run.stderr).toBe(143);
    expect(run.exit.elapsedMs, run.stderr).toBeLessThan(STOP_DEADLINE_MS);
    expect(run.fired).toEqual(['session-start:hang', 'delete:hang']);
    expect((await gcs.storage.bucket(bucket).file(TARGET).download())[0].toString()).toBe(PREVIOUS);
    // The CSV's temp object stays (its delete was never answered) and is named; the manifest's
    // upload never sent its final request, so its temp object does not exist and is not named.
    const temps = (await objectsIn(bucket)).filter((name) => name !== TARGET);
    expect(temps).toHaveLength(1);
    expect(temps[0]).toMatch(/^nightly\/\.incident_detail\.csv\.tilehouse-run-delete\+.*\.tmp$/);
    expectStoppedLines(run, [`Cloud Storage temp object gs://${bucket}/${temps[0]} (removed by a later run's sweep or the bucket lifecycle rule)`]);
  }, 120_000);

  it('exits 143 within stopDeadlineMs when the rewrite onto the target hangs after the stop; the summary says its outcome is unknown, never that the previous run is kept', async () => {
    const bucket = await gcs.newBucket('stop-rewrite');
    await gcs.storage.bucket(bucket).file(TARGET).save(PREVIOUS, { resumable: false });
    // The publish has started (rewrite sent, never answered) when the stop comes. It waits until the
    // cleanup deadline, which leaves no time to read the target or to delete the temp objects.
    const run = await runAndStop('rewrite', bucket, [{ on: 'rewrite', fault: { kind: 'hang' }, urlContains: 'incident_detail.csv?' }], 'rewrite:hang');
    expect(run.exit.code, run.stderr).toBe(143);
    expect(run.exit.elapsedMs, run.stderr).toBeLessThan(STOP_DEADLINE_MS);
    expect(run.fired).toEqual(['rewrite:hang']);
    // The proxy never forwarded the rewrite: the target is as it was, but the run could not see that.
    expect((await gcs.storage.bucket(bucket).file(TARGET).download())[0].toString()).toBe(PREVIOUS);
    const temps = (await objectsIn(bucket)).filter((name) => name !== TARGET);
    expect(temps).toHaveLength(2);
    const summary = summaryOf(run.stdout, 'run');
    const tile = summary.tiles[0]!;
    expect(tile).toMatchObject({ status: 'failed', outputs: [], error: { code: 'publish_outcome_unknown', targetKind: 'gcs', format: 'csv' } });
    expect(tile.error!.message).toContain("whether the target now holds this run's object is unknown");
    // Both temp objects (the CSV's and the manifest's) are whole and were not removed: both named.
    expect([...(tile.leftBehind ?? [])].sort()).toEqual(
      temps.map((name) => `Cloud Storage temp object gs://${bucket}/${name} (removed by a later run's sweep or the bucket lifecycle rule)`).sort(),
    );
    const { logs, text } = splitStderr(run.stderr);
    for (const left of tile.leftBehind!) expect(text).toContain(`       left behind: ${left}`);
    expect(text).toContainEqual(expect.stringMatching(/^ {2}FAIL incident_detail \([\d.]+ s\): publish_outcome_unknown: /));
    for (const line of `${run.stdout}\n${run.stderr}`.split('\n')) expect(line).not.toContain(fixture.sandbox.clientSecret);
    for (const line of [...text, ...logs.map((log) => log.msg as string), tile.error!.message]) {
      expect(line).not.toMatch(
        /\bpublished\b(?! nothing)|previous run (still|kept)|still holds its previous run|published nothing|untouched|cleanup did not finish/,
      );
    }
  }, 120_000);
});
