import { mkdir, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isTempFileName, removeStaleTempFiles, tempPathFor } from '../../../src/sinks/csv/temp-files.js';
import { listFiles, makeTempDirectory } from './csv-test-support.js';

let directory: { path: string; remove: () => Promise<void> };
beforeEach(async () => {
  directory = await makeTempDirectory();
});
afterEach(async () => {
  await directory.remove();
});

async function touch(path: string, modified: Date): Promise<void> {
  await writeFile(path, 'partial');
  await utimes(path, modified, modified);
}

describe('tempPathFor', () => {
  it('puts a hidden, run-specific temp file beside the target', () => {
    expect(tempPathFor('/out/a/weekly.csv.gz', '20261121T213005Z-9f2c1a')).toBe('/out/a/.weekly.csv.gz.tilehouse-20261121T213005Z-9f2c1a.tmp');
    expect(isTempFileName('.weekly.csv.gz.tilehouse-20261121T213005Z-9f2c1a.tmp')).toBe(true);
  });
});

describe('removeStaleTempFiles', () => {
  it('removes temp files of earlier runs anywhere under the directory and keeps everything else', async () => {
    const runStart = new Date('2026-11-21T21:30:00Z');
    const before = new Date('2026-11-21T20:00:00Z');
    const after = new Date('2026-11-21T21:31:00Z');
    await mkdir(join(directory.path, 'tile-1'), { recursive: true });
    await touch(join(directory.path, '.a.csv.tilehouse-old.tmp'), before);
    await touch(join(directory.path, 'tile-1', '.b.csv.gz.tilehouse-old.tmp'), before);
    await touch(join(directory.path, '.a.csv.tilehouse-live.tmp'), after);
    await touch(join(directory.path, '.someone-elses.tmp'), before);
    await touch(join(directory.path, 'a.csv'), before);

    const removed = await removeStaleTempFiles(directory.path, { olderThan: runStart });

    expect(removed.sort()).toEqual([
      join(directory.path, '.a.csv.tilehouse-old.tmp'),
      join(directory.path, 'tile-1', '.b.csv.gz.tilehouse-old.tmp'),
    ]);
    expect(await listFiles(directory.path)).toEqual(['.a.csv.tilehouse-live.tmp', '.someone-elses.tmp', 'a.csv', 'tile-1']);
  });

  it('treats a missing directory as nothing to clean', async () => {
    expect(await removeStaleTempFiles(join(directory.path, 'absent'), { olderThan: new Date() })).toEqual([]);
  });
});
