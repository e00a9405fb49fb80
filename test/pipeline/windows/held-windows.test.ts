import { createHash } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { environmentSchema } from '../../../src/config/environment-schema.js';
import { jobSchema } from '../../../src/config/job-schema.js';
import type { LoadedJob } from '../../../src/config/load-config.js';
import { splitWindows, type DateWindow } from '../../../src/pipeline/windows/date-windows.js';
import { doneWindowsOf, ResumeUnsupportedError, targetStatesOf, windowsDoneEverywhere } from '../../../src/pipeline/windows/held-windows.js';
import { buildSinks } from '../../../src/sinks/build-sinks.js';
import { windowStateReaders, WindowStateUnreadableError, type WindowStateReader } from '../../../src/sinks/registry.js';
import { silentLogger } from '../../support/fake-sinks.js';
import { incidentDaysQuery } from '../../support/queries.js';
import { tempDirEachTest } from '../../support/temp-dir-hooks.js';

/** A target that holds `done` closed and `open` published while open, and records what it was asked. */
function fakeReader(target: string, done: readonly string[], open: readonly string[] = []): WindowStateReader & { asked: DateWindow[][] } {
  const asked: DateWindow[][] = [];
  return {
    target,
    asked,
    async heldWindows(windows) {
      asked.push([...windows]);
      const firsts = new Set(windows.map((window) => window.from));
      return { done: new Set(done.filter((day) => firsts.has(day))), open: new Set(open.filter((day) => firsts.has(day))) };
    },
  };
}

const days = splitWindows('2026-07-01', '2026-07-06', 'day');

describe('targetStatesOf', () => {
  it("gives each target its closed, open and (by absence) missing days, in the readers' order", async () => {
    const csv = fakeReader('out/daily/{date}.csv', ['2026-07-01', '2026-07-02'], ['2026-07-03']);
    const table = fakeReader('p.d.incidents', ['2026-07-01'], []);
    const states = await targetStatesOf([csv, table], days);
    expect(states.map(({ target, done, open }) => ({ target, done: [...done], open: [...(open ?? [])] }))).toEqual([
      { target: 'out/daily/{date}.csv', done: ['2026-07-01', '2026-07-02'], open: ['2026-07-03'] },
      { target: 'p.d.incidents', done: ['2026-07-01'], open: [] },
    ]);
    expect(csv.asked).toEqual([days]);
  });

  it('stops at the first target whose state cannot be read: nothing is planned on a guess', async () => {
    const unreadable: WindowStateReader = {
      target: 'p.d.incidents',
      heldWindows: () => Promise.reject(new WindowStateUnreadableError('ledger unreachable')),
    };
    const after = fakeReader('out/{date}.csv', []);
    await expect(targetStatesOf([unreadable, after], days)).rejects.toMatchObject({ code: 'incremental_state_unreadable' });
    expect(after.asked).toEqual([]);
  });

  it('is empty for a job with no reader (no target keeps state)', async () => {
    expect(await targetStatesOf([], days)).toEqual([]);
  });
});

describe('windowsDoneEverywhere', () => {
  it('keeps only the windows every target holds closed: open or missing anywhere runs again', async () => {
    const done = await windowsDoneEverywhere(
      [
        fakeReader('a', ['2026-07-01', '2026-07-02', '2026-07-04'], ['2026-07-03']),
        fakeReader('b', ['2026-07-01', '2026-07-03', '2026-07-04'], ['2026-07-02']),
      ],
      days,
    );
    expect([...done].sort()).toEqual(['2026-07-01', '2026-07-04']);
  });

  // Not vacuously: an intersection over zero targets would count every window done, and a
  // --resume would then skip the whole backfill (exit 0, nothing written).
  it('counts no window done when no reader answers at all, and none when a target holds nothing', async () => {
    expect([...(await windowsDoneEverywhere([], days))]).toEqual([]);
    expect([...(await windowsDoneEverywhere([fakeReader('a', ['2026-07-01']), fakeReader('b', [])], days))]).toEqual([]);
  });

  it('reads week windows by their first day', async () => {
    const weeks = splitWindows('2026-07-01', '2026-07-15', 'week');
    expect([...(await windowsDoneEverywhere([fakeReader('a', ['2026-07-08'])], weeks))]).toEqual(['2026-07-08']);
  });
});

describe('doneWindowsOf (backfill --resume), per sink kind', () => {
  const temp = tempDirEachTest();

  const environment = (sinks: Record<string, unknown>) =>
    environmentSchema.parse({ source: { baseUrl: 'http://127.0.0.1:1', authUrl: 'http://127.0.0.1:1', clientId: '${ID}', clientSecret: '${SECRET}' }, sinks });
  const job = (sinks: unknown[]): LoadedJob => ({
    ...jobSchema.parse({ name: 'daily', tile: 'tile-1', query: incidentDaysQuery, backfill: { item: 'day' }, sinks }),
    file: 'jobs/daily.yaml',
    timezone: 'UTC',
  });

  it('refuses a CSV sink without manifests with backfill_resume_unsupported, exit 2, naming the sink to change', async () => {
    const error = await doneWindowsOf(
      job([{ type: 'csv', path: 'out/{date}.csv' }]),
      [],
      days,
      environment({ csv: { directory: 'out' } }),
      {},
      silentLogger,
    ).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ResumeUnsupportedError);
    expect(error).toMatchObject({
      code: 'backfill_resume_unsupported',
      exitCode: 2,
      message: 'backfill: --resume tells a finished CSV window by its manifest: set manifest: true on sinks[0] of daily (then run once without --resume)',
    });
  });

  it('refuses a BigQuery sink when the run ledger is off: there is nothing to read its windows from', async () => {
    const error = await doneWindowsOf(
      job([{ type: 'bigquery', table: 'incidents', writeMode: 'partition' }]),
      [],
      days,
      environment({ bigquery: { projectId: 'p', dataset: 'd', runLedger: false } }),
      {},
      silentLogger,
    ).catch((caught: unknown) => caught);
    expect(error).toMatchObject({
      code: 'backfill_resume_unsupported',
      exitCode: 2,
      message: 'backfill: --resume reads the BigQuery run ledger, which sinks.bigquery.runLedger: false turns off',
    });
  });

  it('reads a CSV target by its manifests: closed and matching is done; open, changed, unfinished or cut short runs again', async () => {
    const root = temp.path;
    const out = path.join(root, 'out');
    await mkdir(out, { recursive: true });
    const file = (day: string) => path.join(out, `${day}.csv`);
    const manifest = async (day: string, text: string, fields: object = {}) => {
      await writeFile(file(day), text);
      await writeFile(
        `${file(day)}.manifest.json`,
        JSON.stringify({ sha256: createHash('sha256').update(text).digest('hex'), window: { from: day, open: false }, ...fields }),
      );
    };
    await manifest('2026-07-01', 'Day\n2026-07-01\n');
    await manifest('2026-07-02', 'Day\n2026-07-02\n', { window: { from: '2026-07-02', open: true } });
    await manifest('2026-07-03', 'Day\n2026-07-03\n');
    await writeFile(file('2026-07-03'), 'Day\nchanged since\n');
    await writeFile(file('2026-07-04'), 'Day\n2026-07-04\n');
    await writeFile(file('2026-07-05'), 'Day\n2026-07-05\n');
    await writeFile(`${file('2026-07-05')}.manifest.json`, '{"sha256":"');
    const csvJob = job([{ type: 'csv', path: '{date}.csv', manifest: true }]);
    const env = environment({ csv: { directory: out } });
    const sinks = await buildSinks(csvJob, env);
    expect([...(await doneWindowsOf(csvJob, sinks, days, env, {}, silentLogger))]).toEqual(['2026-07-01']);
    const [state] = await targetStatesOf(await windowStateReaders(csvJob, sinks, env, {}, silentLogger), days);
    expect({ done: [...state!.done], open: [...(state!.open ?? [])] }).toEqual({ done: ['2026-07-01'], open: ['2026-07-02'] });
  });

  it('refuses --resume (backfill_resume_unsupported, exit 2) when a sink of the job gives no window state to read, instead of skipping every window', async () => {
    const root = temp.path;
    const csvJob = job([{ type: 'csv', path: '{date}.csv', manifest: true }]);
    const env = environment({ csv: { directory: root } });
    // The job's CSV sink is configured, but no built sink stands for it: its kind gives no reader.
    const error = await doneWindowsOf(csvJob, [], days, env, {}, silentLogger).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ResumeUnsupportedError);
    expect(error).toMatchObject({
      code: 'backfill_resume_unsupported',
      exitCode: 2,
      message: 'backfill: --resume cannot tell which windows the csv sinks of daily hold: 0 of 1 give a window state to read; run without --resume',
    });
  });

  it('reads two CSV sinks of one job, each by its own reader: a window is done only where both hold it', async () => {
    const root = temp.path;
    const manifest = async (file: string, day: string) => {
      const text = `Day\n${day}\n`;
      await mkdir(path.dirname(file), { recursive: true });
      await writeFile(file, text);
      await writeFile(`${file}.manifest.json`, JSON.stringify({ sha256: createHash('sha256').update(text).digest('hex'), window: { from: day, open: false } }));
    };
    await manifest(path.join(root, 'a', '2026-07-01.csv'), '2026-07-01');
    await manifest(path.join(root, 'a', '2026-07-02.csv'), '2026-07-02');
    await manifest(path.join(root, 'b', '2026-07-02.csv'), '2026-07-02');
    const twoJob = job([
      { type: 'csv', path: 'a/{date}.csv', manifest: true },
      { type: 'csv', path: 'b/{date}.csv', manifest: true },
    ]);
    const env = environment({ csv: { directory: root } });
    expect([...(await doneWindowsOf(twoJob, await buildSinks(twoJob, env), days, env, {}, silentLogger))]).toEqual(['2026-07-02']);
  });

  it('refuses to guess when a manifest cannot be read (a directory in its place): incremental_state_unreadable', async () => {
    const root = temp.path;
    const out = path.join(root, 'out');
    await mkdir(path.join(out, '2026-07-02.csv.manifest.json'), { recursive: true });
    const csvJob = job([{ type: 'csv', path: '{date}.csv', manifest: true }]);
    const env = environment({ csv: { directory: out } });
    const error = await doneWindowsOf(csvJob, await buildSinks(csvJob, env), days, env, {}, silentLogger).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(WindowStateUnreadableError);
    expect(error).toMatchObject({ code: 'incremental_state_unreadable' });
    expect((error as Error).message).toContain('{date}.csv');
  });
});
