import { execFileSync } from 'node:child_process';
import { mkdir, readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NdjsonFile } from '../../../src/sinks/bigquery/ndjson-file.js';
import { makeTempDir } from '../../support/temp-dir.js';
import { underCi } from '../../support/ci.js';

// A real full disk: a 64 KiB tmpfs as the load files' directory. Mounting needs root (CI here runs
// as root, and there a failed mount fails the test); elsewhere the test says why it cannot run instead of passing vacuously.
let root: string;
let directory: string;
let mountFailure: string | undefined;

beforeAll(async () => {
  root = await makeTempDir();
  directory = path.join(root, 'tmpfs');
  await mkdir(directory);
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', directory], { stdio: 'pipe' });
  } catch (error) {
    if (underCi()) throw new Error(`CI=true: a tmpfs must be mountable for the disk-full test: ${(error as Error).message}`);
    mountFailure = (error as Error).message;
  }
});
afterAll(async () => {
  if (mountFailure === undefined) execFileSync('umount', [directory]);
  await rm(root, { recursive: true, force: true });
});

describe('NdjsonFile on a full disk', () => {
  it('fails with disk_full naming the file, and remove() leaves nothing behind', async (context) => {
    if (mountFailure !== undefined) context.skip(`cannot mount a tmpfs here: ${mountFailure}`);
    const file = await NdjsonFile.create(directory, 'daily', 'run-1');
    const line = `${JSON.stringify({ text: 'x'.repeat(1000) })}\n`;
    const writing = (async () => {
      for (let page = 0; page < 200; page++) await file.writeLines(Array.from({ length: 10 }, () => line));
      await file.close();
    })();
    const failure = await writing.then(
      () => undefined,
      (error: unknown) => error as { code: string; targetKind: string; message: string },
    );
    expect(failure).toMatchObject({ code: 'disk_full', targetKind: 'bigquery' });
    expect(failure?.message.startsWith(`job daily: load file ${file.path}: writing it failed: `)).toBe(true);
    await file.remove();
    expect(await readdir(directory)).toEqual([]);
  });
});
