// What a killed run left in a bucket, in `status` (issue 63): a run streaming a multipart upload to
// an s3:// temp key, SIGKILLed after its first part, leaves the incomplete upload; `status` lists it
// under `left behind:` with how it goes (the next run's sweep), the next run aborts it, and `status`
// then lists nothing.
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { runCli, sandboxEnv, writeWorkspace } from '../support/cli-harness.js';
import { exitWithin, spawnCli } from '../support/child-process.js';
import { detailQuery } from '../support/queries.js';
import { describeWithS3, keysOf, TEST_AWS_ENV } from '../support/s3-server.js';
import { sandboxAndRootForAll } from '../support/sandbox-fixture.js';
import { waitUntil } from '../support/wait-until.js';

// Well over one 5 MiB part, slow enough to be killed mid-stream.
const fixture = sandboxAndRootForAll({ incidents: 120_000, latencyMs: 40 });

describeWithS3('status after a run to s3:// killed mid-upload', (s3) => {
  it('lists the incomplete multipart upload with how it goes; the next run aborts it; status then lists nothing', async () => {
    const bucket = await s3.newBucket('left');
    const ws = await writeWorkspace(
      path.join(fixture.root, 'left'),
      fixture.sandbox,
      [{ name: 'incident_detail', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }] }],
      { itemsPerPage: 1000, concurrency: 1 },
    );
    const environment = parse(await readFile(ws.configFile, 'utf8')) as { sinks: Record<string, unknown> };
    environment.sinks = { csv: { directory: `s3://${bucket}/nightly` }, s3: { endpoint: s3.endpoint } };
    await writeFile(ws.configFile, stringify(environment));
    const env = { ...sandboxEnv(fixture.sandbox), ...TEST_AWS_ENV };
    const flags = ['--config', ws.configFile, '--jobs', ws.jobsDir];

    const seenBefore = s3.proxy.seen.length;
    const child = spawnCli(['run', ...flags], { env: { ...process.env, ...env, CI: '' }, stdio: 'ignore' });
    const exited = exitWithin(child, 90_000);
    await waitUntil(() => s3.proxy.seen.slice(seenBefore).some((line) => line.includes(bucket) && line.startsWith('upload-part')), 'a part of the upload', {
      gaveUp: () => child.exitCode !== null,
      withinMs: 60_000,
    });
    child.kill('SIGKILL');
    expect((await exited).signal).toBe('SIGKILL');
    await s3.proxy.settled();
    const left = await keysOf(s3.client, bucket);
    expect(left).toHaveLength(1);
    expect(left[0]).toMatch(/^nightly\/\.incident_detail\.csv\.tilehouse-.+\.tmp \(upload\)$/);
    const tempKey = left[0]!.replace(/ \(upload\)$/, '');

    const status = await runCli(['status', ...flags], { env });
    const lines = status.stdout.split('\n');
    expect(lines[1]).toMatch(/^ {2}last run: KILLED, run /);
    const block = lines.slice(
      lines.indexOf('  left behind:'),
      lines.findIndex((line) => line.startsWith('  repair: ')),
    );
    expect(block).toEqual([
      '  left behind:',
      expect.stringMatching(/^ {4}its record .+\/\.tilehouse\/history\/incident_detail\/.+\.json, still "running"$/),
      expect.stringMatching(/^ {6}goes: kept as the history's account of the kill/),
      `    S3 temp object s3://${bucket}/${tempKey} (incomplete multipart upload)`,
      "      goes: its run's process is gone: the next run's sweep removes it (or the bucket lifecycle rule)",
    ]);

    // The named way: the next run's sweep aborts the upload.
    const next = await runCli(['run', ...flags], { env });
    expect(next.exitCode, next.stderr).toBe(0);
    expect(await keysOf(s3.client, bucket)).toEqual(['nightly/incident_detail.csv']);
    const after = await runCli(['status', ...flags], { env });
    expect(after.stdout.split('\n')[1]).toMatch(/^ {2}last run: OK, /);
    expect(after.stdout).not.toContain('left behind');
    expect(after.stdout).not.toContain(tempKey);
  }, 180_000);
});
