import { basename, join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { tempFileOwnerTag, tempPathFor } from '../../../src/sinks/stores/file-names.js';
import { currentOwner, formatOwnerTag } from '../../../src/temp-owner.js';
import { column, commit, listEntries, makeContext, makeSink } from '../csv/csv-test-support.js';
import { tempDirEachTest } from '../../support/temp-dir-hooks.js';

// Kubernetes pod names (a CronJob's pods are `<job>-<schedule time>-<random>`) are the host names
// and run up to 63 characters, the longest a host name can be.
const LONG_HOST = `incident-export-weekly-${'x'.repeat(25)}-29384756-abcde`;
vi.mock('node:os', async (importOriginal) => {
  const os = await importOriginal<typeof import('node:os')>();
  return { ...os, hostname: () => LONG_HOST, default: { ...os, hostname: () => LONG_HOST } };
});

const directory = tempDirEachTest('tilehouse-csv-');

describe('temp file names on a host with a 63-character name', () => {
  it('carry the long host name', () => {
    expect(LONG_HOST).toHaveLength(63);
    expect(currentOwner().host).toBe(LONG_HOST);
  });

  it('stay within 255 bytes for a long target name and a 64-character run id, and keep their owner tag', () => {
    for (const target of [`/out/${'t'.repeat(250)}.csv.gz`, `/out/${'é'.repeat(120)}.csv`]) {
      const name = basename(tempPathFor(target, 'r'.repeat(64)));
      expect(Buffer.byteLength(name), name).toBeLessThanOrEqual(255);
      expect(tempFileOwnerTag(name)).toBe(formatOwnerTag());
    }
  });

  it('let a run publish a file whose name is 200 characters long', async () => {
    const long = `${'n'.repeat(196)}.csv`;
    const writer = await makeSink(directory.path, { path: long }).open(makeContext([column('A', 'STRING')], { runId: 'r'.repeat(64) }));
    await writer.writeRows([['x']]);
    const result = await commit(writer);
    expect(result.target).toBe(join(directory.path, long));
    expect(await listEntries(directory.path)).toEqual([long]);
  });
});
