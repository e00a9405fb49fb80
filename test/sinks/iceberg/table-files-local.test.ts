import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readLocation, removeLocation, writeNewFile } from '../../../src/sinks/iceberg/local-files.js';

describe('writeNewFile on this machine', () => {
  let root: string;
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'tilehouse-table-files-'));
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('writes a file:/ location (one slash, as the REST server spells it) whole, and reads and removes it', async () => {
    const location = `file:${join(root, 'metadata', 'one.avro')}`;
    expect(await writeNewFile(location, [Buffer.from('abc'), Buffer.from('def')])).toBe(6);
    expect((await readLocation(location)).toString()).toBe('abcdef');
    expect(await readdir(join(root, 'metadata'))).toEqual(['one.avro']);
    await removeLocation(location);
    await removeLocation(location);
    expect(await readdir(join(root, 'metadata'))).toEqual([]);
  });

  it('leaves nothing when the bytes fail midway: the file never appears, nor its temp file', async () => {
    async function* failing() {
      yield Buffer.from('part of a data file');
      throw new Error('the encoder failed');
    }
    await expect(writeNewFile(pathToFileURL(join(root, 'data', 'x.parquet')).href, failing())).rejects.toThrow('the encoder failed');
    expect(await readdir(join(root, 'data'))).toEqual([]);
  });

  it('refuses to replace a file already there, which stays as it was', async () => {
    const path = join(root, 'taken.json');
    await writeFile(path, 'first');
    await expect(writeNewFile(path, [Buffer.from('second')])).rejects.toMatchObject({ code: 'EEXIST' });
    expect(await readFile(path, 'utf8')).toBe('first');
    expect(await readdir(root)).toEqual(['taken.json']);
  });
});
