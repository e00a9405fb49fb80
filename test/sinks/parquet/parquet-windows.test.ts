import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { SANDBOX_TILE } from '../../../sandbox/index.js';
import { listFiles, runCli, sandboxEnv, writeWorkspace, type Workspace } from '../../support/cli-harness.js';
import { readCsv } from '../../support/csv-read.js';
import { dailySeverityQuery } from '../../support/queries.js';
import { dayAfter, dayFromToday, sourceRowsBetween } from '../../support/window-oracle.js';
import { sandboxAndRootForAll } from '../../support/sandbox-fixture.js';
import { addParquetDirectory, parquetAsCsvText } from './parquet-test-support.js';
import { sandboxesEachTest } from '../../support/sandbox-fixture.js';

/** Windowed jobs with a Parquet sink: one file per day window, exactly that day's rows, a manifest beside each. */

const columns = { Day: { type: 'DATE' }, Incidents: { type: 'INT64' } };

async function manifestOf(file: string): Promise<{ rows: number; window: { from: string; to: string } }> {
  return JSON.parse(await readFile(`${file}.manifest.json`, 'utf8')) as { rows: number; window: { from: string; to: string } };
}

describe('tilehouse backfill with a Parquet sink beside a CSV sink', () => {
  const fixture = sandboxAndRootForAll({ incidents: 4000, now: new Date() });
  let workspace: Workspace;
  beforeAll(async () => {
    const job = {
      name: 'daily_severity',
      tile: SANDBOX_TILE,
      timezone: 'Europe/Berlin',
      query: dailySeverityQuery,
      sinks: [
        { type: 'csv', manifest: true },
        { type: 'parquet', manifest: true },
      ],
      columns,
      backfill: { item: 'day', bucketColumn: 'Day' },
    };
    workspace = await writeWorkspace(fixture.root, fixture.sandbox, [job], { itemsPerPage: 10 });
    await addParquetDirectory(workspace);
  });

  it('writes one Parquet file per day holding exactly its rows, the CSV file of the day read back typed, with its manifest', async () => {
    const from = dayFromToday(-12);
    const to = dayFromToday(-6);
    const result = await runCli(
      ['backfill', '--config', workspace.configFile, '--jobs', workspace.jobsDir, '--tile', 'daily_severity', '--from', from, '--to', to],
      { env: sandboxEnv(fixture.sandbox) },
    );
    expect(result.exitCode, result.stderr).toBe(0);
    const files = (await listFiles(path.join(workspace.outDir, 'daily_severity'))).filter((file) => file.endsWith('.parquet'));
    expect(files).toHaveLength(6);
    const union: string[][] = [];
    for (const file of files) {
      const date = file.replace('.parquet', '');
      const parquetFile = path.join(workspace.outDir, 'daily_severity', file);
      const { names, rows } = await parquetAsCsvText(parquetFile);
      expect(names).toEqual(['day', 'severity', 'incidents']);
      expect(
        rows.every((row) => row[0] === date),
        `${file} holds rows of another day`,
      ).toBe(true);
      expect(rows).toEqual((await readCsv(path.join(workspace.outDir, 'daily_severity', `${date}.csv`))).rows);
      const manifest = await manifestOf(parquetFile);
      expect(manifest).toMatchObject({ rows: rows.length, window: { from: date } });
      union.push(...(rows as string[][]));
    }
    expect(union).toEqual(sourceRowsBetween(fixture.sandbox, dailySeverityQuery, from, to));
    expect(union.length).toBeGreaterThan(6);
  });
});

describe('an incremental job with a Parquet sink', () => {
  const each = sandboxesEachTest();

  it('catches up the days its manifests do not hold, one file per day, exactly that day', async () => {
    const root = await each.tempDir();
    const job = {
      name: 'daily',
      tile: SANDBOX_TILE,
      query: dailySeverityQuery,
      sinks: [{ type: 'parquet', manifest: true }],
      columns,
      incremental: { item: 'day', bucketColumn: 'Day', startFrom: '2026-07-01', lookbackDays: 0 },
    };
    const runOn = async (today: string) => {
      const sandbox = await each.sandbox({ incidents: 10_000, now: new Date(`${today}T12:00:00Z`) });
      const workspace = await writeWorkspace(root, sandbox, [job]);
      await addParquetDirectory(workspace);
      const result = await runCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir], { env: sandboxEnv(sandbox) });
      expect(result.exitCode, result.stderr).toBe(0);
      return { sandbox, workspace, exports: () => sandbox.requests.filter((request) => request.endpoint === 'export').length };
    };

    const first = await runOn('2026-07-01');
    expect(await listFiles(first.workspace.outDir)).toEqual(['daily/2026-07-01.parquet', 'daily/2026-07-01.parquet.manifest.json']);
    const fourth = await runOn('2026-07-04');
    expect(await listFiles(fourth.workspace.outDir)).toEqual(
      ['2026-07-01', '2026-07-02', '2026-07-03', '2026-07-04'].flatMap((date) => [`daily/${date}.parquet`, `daily/${date}.parquet.manifest.json`]),
    );
    for (const date of ['2026-07-01', '2026-07-02', '2026-07-03']) {
      const file = path.join(fourth.workspace.outDir, 'daily', `${date}.parquet`);
      expect((await parquetAsCsvText(file)).rows, date).toEqual(sourceRowsBetween(fourth.sandbox, dailySeverityQuery, date, dayAfter(date)));
    }
    // Day 4 again: days 1-3 are held (closed, with manifests), only the open day 4 is exported again.
    const before = fourth.exports();
    const again = await runCli(['run', '--config', fourth.workspace.configFile, '--jobs', fourth.workspace.jobsDir], { env: sandboxEnv(fourth.sandbox) });
    expect(again.exitCode, again.stderr).toBe(0);
    expect(again.stderr).toContain('incremental daily: 1 window 2026-07-04..2026-07-05: resume after 2026-07-03 (the last day every target holds)');
    expect(fourth.exports() - before).toBe(1);
  }, 60_000);
});
