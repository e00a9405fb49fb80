import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { SLICE_BYTES } from '../../src/source/json-body.js';
import { runCli, sandboxEnv, writeWorkspace } from '../support/cli-harness.js';
import { detailQuery } from '../support/queries.js';
import { sandboxesEachTest } from '../support/sandbox-fixture.js';

/**
 * Export pages of 2000 rows (~130 KB) are parsed from their bytes in slices (src/source/json-body.ts,
 * parseJsonBytes); pages of 100 rows are below the size that is sliced and parsed whole. The same
 * tile read both ways must give the same file, byte for byte, on every wire format the sandbox
 * speaks, with an INT64 column so that every page is also read for exact numbers.
 */
const WIRES = [
  { rowShape: 'array', datetimeFormat: 'epoch-ms', compress: false },
  { rowShape: 'object', datetimeFormat: 'timestamp-object', compress: true },
  { rowShape: 'array', datetimeFormat: 'iso', compress: true },
] as const;

const each = sandboxesEachTest();
afterEach(() => {
  vi.restoreAllMocks();
});

describe.each(WIRES)('a tile read in pages of 2000 rows (rows $rowShape, datetimes $datetimeFormat, gzip $compress)', (wire) => {
  it('writes the same CSV as pages small enough to be parsed whole, and never decodes a page as one string', async () => {
    const sandbox = await each.sandbox({ incidents: 4000, ...wire });
    const root = await each.tempDir();
    const job = { name: 'incident_detail', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }], columns: { Number: { type: 'INT64' } } };
    const whole = await writeWorkspace(path.join(root, 'whole'), sandbox, [job], { itemsPerPage: 100, concurrency: 2 });
    const sliced = await writeWorkspace(path.join(root, 'sliced'), sandbox, [job], { itemsPerPage: 2000, concurrency: 2 });

    expect((await runCli(['run', '--config', whole.configFile, '--jobs', whole.jobsDir], { env: sandboxEnv(sandbox) })).exitCode).toBe(0);
    const lengths: number[] = [];
    const toString = Buffer.prototype.toString;
    vi.spyOn(Buffer.prototype, 'toString').mockImplementation(function (this: Buffer, ...args: unknown[]) {
      const decoded = (toString as (...a: unknown[]) => string).apply(this, args);
      lengths.push(decoded.length);
      return decoded;
    });
    const result = await runCli(['run', '--config', sliced.configFile, '--jobs', sliced.jobsDir], { env: sandboxEnv(sandbox) });
    vi.restoreAllMocks();
    expect(result.exitCode).toBe(0);
    const summary = (result.logs.find((line) => line.msg === 'run finished') as { summary: { tiles: Array<{ rows: number; pages: number; bytes: number }> } })
      .summary.tiles[0]!;
    expect(summary).toMatchObject({ rows: 4000, pages: 2 });
    if (!wire.compress) expect(summary.bytes / summary.pages).toBeGreaterThan(3 * SLICE_BYTES);
    expect(Math.max(...lengths)).toBeLessThan(2 * SLICE_BYTES);

    const file = 'incident_detail.csv';
    const csv = await readFile(path.join(sliced.outDir, file), 'utf8');
    expect(csv.split('\r\n').length).toBeGreaterThan(4000);
    expect(csv).toBe(await readFile(path.join(whole.outDir, file), 'utf8'));
  }, 60_000);
});
