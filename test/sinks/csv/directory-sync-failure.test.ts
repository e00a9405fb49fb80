import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Capture } from '../../support/cli-harness.js';
import { column, listEntries, makeContext, makeSink, parseCsv, readText } from './csv-test-support.js';
import { tempDirEachTest } from '../../support/temp-dir-hooks.js';

// fsync of a directory failing with EIO (a disk going bad) after the rename already happened.
const failDirectorySync = vi.hoisted(() => ({ on: false }));
vi.mock('node:fs/promises', async (importOriginal) => {
  const fs = await importOriginal<typeof import('node:fs/promises')>();
  const open = (async (...args: Parameters<typeof fs.open>) => {
    const handle = await fs.open(...args);
    if (failDirectorySync.on && (await handle.stat()).isDirectory()) {
      handle.sync = () => Promise.reject(Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' }));
    }
    return handle;
  }) as typeof fs.open;
  return { ...fs, open, default: { ...fs, open } };
});

const directory = tempDirEachTest('tilehouse-csv-');
afterEach(() => {
  failDirectorySync.on = false;
});

describe('LocalFileWriter.publish (CSV) when the directory fsync fails after the rename', () => {
  it('reports the run as published (readers already see it), says it may not be durable, and abort changes nothing', async () => {
    const target = join(directory.path, 'weekly_incidents.csv');
    await writeFile(target, 'previous\r\n');
    const logs = new Capture();
    const writer = await makeSink(directory.path).open(makeContext([column('A', 'STRING')], { logger: pino({ level: 'info' }, logs) }));
    await writer.writeRows([['new']]);
    await writer.prepare();
    failDirectorySync.on = true;
    const result = await writer.publish();
    expect(result).toMatchObject({ sink: 'csv', target, rows: 1, details: { directorySynced: false } });
    expect(parseCsv(await readText(target))).toEqual([['A'], ['new']]);
    expect(logs.lines().find((line) => line.level === 50)).toMatchObject({ msg: expect.stringContaining('may not survive a crash') });
    await writer.abort();
    expect(await readFile(target, 'utf8')).toBe('A\r\nnew\r\n');
    expect(await listEntries(directory.path)).toEqual(['weekly_incidents.csv']);
  });
});
