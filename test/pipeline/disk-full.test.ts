import { execFileSync } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { listFiles, runCli, sandboxEnv, writeWorkspace, type Workspace } from '../support/cli-harness.js';
import { detailQuery } from '../support/queries.js';
import { sandboxAndRootForAll } from '../support/sandbox-fixture.js';
import { tryMountTinyFs } from '../support/tiny-fs.js';

// A real full disk: a 64 KiB tmpfs as each file sink's directory (tryMountTinyFs). The BigQuery
// sink's load file: test/sinks/bigquery/ndjson-file.test.ts, and end to end bigquery-disk-full.test.ts.
/** Each file sink kind, writing into its own tiny file system; the previous file is already there. */
const KINDS = [
  { label: 'CSV', file: 'incident_detail.csv', sink: {} as Record<string, unknown> },
  { label: 'gzip CSV', file: 'incident_detail.csv.gz', sink: { gzip: true } },
  { label: 'Parquet', file: 'incident_detail.parquet', sink: { type: 'parquet' } },
] as const;

const fixture = sandboxAndRootForAll({ incidents: 6000 });
const workspaces = new Map<string, Workspace>();
const mountFailures = new Map<string, string | undefined>();
const PREVIOUS = 'previous run\r\n';

beforeAll(async () => {
  // Parquet compresses ~5:1; 6000 rows are ~3x the file system in every format.
  for (const kind of KINDS) {
    const kindRoot = path.join(fixture.root, kind.label.replace(/\W/g, '-'));
    await mkdir(kindRoot, { recursive: true });
    const outDir = path.join(kindRoot, 'out');
    const sink = 'type' in kind.sink ? { type: 'parquet', path: path.join(outDir, '{name}.parquet') } : { type: 'csv', ...kind.sink };
    const workspace = await writeWorkspace(kindRoot, fixture.sandbox, [{ name: 'incident_detail', tile: SANDBOX_TILE, query: detailQuery, sinks: [sink] }], {
      itemsPerPage: 1000,
    });
    await mkdir(workspace.outDir, { recursive: true });
    workspaces.set(kind.label, workspace);
    mountFailures.set(kind.label, tryMountTinyFs(workspace.outDir));
  }
});
afterAll(async () => {
  for (const [label, failure] of mountFailures) if (failure === undefined) execFileSync('umount', [workspaces.get(label)!.outDir]);
});

describe.each(KINDS)('a $label run onto a full disk', (kind) => {
  it('fails with exit 1 and disk_full naming the path, keeps the previous file, leaves no temp file', async (context) => {
    const mountFailure = mountFailures.get(kind.label);
    if (mountFailure !== undefined) context.skip(`cannot mount a tmpfs here: ${mountFailure}`);
    const workspace = workspaces.get(kind.label)!;
    const target = path.join(workspace.outDir, kind.file);
    await writeFile(target, PREVIOUS);

    const result = await runCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir], { env: sandboxEnv(fixture.sandbox) });

    expect(result.exitCode).toBe(1);
    const finished = result.logs.find((line) => line.msg === 'run finished') as { summary: { tiles: Array<{ error: { code: string; message: string } }> } };
    expect(finished.summary.tiles[0]!.error.code).toBe('disk_full');
    expect(finished.summary.tiles[0]!.error.message).toContain(target);
    expect(finished.summary.tiles[0]!.error.message).toContain('free space on that volume');
    expect(result.stderr).toContain('disk_full');
    // A clean message: no stack trace, no internal error.
    expect(result.stderr).not.toMatch(/\n\s+at |internal_error/);
    expect(await readFile(target, 'utf8')).toBe(PREVIOUS);
    expect(await listFiles(workspace.outDir)).toEqual([kind.file]);
  });

  it('writes the file where there is room: the same run onto a file system large enough', async (context) => {
    const mountFailure = mountFailures.get(kind.label);
    if (mountFailure !== undefined) context.skip(`cannot mount a tmpfs here: ${mountFailure}`);
    const workspace = workspaces.get(kind.label)!;
    // Grown for good: a tmpfs holding more than 64 KiB cannot shrink back.
    execFileSync('mount', ['-o', 'remount,size=8m', workspace.outDir]);
    const result = await runCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir], { env: sandboxEnv(fixture.sandbox) });
    expect(result.exitCode).toBe(0);
    expect((await readFile(path.join(workspace.outDir, kind.file))).length).toBeGreaterThan(64 * 1024);
    expect(await listFiles(workspace.outDir)).toEqual([kind.file]);
  });
});
