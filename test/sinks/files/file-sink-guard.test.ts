import { rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DEFAULT_GUARD_SETTINGS } from '../../../src/config/publish-guard-schema.js';
import { csvFormat } from '../../../src/sinks/csv/csv-format.js';
import { CsvSink } from '../../../src/sinks/csv/csv-sink.js';
import { column, makeContext } from '../csv/csv-test-support.js';
import { tempDirEachTest } from '../../support/temp-dir-hooks.js';

const directory = tempDirEachTest('tilehouse-file-guard-');
const context = makeContext([column('Number', 'INT64')]);
const csvOf = (rows: number) => `Number\r\n${Array.from({ length: rows }, (_, index) => `${index}\r\n`).join('')}`;
const sinkWith = (guard: typeof DEFAULT_GUARD_SETTINGS | undefined) =>
  new CsvSink({ config: { type: 'csv', gzip: false }, directory: directory.path, timezone: 'UTC', guard });

afterEach(() => {
  vi.restoreAllMocks();
});

describe("a file sink's publish guard", () => {
  it('reads what the target holds when the writer opens, and not again at publish when it is unchanged', async () => {
    await writeFile(join(directory.path, 'weekly_incidents.csv'), csvOf(3));
    const counted = vi.spyOn(csvFormat, 'countRows');
    const writer = await sinkWith(DEFAULT_GUARD_SETTINGS).open(context);
    await vi.waitFor(() => expect(counted).toHaveBeenCalledTimes(1));
    await writer.prepare();
    expect(await writer.guard!.holding()).toMatchObject({ rows: 3, readFrom: 'the CSV file counted' });
    expect(counted).toHaveBeenCalledTimes(1);
    await writer.abort();
  });

  it('reads the target again when another run replaced it between open and publish', async () => {
    const target = join(directory.path, 'weekly_incidents.csv');
    await writeFile(target, csvOf(3));
    const counted = vi.spyOn(csvFormat, 'countRows');
    const writer = await sinkWith(DEFAULT_GUARD_SETTINGS).open(context);
    await vi.waitFor(() => expect(counted).toHaveBeenCalledTimes(1));
    await writeFile(join(directory.path, 'other-run.tmp'), csvOf(7));
    await rename(join(directory.path, 'other-run.tmp'), target);
    expect(await writer.guard!.holding()).toMatchObject({ rows: 7 });
    await writer.abort();
  });

  it('reads it at publish when there was no file at open, and not at all without a guard', async () => {
    const counted = vi.spyOn(csvFormat, 'countRows');
    const writer = await sinkWith(DEFAULT_GUARD_SETTINGS).open(context);
    await writeFile(join(directory.path, 'weekly_incidents.csv'), csvOf(2));
    expect(await writer.guard!.holding()).toMatchObject({ rows: 2 });
    await writer.abort();
    counted.mockClear();
    const unguarded = await sinkWith(undefined).open(context);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(counted).not.toHaveBeenCalled();
    await unguarded.abort();
  });
});
