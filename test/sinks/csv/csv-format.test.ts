// The CSV format behind the file machinery, and its one default-path rule (issue 27: it was
// written three times, and the window-state copy and the incremental message ignored gzip).
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { csvIncrementalIssues, defaultCsvPathTemplate, type CsvSinkConfig } from '../../../src/config/csv-sink-schema.js';
import type { EnvironmentConfig } from '../../../src/config/environment-schema.js';
import type { LoadedJob } from '../../../src/config/load-config.js';
import { csvFormat } from '../../../src/sinks/csv/csv-format.js';
import { CsvSink } from '../../../src/sinks/csv/csv-sink.js';
import { csvSinkKind } from '../../../src/sinks/csv/descriptor.js';
import { localStoredFile } from '../../../src/sinks/stores/local/local-stored-file.js';
import type { SinkRunContext } from '../../../src/sinks/sink.js';
import { tempDirEachTest } from '../../support/temp-dir-hooks.js';

const environment = (directory: string) => ({ sinks: { csv: { directory } }, stopDeadlineMs: 5_000 }) as unknown as EnvironmentConfig;
const jobWith = (sink: CsvSinkConfig): LoadedJob =>
  ({ name: 'daily', tile: 't', file: 'jobs/daily.yaml', timezone: 'UTC', sinks: [sink] }) as unknown as LoadedJob;

describe('the default CSV path', () => {
  it('is one file per job, or per window, and ends .csv.gz exactly when gzip is on', () => {
    expect(defaultCsvPathTemplate({ gzip: false }, false)).toBe('{name}.csv');
    expect(defaultCsvPathTemplate({ gzip: true }, false)).toBe('{name}.csv.gz');
    expect(defaultCsvPathTemplate({ gzip: false }, true)).toBe('{name}/{date}.csv');
    expect(defaultCsvPathTemplate({ gzip: true }, true)).toBe('{name}/{date}.csv.gz');
    expect(defaultCsvPathTemplate({}, true)).toBe('{name}/{date}.csv');
    expect(csvFormat.defaultPathTemplate({ type: 'csv', gzip: true }, true)).toBe('{name}/{date}.csv.gz');
  });

  it('is what the incremental rule suggests, the windows are written to, and their state is read under', async () => {
    const gzip: CsvSinkConfig = { type: 'csv', gzip: true, manifest: true };
    expect(csvIncrementalIssues({ ...gzip, path: 'daily.csv.gz' }, 0)[0]!.message).toBe(
      'an incremental job writes one file per day: the path needs {date} (or leave it out: {name}/{date}.csv.gz)',
    );
    expect(csvIncrementalIssues({ ...gzip, gzip: false, path: 'daily.csv' }, 0)[0]!.message).toBe(
      'an incremental job writes one file per day: the path needs {date} (or leave it out: {name}/{date}.csv)',
    );
    expect(csvSinkKind.forWindows(gzip, 0, jobWith(gzip)).sink).toEqual({ ...gzip, path: '{name}/{date}.csv.gz' });
    // A sink built without a path (as a caller may) reads its state under the gzip default too.
    const directory = '/tmp/tilehouse-csv-format-unused';
    const sink = new CsvSink({ config: gzip, directory, timezone: 'UTC' });
    const [reader] = await csvSinkKind.windowStateReaders(jobWith(gzip), [sink], environment(directory), {}, pino({ level: 'silent' }));
    expect(reader!.target).toBe('{name}/{date}.csv.gz');
  });
});

describe('csvFormat.readColumns', () => {
  const directory = tempDirEachTest('tilehouse-csv-format-');

  it('reads a quoted header from a plain file and from a gzip file, and a missing file is none', async () => {
    await writeFile(path.join(directory.path, 'a.csv'), '\uFEFF"Title, ""quoted""",id\r\n1,2\r\n');
    await writeFile(path.join(directory.path, 'a.csv.gz'), gzipSync('"multi\nline",id\r\n'));
    expect(await csvFormat.readColumns((await localStoredFile(path.join(directory.path, 'a.csv')))!, { type: 'csv', gzip: false })).toEqual([
      'Title, "quoted"',
      'id',
    ]);
    expect(await csvFormat.readColumns((await localStoredFile(path.join(directory.path, 'a.csv.gz')))!, { type: 'csv', gzip: true })).toEqual([
      'multi\nline',
      'id',
    ]);
    expect(await localStoredFile(path.join(directory.path, 'absent.csv'))).toBeUndefined();
  });

  it('fails, not hangs, on a file that claims gzip and is not: target_unreadable, naming the format and the file', async () => {
    const file = path.join(directory.path, 'a.csv.gz');
    await writeFile(file, 'id\r\n');
    const stored = (await localStoredFile(file))!;
    const refusal = {
      code: 'target_unreadable',
      targetKind: 'local',
      format: 'csv',
      message: `csv ${file}: the existing file cannot be read as CSV: it is not gzip (incorrect header check)`,
    };
    await expect(csvFormat.readColumns(stored, { type: 'csv', gzip: true })).rejects.toMatchObject(refusal);
    await expect(csvFormat.countRows(stored, { type: 'csv', gzip: true })).rejects.toMatchObject(refusal);
    // The sink, which knows the job, names it too.
    const sink = new CsvSink({ config: { type: 'csv', gzip: true, path: 'a.csv.gz' }, directory: directory.path, timezone: 'UTC' });
    const context = { jobName: 'daily', tileId: 't', runId: 'r1', startedAt: new Date(), columns: [] } as unknown as SinkRunContext;
    await expect(sink.plan(context)).rejects.toMatchObject({ ...refusal, message: `job daily: ${refusal.message}` });
  });
});
