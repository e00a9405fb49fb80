import { mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { loadEnvironment, type LoadedJob } from '../../src/config/load-config.js';
import { readJobHistory } from '../../src/history/read-history.js';
import { openHistoryDocuments, RunHistory } from '../../src/history/run-history.js';
import type { StoreSeams } from '../../src/sinks/stores/registry.js';
import { jobRunSummary } from '../support/job-run-summary.js';
import { describeWithObjectStores } from '../support/object-stores.js';
import { makeTempDir } from '../support/temp-dir.js';

/**
 * The run history in each place it can be (a local directory, a gs:// and an s3:// prefix, one
 * body for all as the object stores' other tests): one document per run, written whole, so runs
 * at the same time never lose each other's records, and only the newest `keepPerJob` kept.
 */

const logger = pino({ level: 'silent' });

const job = (tile = 'tile-1', filter = '0') =>
  ({
    name: 'incident_detail',
    tile,
    file: 'jobs/incident_detail.yaml',
    timezone: 'UTC',
    query: { items: [{ header: 'Number', formula: '[incident.number]', dataType: 'number', filters: [{ operator: 'gt', values: [filter] }] }] },
    sinks: [{ type: 'csv' }],
  }) as unknown as LoadedJob;

interface Place {
  /** A workspace whose history is at a fresh location in this place. */
  workspace(keepPerJob: number): Promise<{ environment: Awaited<ReturnType<typeof loadEnvironment>>; configFile: string }>;
  seams(): StoreSeams;
}

async function writeEnvironment(history: Record<string, unknown>, configure?: (file: string) => Promise<void>) {
  const root = await makeTempDir();
  const configFile = path.join(root, 'env.yaml');
  await writeFile(
    configFile,
    stringify({ source: { baseUrl: 'http://127.0.0.1:9', authUrl: 'http://127.0.0.1:9', clientId: '${ID}', clientSecret: '${SECRET}' }, sinks: {}, history }),
  );
  await configure?.(configFile);
  return { environment: await loadEnvironment(configFile), configFile };
}

function historyBody(place: Place): void {
  it('keeps one whole record per run: five runs of one job at once lose none', async () => {
    const workspace = await place.workspace(100);
    const runIds = ['20261201T020000Z-aaaaa1', '20261201T020000Z-aaaaa2', '20261201T020000Z-aaaaa3', '20261201T020000Z-aaaaa4', '20261201T020000Z-aaaaa5'];
    await Promise.all(
      runIds.map(async (runId, index) => {
        const history = await RunHistory.open(workspace, logger, place.seams());
        const run = await history.begin([job()], { runId, startedAt: new Date('2026-12-01T02:00:00Z'), trigger: 'run' });
        await run.finish([jobRunSummary({ job: 'incident_detail', runId, rows: index, outputs: [{ sink: 'csv', target: `out/${index}.csv`, rows: index }] })]);
        await run.end(undefined);
      }),
    );
    const documents = await openHistoryDocuments(workspace, place.seams());
    const read = await readJobHistory(documents, 'incident_detail', { newest: 10 });
    expect(read.latest.map((judged) => judged.record.runId).sort()).toEqual(runIds);
    expect(read.latest.map((judged) => [judged.verdict, judged.record.rows, judged.record.targets[0]?.target]).sort()).toEqual(
      runIds.map((_, index) => ['ok', index, `out/${index}.csv`]),
    );
  });

  it('keeps the newest keepPerJob records of a job, and the old values of its definition', async () => {
    const workspace = await place.workspace(3);
    const history = await RunHistory.open(workspace, logger, place.seams());
    for (const day of [1, 2, 3, 4, 5]) {
      const runId = `2026120${day}T020000Z-bbbbb${day}`;
      const run = await history.begin([job('tile-1', String(day))], { runId, startedAt: new Date(`2026-12-0${day}T02:00:00Z`), trigger: 'schedule' });
      await run.finish([jobRunSummary({ job: 'incident_detail', runId })]);
      await run.end(undefined);
    }
    const documents = await openHistoryDocuments(workspace, place.seams());
    expect((await documents.list('incident_detail')).sort()).toEqual([
      '20261203T020000.000Z_20261203T020000Z-bbbbb3.json',
      '20261204T020000.000Z_20261204T020000Z-bbbbb4.json',
      '20261205T020000.000Z_20261205T020000Z-bbbbb5.json',
    ]);
    const read = await readJobHistory(documents, 'incident_detail', { newest: 1 });
    expect(read.latest[0]?.record.definition.values['query.filters:Number']).toEqual([{ operator: 'gt', values: ['5'] }]);
    expect(await read.find('20261201T020000Z-bbbbb1')).toBeUndefined();
    expect((await read.find('20261203T020000Z-bbbbb3'))?.record.trigger).toBe('schedule');
  });

  it("keeps a record per shard of an Indexed Job's backfill (one run id, one start) and reads them all back with their shards", async () => {
    const workspace = await place.workspace(100);
    // A run id may hold dots and the word shard: only the name's own suffix is a shard.
    const runId = 'backfill.shard-3-of-9';
    const startedAt = new Date('2026-12-01T03:00:00Z');
    await Promise.all(
      [0, 1, 2].map(async (index) => {
        const history = await RunHistory.open(workspace, logger, place.seams());
        const run = await history.begin([job()], { runId, startedAt, trigger: 'backfill', shard: { index, count: 3 } });
        await run.finish([jobRunSummary({ job: 'incident_detail', runId, rows: index })]);
        await run.end(undefined);
      }),
    );
    const unsharded = await (await RunHistory.open(workspace, logger, place.seams())).begin([job()], { runId, startedAt, trigger: 'backfill' });
    await unsharded.end({ code: 'run_stopped', message: 'stopped by SIGTERM' });
    const documents = await openHistoryDocuments(workspace, place.seams());
    expect((await documents.list('incident_detail')).sort()).toEqual([
      `20261201T030000.000Z_${runId}.json`,
      `20261201T030000.000Z_${runId}~shard-0-of-3.json`,
      `20261201T030000.000Z_${runId}~shard-1-of-3.json`,
      `20261201T030000.000Z_${runId}~shard-2-of-3.json`,
    ]);
    const all = await (await readJobHistory(documents, 'incident_detail', { newest: 0 })).findAll(runId);
    const byShard = all.map((judged) => ({ shard: judged.shard, rows: judged.record.rows, verdict: judged.verdict }));
    byShard.sort((a, b) => (a.shard?.index ?? -1) - (b.shard?.index ?? -1));
    expect(byShard).toEqual([
      { shard: undefined, rows: undefined, verdict: 'stopped' },
      { shard: { index: 0, count: 3 }, rows: 0, verdict: 'ok' },
      { shard: { index: 1, count: 3 }, rows: 1, verdict: 'ok' },
      { shard: { index: 2, count: 3 }, rows: 2, verdict: 'ok' },
    ]);
  });

  it('replaces the "running" record of a run by its end; jobs the run never reached end as stopped', async () => {
    const workspace = await place.workspace(100);
    const history = await RunHistory.open(workspace, logger, place.seams());
    const other = { ...job(), name: 'incident_other' } as LoadedJob;
    const run = await history.begin([job(), other], { runId: '20261201T020000Z-ccccc1', startedAt: new Date('2026-12-01T02:00:00Z'), trigger: 'run' });
    const documents = await openHistoryDocuments(workspace, place.seams());
    expect((await readJobHistory(documents, 'incident_other', { newest: 1 })).latest[0]?.verdict).toBe('running');
    await run.finish([jobRunSummary({ job: 'incident_detail', runId: '20261201T020000Z-ccccc1' })]);
    await run.end({ code: 'run_stopped', message: 'stopped by SIGTERM' });
    expect((await readJobHistory(documents, 'incident_detail', { newest: 5 })).latest.map((judged) => judged.verdict)).toEqual(['ok']);
    const stopped = (await readJobHistory(documents, 'incident_other', { newest: 5 })).latest;
    expect(stopped.map((judged) => [judged.verdict, judged.record.error?.code])).toEqual([['stopped', 'run_stopped']]);
  });
}

describe('the run history in a local directory', () => {
  historyBody({
    workspace: (keepPerJob) => writeEnvironment({ location: 'state/history', keepPerJob }),
    seams: () => ({}),
  });

  it('takes a relative directory from the environment file, not from where the command started', async () => {
    const workspace = await writeEnvironment({ location: 'state/history' });
    const history = await RunHistory.open(workspace, logger);
    await (await history.begin([job()], { runId: 'r1', startedAt: new Date('2026-12-01T02:00:00Z'), trigger: 'run' })).end(undefined);
    expect(await readdir(path.join(path.dirname(workspace.configFile), 'state/history/incident_detail'))).toEqual(['20261201T020000.000Z_r1.json']);
  });

  it('logs a history it cannot write and lets the run go on', async () => {
    const workspace = await writeEnvironment({ location: 'history' });
    // A file where the job's folder should be: every write fails.
    await mkdir(path.join(path.dirname(workspace.configFile), 'history'), { recursive: true });
    await writeFile(path.join(path.dirname(workspace.configFile), 'history', 'incident_detail'), 'not a folder');
    const lines: Array<Record<string, unknown>> = [];
    const capture = pino({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const history = await RunHistory.open(workspace, capture);
    const run = await history.begin([job()], { runId: 'r1', startedAt: new Date('2026-12-01T02:00:00Z'), trigger: 'run' });
    await run.end(undefined);
    expect(lines.map((line) => line.code)).toEqual(['history_unavailable', 'history_unavailable']);
    expect(String(lines[0]?.msg)).toMatch(
      /^run history history: writing the record of run r1 of job incident_detail failed: .*; the run's outcome is unchanged$/,
    );
  });
});

describeWithObjectStores('the run history', (store) => {
  historyBody({
    async workspace(keepPerJob) {
      const bucket = await store.newBucket('history');
      return writeEnvironment({ location: `${store.scheme}://${bucket}/tilehouse/history`, keepPerJob }, (file) => store.configure(file));
    },
    seams: () => store.sinkOptions(),
  });
});
