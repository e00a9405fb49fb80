import { mkdir, readdir, symlink, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeOwnedTempFiles, type OwnedTempFileSweep } from '../../src/sinks/owned-temp-files.js';
import { FOREIGN_TEMP_MAX_AGE_MS, formatOwnerTag } from '../../src/temp-owner.js';
import { makeTempDir } from '../support/temp-dir.js';
import { DEAD_PID, startLiveProcess, tagOf, type LiveProcess } from '../support/temp-owners.js';
import { rm } from 'node:fs/promises';
import { tempDirEachTest } from '../support/temp-dir-hooks.js';

// A made-up naming scheme, so these tests pin removeOwnedTempFiles itself: `<x>.own-<tag>` is
// ours with an owner, `<x>.own` ours without one, anything else not ours.
const sweepOptions = (recursive = false): OwnedTempFileSweep => ({
  ownerTagOf: (name) => {
    const match = /\.own(?:-(.+))?$/.exec(name);
    if (!match) return undefined;
    return match[1] ?? null;
  },
  recursive,
});

const TEN_DAYS = 10 * 24 * 3_600_000;
const ago = (ms: number) => new Date(Date.now() - ms);

let live: LiveProcess;
const dir = tempDirEachTest('tilehouse-owned-');
beforeAll(async () => {
  live = await startLiveProcess();
});
afterAll(async () => {
  await live.stop();
});

async function put(name: string, age: number, folder = dir.path): Promise<string> {
  const path = join(folder, name);
  await writeFile(path, 'partial');
  await utimes(path, ago(age), ago(age));
  return path;
}

async function names(folder = dir.path): Promise<string[]> {
  return (await readdir(folder, { recursive: true })).sort();
}

describe('removeOwnedTempFiles', () => {
  it("keeps a live other process's file however old it is", async () => {
    await put(`a.own-${live.tag}`, TEN_DAYS);
    expect(await removeOwnedTempFiles(dir.path, sweepOptions())).toEqual([]);
    expect(await names()).toEqual([`a.own-${live.tag}`]);
  });

  it("removes a dead pid's file however fresh it is", async () => {
    const path = await put(`a.own-${tagOf({ pid: DEAD_PID, start: '5' })}`, 0);
    expect(await removeOwnedTempFiles(dir.path, sweepOptions())).toEqual([path]);
    expect(await names()).toEqual([]);
  });

  it("keeps this process's own file however old it is", async () => {
    await put(`a.own-${formatOwnerTag()}`, TEN_DAYS);
    expect(await removeOwnedTempFiles(dir.path, sweepOptions())).toEqual([]);
    expect(await names()).toEqual([`a.own-${formatOwnerTag()}`]);
  });

  it('removes the file of a reused pid: a live pid whose start ticks differ', async () => {
    const path = await put(`a.own-${tagOf({ pid: live.pid, start: String(Number(live.start) + 7) })}`, 0);
    expect(await removeOwnedTempFiles(dir.path, sweepOptions())).toEqual([path]);
  });

  it("keeps another host's file while fresh and removes it once untouched for more than 24 h", async () => {
    const foreign = tagOf({ host: 'other-pod', pid: DEAD_PID });
    await put(`fresh.own-${foreign}`, FOREIGN_TEMP_MAX_AGE_MS - 60_000);
    const old = await put(`old.own-${foreign}`, FOREIGN_TEMP_MAX_AGE_MS + 60_000);
    expect(await removeOwnedTempFiles(dir.path, sweepOptions())).toEqual([old]);
    expect(await names()).toEqual([`fresh.own-${foreign}`]);
  });

  it('treats an untagged (legacy) file like a foreign one: kept while fresh, removed after 24 h', async () => {
    await put('fresh.own', FOREIGN_TEMP_MAX_AGE_MS - 60_000);
    const old = await put('old.own', FOREIGN_TEMP_MAX_AGE_MS + 60_000);
    expect(await removeOwnedTempFiles(dir.path, sweepOptions())).toEqual([old]);
    expect(await names()).toEqual(['fresh.own']);
  });

  it('treats a file of ours with an unparsable tag like a foreign one', async () => {
    await put('fresh.own-not+a+tag', 0);
    const old = await put('old.own-not+a+tag', TEN_DAYS);
    expect(await removeOwnedTempFiles(dir.path, sweepOptions())).toEqual([old]);
  });

  it('never touches files that are not ours, however old', async () => {
    await put('data.csv', TEN_DAYS);
    await put('.x.tmp', TEN_DAYS);
    await put('a.owned.bak', TEN_DAYS);
    expect(await removeOwnedTempFiles(dir.path, sweepOptions())).toEqual([]);
    expect(await names()).toHaveLength(3);
  });

  it('does not follow symbolic links, to files or to directories', async () => {
    const outside = await makeTempDir('tilehouse-outside-');
    try {
      const deadTag = tagOf({ pid: DEAD_PID, start: '5' });
      const target = await put(`victim.own-${deadTag}`, TEN_DAYS, outside);
      await symlink(target, join(dir.path, `link.own-${deadTag}`));
      await symlink(outside, join(dir.path, 'linked-folder'));
      expect(await removeOwnedTempFiles(dir.path, sweepOptions(true))).toEqual([]);
      expect(await names(outside)).toEqual([`victim.own-${deadTag}`]);
      expect((await readdir(dir.path)).sort()).toEqual(['link.own-' + deadTag, 'linked-folder'].sort());
    } finally {
      await rm(outside, { recursive: true, force: true });
    }
  });

  it('looks into subdirectories only when recursive', async () => {
    await mkdir(join(dir.path, 'a', 'b'), { recursive: true });
    const deep = await put(`x.own-${tagOf({ pid: DEAD_PID, start: '5' })}`, 0, join(dir.path, 'a', 'b'));
    expect(await removeOwnedTempFiles(dir.path, sweepOptions(false))).toEqual([]);
    expect(await removeOwnedTempFiles(dir.path, sweepOptions(true))).toEqual([deep]);
  });

  it('treats a missing directory, or a file in its place, as nothing to sweep', async () => {
    expect(await removeOwnedTempFiles(join(dir.path, 'absent'), sweepOptions(true))).toEqual([]);
    const file = await put('plain', 0);
    expect(await removeOwnedTempFiles(file, sweepOptions(true))).toEqual([]);
  });

  it('two sweeps at once remove each dead file once and neither fails', async () => {
    const dead = await Promise.all(Array.from({ length: 50 }, (_, i) => put(`${i}.own-${tagOf({ pid: DEAD_PID, start: '5' })}`, 0)));
    const [a, b] = await Promise.all([removeOwnedTempFiles(dir.path, sweepOptions()), removeOwnedTempFiles(dir.path, sweepOptions())]);
    expect([...a, ...b].sort()).toEqual([...dead].sort());
    expect(await names()).toEqual([]);
  });
});
