// No BigQuery request waits without a deadline (issue 26, item 7): each API call is given up after
// sinks.bigquery.requestTimeoutMs and retried as a lost answer (the fixed job id makes that safe);
// the load's insert, which carries the whole file, waits as long as the job wait instead. Scripted
// fake (no emulator): the emulator answers everything at once.
import { setTimeout as sleep } from 'node:timers/promises';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BigQuerySink } from '../../../src/sinks/bigquery/bigquery-sink.js';
import { apiError, FAKE_PROJECT_ID, jobIdOf, jobResource, startFakeBigQuery, type FakeBigQuery, type Reply } from '../../support/bigquery-fake-server.js';
import { column, FAST, runContext } from './sink-fixtures.js';

const columns = [column('incident', 'STRING'), column('count', 'INT64')];
const TIMEOUT_MS = 150;
let fake: FakeBigQuery | undefined;
let directory: string | undefined;
afterEach(async () => {
  await fake?.close();
  if (directory) await rm(directory, { recursive: true, force: true });
});

describe('sinks.bigquery.requestTimeoutMs', () => {
  it('gives up a publish insert that does not answer in time, retries it, and adopts the job that ran (409); the slow load upload is waited for', async () => {
    const publishes = new Map<string, Reply>();
    let slowPolls = 0;
    fake = await startFakeBigQuery({
      // The load's upload answers after several request timeouts: it must not be cut.
      'jobs.insert': async (request) => {
        await sleep(TIMEOUT_MS * 3);
        return jobResource(jobIdOf(request), 'DONE');
      },
      // The copy runs, but its answer comes only after the client gave up; the retry meets 409.
      'jobs.copy': async (request) => {
        const id = jobIdOf(request);
        if (publishes.has(id)) return apiError(409, 'duplicate', `Already Exists: Job ${FAKE_PROJECT_ID}:US.${id}`);
        publishes.set(id, { status: 200, body: { ...(jobResource(id, 'DONE').body as object), statistics: { creationTime: '1', copy: { copiedRows: '1' } } } });
        await sleep(TIMEOUT_MS * 4);
        return publishes.get(id)!;
      },
      // The first status request of the adopted copy hangs past the timeout; the next one answers.
      'jobs.get': async (request) => {
        const id = jobIdOf(request);
        if (publishes.has(id) && slowPolls++ === 0) await sleep(TIMEOUT_MS * 4);
        return publishes.get(id) ?? jobResource(id, 'DONE');
      },
    });
    directory = await mkdtemp(join(tmpdir(), 'tilehouse-bq-timeout-'));
    const sink = new BigQuerySink({
      config: { type: 'bigquery', writeMode: 'replace', schema: 'freeze', table: 'incidents' },
      defaults: { dataset: 'ops', location: 'US', requestTimeoutMs: TIMEOUT_MS },
      client: fake.client(),
      tempDirectory: directory,
      ...FAST,
    });
    const writer = await sink.open(runContext({ columns, runId: 'r1' }));
    await writer.writeRows([['A-1', 1n]]);
    await writer.prepare();
    const result = await writer.publish();

    expect(fake.calls('jobs.insert').map(jobIdOf)).toEqual(['tilehouse_open_incidents_ops_incidents_r1_load']);
    expect(fake.calls('jobs.copy').map(jobIdOf)).toEqual([
      'tilehouse_open_incidents_ops_incidents_r1_publish',
      'tilehouse_open_incidents_ops_incidents_r1_publish',
    ]);
    expect(publishes.size).toBe(1);
    expect(slowPolls).toBeGreaterThanOrEqual(2);
    expect(result).toMatchObject({ rows: 1, details: { adopted: true, jobId: 'tilehouse_open_incidents_ops_incidents_r1_publish' } });
  });
});

describe('a stop while the publish job runs', () => {
  it('lets the publish go on until the cleanup deadline, then names the job whose outcome is unknown, and leaves the staging table named', async () => {
    fake = await startFakeBigQuery({
      // The copy never finishes; the staging table's delete never answers either.
      'jobs.copy': (request) => jobResource(jobIdOf(request), 'RUNNING'),
      'jobs.get': (request) => jobResource(jobIdOf(request), jobIdOf(request).endsWith('_publish') ? 'RUNNING' : 'DONE'),
      'tables.delete': () => new Promise<Reply>(() => undefined),
    });
    directory = await mkdtemp(join(tmpdir(), 'tilehouse-bq-stop-'));
    const stopDeadlineMs = 1_200;
    const sink = new BigQuerySink({
      config: { type: 'bigquery', writeMode: 'replace', schema: 'freeze', table: 'incidents' },
      defaults: { dataset: 'ops', location: 'US' },
      client: fake.client(),
      tempDirectory: directory,
      stopDeadlineMs,
      ...FAST,
      polling: { ...FAST.polling, initialIntervalMs: 20, maxIntervalMs: 20 },
    });
    const stop = new AbortController();
    const writer = await sink.open(runContext({ columns, runId: 'r1', signal: stop.signal }));
    await writer.writeRows([['A-1', 1n]]);
    await writer.prepare();
    const publishing = writer.publish().catch((error: unknown) => error);
    await sleep(100);
    const stoppedAt = Date.now();
    stop.abort(new Error('stopped by SIGTERM'));
    const failure = (await publishing) as Error & { code?: string };
    const waited = Date.now() - stoppedAt;
    // Polled on after the stop (a started publish is seen to its end) until the deadline less the
    // margin (a publish that never gave up would outlast the test's timeout).
    expect(waited).toBeGreaterThanOrEqual(stopDeadlineMs - 300 - 50);
    expect(failure).toMatchObject({ code: 'publish_outcome_unknown', targetKind: 'bigquery' });
    expect(failure.message).toContain('no answer about publish job tilehouse_open_incidents_ops_incidents_r1_publish before the stop deadline');
    await writer.abort();
    expect(writer.leftBehind?.()).toEqual([
      `BigQuery staging table ${FAKE_PROJECT_ID}.ops._tilehouse_staging_open_incidents_incidents_r1 (expires within a day)`,
    ]);
  });
});
