// A stop that stops, S3's side: a run streaming a multipart upload to an s3:// temp key, sent
// SIGTERM after its first part, exits 143, leaves the target as it was, and aborts its multipart
// upload (and deletes its temp keys): nothing is left in the bucket but the previous object.
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { sandboxEnv, summaryOf, writeWorkspace } from '../support/cli-harness.js';
import { runStoppedWhen } from '../support/child-process.js';
import { detailQuery } from '../support/queries.js';
import { describeWithS3, getBytes, keysOf, putBytes, TEST_AWS_ENV } from '../support/s3-server.js';
import { sandboxAndRootForAll } from '../support/sandbox-fixture.js';

const STOP_DEADLINE_MS = 4_000;
const PREVIOUS = 'Number,Created,Description,Severity\r\nprevious run\r\n';
const TARGET = 'nightly/incident_detail.csv';

// Well over one 5 MiB part, slow enough to be stopped mid-stream.
const fixture = sandboxAndRootForAll({ incidents: 120_000, latencyMs: 40 });

describeWithS3('tilehouse run to s3:// stopped mid-upload', (s3) => {
  it('exits 143, keeps the previous object, and aborts its multipart upload: nothing else is left', async () => {
    const bucket = await s3.newBucket('stop');
    await putBytes(s3.client, bucket, TARGET, PREVIOUS);
    const ws = await writeWorkspace(
      path.join(fixture.root, 'stop'),
      fixture.sandbox,
      [{ name: 'incident_detail', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv', manifest: true }] }],
      { itemsPerPage: 1000, concurrency: 1 },
    );
    const environment = parse(await readFile(ws.configFile, 'utf8')) as { sinks: Record<string, unknown> };
    environment.sinks = { csv: { directory: `s3://${bucket}/nightly` }, s3: { endpoint: s3.endpoint } };
    await writeFile(ws.configFile, stringify({ ...environment, stopDeadlineMs: STOP_DEADLINE_MS }));
    const seenBefore = s3.proxy.seen.length;
    const sent = () => s3.proxy.seen.slice(seenBefore).filter((line) => line.includes(bucket));
    const { exit, stdout, stderr } = await runStoppedWhen(['run', '--config', ws.configFile, '--jobs', ws.jobsDir, '--json'], {
      env: { ...process.env, ...sandboxEnv(fixture.sandbox), ...TEST_AWS_ENV, CI: '' },
      ready: () => sent().some((line) => line.startsWith('upload-part')),
      awaited: 'a part of the upload',
      exitWithinMs: STOP_DEADLINE_MS + 20_000,
    });
    await s3.proxy.settled();
    expect(exit.code, stderr).toBe(143);
    expect(exit.elapsedMs).toBeLessThan(STOP_DEADLINE_MS + 3_000);
    expect(sent().some((line) => line.startsWith('abort-multipart'))).toBe(true);
    expect(sent().some((line) => line.startsWith('copy'))).toBe(false);
    expect((await getBytes(s3.client, bucket, TARGET)).toString()).toBe(PREVIOUS);
    expect(await keysOf(s3.client, bucket)).toEqual([TARGET]);
    const summary = summaryOf(stdout, 'run');
    expect(summary.tiles[0]).toMatchObject({ status: 'failed' });
    expect(summary.tiles[0]!.leftBehind ?? []).toEqual([]);
  }, 90_000);
});
