import { mkdir, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isTempFileName, removeStaleTempFiles, tempFileOwnerTag, tempPathFor, toFileNameSafe } from '../../../src/sinks/stores/file-names.js';
import { FOREIGN_TEMP_MAX_AGE_MS, formatOwnerTag } from '../../../src/temp-owner.js';
import { listEntries } from '../csv/csv-test-support.js';
import { tempDirEachTest } from '../../support/temp-dir-hooks.js';

const directory = tempDirEachTest('tilehouse-csv-');

async function touch(path: string, modified: Date): Promise<void> {
  await writeFile(path, 'partial');
  await utimes(path, modified, modified);
}

// A pid no process can have (pid_max is at most 2^22), on this host and boot: provably gone.
const deadTag = () => formatOwnerTag().replace(/\+\d+\+[A-Za-z0-9]+$/, '+99999999+12345');

describe('tempPathFor', () => {
  it('puts a hidden, run-specific temp file beside the target, named with its owner', () => {
    const path = tempPathFor('/out/a/weekly.csv.gz', '20261121T213005Z-9f2c1a');
    expect(path).toBe(`/out/a/.weekly.csv.gz.tilehouse-20261121T213005Z-9f2c1a+${formatOwnerTag()}.tmp`);
    const name = path.slice('/out/a/'.length);
    expect(isTempFileName(name)).toBe(true);
    expect(tempFileOwnerTag(name)).toBe(formatOwnerTag());
  });

  it('keeps the name under 255 bytes for a long target name', () => {
    const path = tempPathFor(`/out/${'x'.repeat(250)}.csv`, 'a'.repeat(64));
    const name = path.slice('/out/'.length);
    expect(Buffer.byteLength(name)).toBeLessThanOrEqual(255);
    expect(tempFileOwnerTag(name)).toBe(formatOwnerTag());
  });

  it('recognises untagged (older) temp names as ours without an owner, and other files as not ours', () => {
    expect(tempFileOwnerTag('.a.csv.tilehouse-20261121T213005Z-9f2c1a.tmp')).toBeNull();
    expect(tempFileOwnerTag('.a.csv.tmp')).toBeUndefined();
    expect(tempFileOwnerTag('a.csv.tilehouse-x.tmp')).toBeUndefined();
    expect(tempFileOwnerTag('.a.csv.tilehouse-x+not-a-tag.tmp')).toBeUndefined();
  });
});

describe('removeStaleTempFiles', () => {
  it("removes dead runs' temp files (recursively when asked) and old untagged ones; keeps fresh untagged, its own and others' files", async () => {
    const dayAgo = new Date(Date.now() - FOREIGN_TEMP_MAX_AGE_MS - 60_000);
    const hourAgo = new Date(Date.now() - 3_600_000);
    await mkdir(join(directory.path, 'tile-1'), { recursive: true });
    await touch(join(directory.path, `.a.csv.tilehouse-run1+${deadTag()}.tmp`), hourAgo);
    await touch(join(directory.path, 'tile-1', `.b.csv.gz.tilehouse-run1+${deadTag()}.tmp`), hourAgo);
    await touch(join(directory.path, '.a.csv.tilehouse-old.tmp'), dayAgo);
    await touch(join(directory.path, '.a.csv.tilehouse-recent.tmp'), hourAgo);
    await touch(join(directory.path, `.a.csv.tilehouse-mine+${formatOwnerTag()}.tmp`), dayAgo);
    await touch(join(directory.path, '.someone-elses.tmp'), dayAgo);
    await touch(join(directory.path, 'a.csv'), dayAgo);

    const removed = await removeStaleTempFiles(directory.path, { recursive: true });

    expect(removed.sort()).toEqual(
      [
        join(directory.path, '.a.csv.tilehouse-old.tmp'),
        join(directory.path, `.a.csv.tilehouse-run1+${deadTag()}.tmp`),
        join(directory.path, 'tile-1', `.b.csv.gz.tilehouse-run1+${deadTag()}.tmp`),
      ].sort(),
    );
    expect(await listEntries(directory.path)).toEqual(
      ['.a.csv.tilehouse-recent.tmp', `.a.csv.tilehouse-mine+${formatOwnerTag()}.tmp`, '.someone-elses.tmp', 'a.csv', 'tile-1'].sort(),
    );
  });

  it('does not look into subdirectories unless the template can write there', async () => {
    await mkdir(join(directory.path, 'tile-1'), { recursive: true });
    const nested = join(directory.path, 'tile-1', `.b.csv.tilehouse-run1+${deadTag()}.tmp`);
    await touch(nested, new Date());
    expect(await removeStaleTempFiles(directory.path, { recursive: false })).toEqual([]);
    expect(await listEntries(directory.path)).toEqual(['tile-1', `tile-1/.b.csv.tilehouse-run1+${deadTag()}.tmp`]);
  });

  it('treats a missing directory as nothing to clean', async () => {
    expect(await removeStaleTempFiles(join(directory.path, 'absent'), { recursive: true })).toEqual([]);
  });
});

describe('toFileNameSafe', () => {
  it('makes text file-name safe', () => {
    expect(toFileNameSafe('Tile 7/α')).toBe('Tile_7__');
    expect(toFileNameSafe('.env')).toBe('_env');
    expect(toFileNameSafe('')).toBe('_');
  });
});
