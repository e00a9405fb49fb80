// What a killed run left in a gs:// bucket, in `status`: a run SIGKILLed while its manifest's upload
// starts (the CSV's temp object whole, between prepare and publish) leaves that temp object;
// `status` lists it under `left behind:` with how it goes (the next run's sweep), the next run
// removes it, and `status` then lists nothing. Every command is a child, as a user runs it.
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { sandboxEnv, writeWorkspace } from '../support/cli-harness.js';
import { exitWithin, spawnCli as spawnChild } from '../support/child-process.js';
import { describeWithFakeGcs } from '../support/fake-gcs-server.js';
import { type GcsFaultProxy, startGcsFaultProxy } from '../support/gcs-fault-proxy.js';
import { detailQuery } from '../support/queries.js';
import { sandboxAndRootForAll } from '../support/sandbox-fixture.js';
import { spawnCli } from '../support/spawn-cli.js';
import { waitUntil } from '../support/wait-until.js';

const TARGET = 'nightly/incident_detail.csv';
const fixture = sandboxAndRootForAll({ incidents: 2_000 });

describeWithFakeGcs('status after a run to gs:// killed between prepare and publish', (gcs) => {
  let faults: GcsFaultProxy;
  beforeAll(async () => {
    faults = await startGcsFaultProxy(gcs.origin);
  });
  afterAll(async () => {
    await faults?.close();
  });

  it('lists the temp object with how it goes; the next run sweeps it; status then lists nothing', async () => {
    const bucket = await gcs.newBucket('left');
    const ws = await writeWorkspace(
      path.join(fixture.root, 'left'),
      fixture.sandbox,
      [{ name: 'incident_detail', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv', manifest: true }] }],
      { itemsPerPage: 500 },
    );
    const environment = parse(await readFile(ws.configFile, 'utf8')) as { sinks: { csv: { directory: string } } };
    environment.sinks.csv.directory = `gs://${bucket}/nightly`;
    await writeFile(ws.configFile, stringify(environment));
    const env = { ...sandboxEnv(fixture.sandbox), STORAGE_EMULATOR_HOST: faults.origin };
    const flags = ['--config', ws.configFile, '--jobs', ws.jobsDir];
    const objects = async () => (await gcs.storage.bucket(bucket).getFiles())[0].map((file) => file.name).sort();

    // The manifest's upload never starts: the CSV's temp object is whole, the publish not begun.
    faults.disarm();
    faults.fail({ on: 'session-start', fault: { kind: 'hang' }, urlContains: 'manifest.json' });
    const firedBefore = faults.fired.length;
    const child = spawnChild(['run', ...flags], { env: { ...process.env, ...env, CI: '' }, stdio: 'ignore' });
    const exited = exitWithin(child, 90_000);
    try {
      await waitUntil(() => faults.fired.slice(firedBefore).includes('session-start:hang'), "the manifest's upload held", {
        gaveUp: () => child.exitCode !== null,
        withinMs: 60_000,
      });
    } finally {
      child.kill('SIGKILL');
      await exited;
      faults.disarm();
    }
    const temps = await objects();
    expect(temps).toHaveLength(1);
    expect(temps[0]).toMatch(/^nightly\/\.incident_detail\.csv\.tilehouse-.+\.tmp$/);

    const status = await spawnCli(['status', ...flags], { env, timeoutMs: 60_000 });
    const lines = status.stdout.split('\n');
    expect(lines[1], status.stderr).toMatch(/^ {2}last run: KILLED, run /);
    expect(
      lines.slice(
        lines.indexOf('  left behind:'),
        lines.findIndex((line) => line.startsWith('  repair: ')),
      ),
    ).toEqual([
      '  left behind:',
      expect.stringMatching(/^ {4}its record .+\/\.tilehouse\/history\/incident_detail\/.+\.json, still "running"$/),
      expect.stringMatching(/^ {6}goes: kept as the history's account of the kill/),
      `    Cloud Storage temp object gs://${bucket}/${temps[0]}`,
      "      goes: its run's process is gone: the next run's sweep removes it (or the bucket lifecycle rule)",
    ]);

    const next = await spawnCli(['run', ...flags], { env, timeoutMs: 90_000 });
    expect(next.code, next.stderr).toBe(0);
    expect(await objects()).toEqual([TARGET, `${TARGET.replace(/\.csv$/, '.csv.manifest.json')}`].sort());
    const after = await spawnCli(['status', ...flags], { env, timeoutMs: 60_000 });
    expect(after.stdout.split('\n')[1]).toMatch(/^ {2}last run: OK, /);
    expect(after.stdout).not.toContain('left behind');
  }, 240_000);
});
