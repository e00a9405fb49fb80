import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { chmod, mkdir, open, readdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { isTempFileName, removeStaleTempFiles } from '../src/sinks/stores/file-names.js';
import { formatOwnerTag } from '../src/temp-owner.js';
import { PreparedFile, smallFileTempPath, tempNameFor, tempNameOwnerTag, writeFileAtomically } from '../src/write-file-atomically.js';
import { tagOf, DEAD_PID } from './support/temp-owners.js';
import { tempDirEachTest } from './support/temp-dir-hooks.js';
import { UNPRIVILEGED } from './support/unprivileged.js';

const directory = tempDirEachTest();
afterEach(async () => {
  vi.restoreAllMocks();
  await chmod(directory.path, 0o755).catch(() => undefined);
});

describe('writeFileAtomically', () => {
  it('creates a file, then replaces it whole, leaving nothing else beside it', async () => {
    const target = path.join(directory.path, 'summary.json');
    await writeFileAtomically(target, 'first\n');
    await writeFileAtomically(target, 'second\n');
    expect(await readFile(target, 'utf8')).toBe('second\n');
    expect(await readdir(directory.path)).toEqual(['summary.json']);
  });

  it('writes bytes and an empty text alike', async () => {
    await writeFileAtomically(path.join(directory.path, 'bytes'), new Uint8Array([0, 255, 10]));
    await writeFileAtomically(path.join(directory.path, 'empty'), '');
    expect([...(await readFile(path.join(directory.path, 'bytes')))]).toEqual([0, 255, 10]);
    expect((await stat(path.join(directory.path, 'empty'))).size).toBe(0);
  });

  it('gives the new file the requested mode (before the umask)', async () => {
    const target = path.join(directory.path, 'manifest.json');
    await writeFileAtomically(target, '{}', { mode: 0o600 });
    expect((await stat(target)).mode & 0o777).toBe(0o600);
  });

  it('fails on a target that is a directory, leaving the directory as it was and no temp file', async () => {
    const target = path.join(directory.path, 'out.csv');
    await mkdir(target);
    await writeFile(path.join(target, 'inside'), 'kept');
    await expect(writeFileAtomically(target, 'x')).rejects.toMatchObject({ code: expect.stringMatching(/^(EISDIR|ENOTEMPTY|EEXIST)$/) });
    expect(await readdir(directory.path)).toEqual(['out.csv']);
    expect(await readFile(path.join(target, 'inside'), 'utf8')).toBe('kept');
  });

  // Root writes a read-only directory anyway (CI runs as root): the write runs in a child, as
  // nobody when the suite is root, which meets the directory as any other user would.
  it('fails for a user who may not write the directory, leaving the target unchanged and no temp file', async () => {
    const target = path.join(directory.path, 'job.yaml');
    await writeFile(target, 'old\n');
    await chmod(directory.path, 0o555);
    const script = `const { writeFileAtomically } = await import(${JSON.stringify(path.resolve('src/write-file-atomically.ts'))});
try { await writeFileAtomically(${JSON.stringify(target)}, 'new'); console.log('wrote'); } catch (error) { console.log(error.code); }`;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { ...UNPRIVILEGED, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    const [code] = await once(child, 'exit');
    await chmod(directory.path, 0o755);
    expect({ code, stdout: stdout.trim() }).toEqual({ code: 0, stdout: 'EACCES' });
    expect(await readFile(target, 'utf8')).toBe('old\n');
    expect(await readdir(directory.path)).toEqual(['job.yaml']);
  }, 30_000);

  it('removes the temp file when the write throws half way (a full disk), and leaves the target unchanged', async () => {
    const target = path.join(directory.path, 'recording.json');
    await writeFile(target, 'old\n');
    const probe = await open(target, 'r');
    const handlePrototype = Object.getPrototypeOf(probe) as { writeFile: (data: unknown) => Promise<void> };
    await probe.close();
    const original = handlePrototype.writeFile;
    let tempSeen: string[] = [];
    vi.spyOn(handlePrototype, 'writeFile').mockImplementation(async function (this: unknown, data: unknown) {
      await original.call(this, String(data).slice(0, 3));
      tempSeen = await readdir(directory.path);
      throw Object.assign(new Error('no space left on device'), { code: 'ENOSPC' });
    });
    await expect(writeFileAtomically(target, 'new content\n')).rejects.toMatchObject({ code: 'ENOSPC' });
    expect(tempSeen).toHaveLength(2); // the half-written temp file existed
    expect(await readFile(target, 'utf8')).toBe('old\n');
    expect(await readdir(directory.path)).toEqual(['recording.json']);
  });

  it('removes the temp file when the fsync fails, and leaves the target unchanged', async () => {
    const target = path.join(directory.path, 'kustomization.yaml');
    await writeFile(target, 'old\n');
    const probe = await open(target, 'r');
    const handlePrototype = Object.getPrototypeOf(probe) as { sync: () => Promise<void> };
    await probe.close();
    vi.spyOn(handlePrototype, 'sync').mockRejectedValueOnce(Object.assign(new Error('I/O error'), { code: 'EIO' }));
    await expect(writeFileAtomically(target, 'new\n')).rejects.toMatchObject({ code: 'EIO' });
    expect(await readFile(target, 'utf8')).toBe('old\n');
    expect(await readdir(directory.path)).toEqual(['kustomization.yaml']);
  });

  it('fails in a directory that does not exist without creating anything', async () => {
    await expect(writeFileAtomically(path.join(directory.path, 'missing', 'f'), 'x')).rejects.toMatchObject({ code: 'ENOENT' });
    expect(await readdir(directory.path)).toEqual([]);
  });

  it('replaces a symbolic link itself, never the file it points to', async () => {
    const real = path.join(directory.path, 'real');
    const link = path.join(directory.path, 'link');
    await writeFile(real, 'real\n');
    await symlink(real, link);
    await writeFileAtomically(link, 'new\n');
    expect(await readFile(real, 'utf8')).toBe('real\n');
    expect(await readFile(link, 'utf8')).toBe('new\n');
  });

  it('writes a target whose name is 250 characters long (the temp name is cut to fit 255 bytes)', async () => {
    const target = path.join(directory.path, `${'é'.repeat(120)}${'n'.repeat(10)}.json`);
    await writeFileAtomically(target, 'x');
    expect(await readdir(directory.path)).toEqual([path.basename(target)]);
  });

  it('leaves one whole file when many writers in one process race on one target', async () => {
    const target = path.join(directory.path, 'raced');
    const payloads = Array.from({ length: 12 }, (_, index) => String.fromCharCode(97 + index).repeat(256 * 1024));
    await Promise.all(payloads.map((payload) => writeFileAtomically(target, payload)));
    expect(payloads).toContain(await readFile(target, 'utf8'));
    expect(await readdir(directory.path)).toEqual(['raced']);
  });

  it('leaves one whole file when two processes write the same target over and over, and a reader never sees half of one', async () => {
    const target = path.join(directory.path, 'shared');
    const module = path.resolve('src/write-file-atomically.ts');
    const script = [
      `const { writeFileAtomically } = await import(${JSON.stringify(module)});`,
      `for (let i = 0; i < 40; i += 1) await writeFileAtomically(${JSON.stringify(target)}, process.argv[1].repeat(512 * 1024));`,
    ].join('\n');
    const writers = ['A', 'B'].map((letter) =>
      spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script, letter], { stdio: ['ignore', 'ignore', 'pipe'] }),
    );
    const errors: string[] = [];
    for (const writer of writers) writer.stderr!.on('data', (chunk: Buffer) => errors.push(chunk.toString()));
    const exits = writers.map((writer) => once(writer, 'exit'));
    let done = false;
    void Promise.all(exits).then(() => (done = true));
    const seen = new Set<string>();
    while (!done) {
      const text = await readFile(target, 'utf8').catch(() => undefined);
      if (text !== undefined) {
        expect(text).toHaveLength(512 * 1024);
        expect(new Set(text).size).toBe(1);
        seen.add(text[0]!);
      }
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    expect(errors.join('')).toBe('');
    expect((await Promise.all(exits)).map(([code]) => code)).toEqual([0, 0]);
    expect(['A', 'B']).toContain((await readFile(target, 'utf8'))[0]);
    expect(seen.size).toBeGreaterThan(0);
    expect(await readdir(directory.path)).toEqual(['shared']);
  }, 60_000);
});

describe('PreparedFile', () => {
  it('leaves the target untouched until publish, and discard removes the temp file', async () => {
    const target = path.join(directory.path, 'out.csv.manifest.json');
    await writeFile(target, 'previous run\n');
    const prepared = await PreparedFile.prepare(target, 'this run\n');
    expect(await readFile(target, 'utf8')).toBe('previous run\n');
    expect(await readFile(prepared.tempPath, 'utf8')).toBe('this run\n');
    await prepared.discard();
    expect(await readdir(directory.path)).toEqual(['out.csv.manifest.json']);
    await prepared.discard(); // twice is fine
  });

  it('publishes by rename, with or without its own directory fsync', async () => {
    const target = path.join(directory.path, 'a');
    await (await PreparedFile.prepare(target, '1')).publish({ syncDirectory: false });
    expect(await readFile(target, 'utf8')).toBe('1');
    await (await PreparedFile.prepare(target, '2')).publish();
    expect(await readFile(target, 'utf8')).toBe('2');
    expect(await readdir(directory.path)).toEqual(['a']);
  });

  it('keeps the temp file after a failed publish, for the caller to discard', async () => {
    const target = path.join(directory.path, 'b');
    const prepared = await PreparedFile.prepare(target, '1');
    await mkdir(target);
    await writeFile(path.join(target, 'x'), '');
    await expect(prepared.publish()).rejects.toMatchObject({ code: 'EISDIR' });
    expect((await readdir(directory.path)).sort()).toEqual([path.basename(prepared.tempPath), 'b'].sort());
    await prepared.discard();
    expect(await readdir(directory.path)).toEqual(['b']);
  });

  it('never writes into, nor removes, a temp path another writer holds', async () => {
    const target = path.join(directory.path, 'c');
    const tempPath = path.join(directory.path, tempNameFor('c', 'run-1'));
    await writeFile(tempPath, 'theirs');
    await expect(PreparedFile.prepare(target, 'mine', { tempPath })).rejects.toMatchObject({ code: 'EEXIST' });
    expect(await readFile(tempPath, 'utf8')).toBe('theirs');
  });
});

describe('temp names', () => {
  it("carry this process's owner tag and are recognised by the file sinks' sweep", () => {
    const name = path.basename(smallFileTempPath('/out/run-summary.json'));
    expect(name.startsWith('.run-summary.json.tilehouse-write-')).toBe(true);
    expect(tempNameOwnerTag(name)).toBe(formatOwnerTag());
    expect(isTempFileName(name)).toBe(true);
  });

  it('differ for two writes of one target in one process', () => {
    expect(smallFileTempPath('/out/x')).not.toBe(smallFileTempPath('/out/x'));
  });

  it("are not taken for another program's files", () => {
    expect(tempNameOwnerTag('summary.json.1234.tmp')).toBeUndefined();
    expect(tempNameOwnerTag('.summary.json.tilehouse-.tmp')).toBeUndefined();
    expect(tempNameOwnerTag('.x.tilehouse-r1.tmp')).toBeNull();
  });

  it("let the file sinks' sweep remove a small file's temp left by a killed process, and keep a live one's", async () => {
    const dead = path.join(directory.path, `.run-summary.json.tilehouse-write-0a1b2c3d+${tagOf({ pid: DEAD_PID })}.tmp`);
    const mine = smallFileTempPath(path.join(directory.path, 'run-summary.json'));
    await writeFile(dead, '{');
    await writeFile(mine, '{');
    expect(await removeStaleTempFiles(directory.path, { recursive: false })).toEqual([dead]);
    expect(await readdir(directory.path)).toEqual([path.basename(mine)]);
  });
});
