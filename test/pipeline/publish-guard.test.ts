import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { stringify } from 'yaml';
import { beforeEach, describe, expect, it } from 'vitest';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { listFiles, runCli, sandboxEnv, writeWorkspace, type Workspace } from '../support/cli-harness.js';
import { readCsv } from '../support/csv-read.js';
import { detailQueryAbove } from '../support/queries.js';
import { sandboxAndRootForAll } from '../support/sandbox-fixture.js';

// The publish guard over local files, through the CLI as a user meets it: a normal run, then the
// same tile answering no rows, then a tenth of them: refused, the file byte-identical, nothing
// left beside it; --allow-shrink publishes; a modest shrink passes.
const INCIDENTS = 200;
const fixture = sandboxAndRootForAll({ incidents: INCIDENTS });

/** The detail query keeping incidents numbered above `above` (INCIDENTS - above rows). */
const KINDS = [
  { kind: 'csv', file: 'incidents.csv', extra: {} },
  { kind: 'csv', file: 'incidents.csv', extra: { manifest: true } },
  { kind: 'parquet', file: 'incidents.parquet', extra: {} },
  { kind: 'parquet', file: 'incidents.parquet', extra: { manifest: true } },
] as const;

describe.each(KINDS)('the publish guard of a local $kind file $extra', ({ kind, file, extra }) => {
  let workspace: Workspace;
  let target: string;
  let dir: string;

  beforeEach(async () => {
    dir = path.join(fixture.root, `${kind}-${Object.keys(extra).join('-') || 'plain'}-${Math.random().toString(36).slice(2)}`);
    workspace = await writeWorkspace(dir, fixture.sandbox, [jobAbove(0)], { itemsPerPage: 50 });
    target = path.join(workspace.outDir, file);
  });

  function jobAbove(above: number, guard?: unknown) {
    return {
      name: 'incidents',
      tile: SANDBOX_TILE,
      query: detailQueryAbove(above),
      sinks: [{ type: kind, path: path.join(dir, 'out', file), ...extra, ...(guard === undefined ? {} : { guard }) }],
    };
  }

  async function runAbove(above: number, options: { flags?: string[]; env?: Record<string, string>; guard?: unknown } = {}) {
    await writeFile(path.join(workspace.jobsDir, 'incidents.yaml'), stringify(jobAbove(above, options.guard)));
    const summaryFile = path.join(dir, `summary-${Math.random().toString(36).slice(2)}.json`);
    const result = await runCli(
      ['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir, '--summary-json', summaryFile, ...(options.flags ?? [])],
      {
        env: { ...sandboxEnv(fixture.sandbox), ...options.env },
      },
    );
    const summary = JSON.parse(await readFile(summaryFile, 'utf8')) as {
      tiles: Array<Record<string, unknown> & { guard?: { tripped: boolean; overridden: boolean; verdicts: Array<Record<string, unknown>> } }>;
    };
    await rm(summaryFile);
    return { ...result, tile: summary.tiles[0]! };
  }

  it('refuses no rows and a tenth of the rows over a file that holds a run: the file byte-identical, nothing left beside it; --allow-shrink publishes', async () => {
    expect((await runAbove(0)).exitCode).toBe(0);
    const before = await readFile(target);
    const filesBefore = await listFiles(workspace.outDir);

    const empty = await runAbove(INCIDENTS);
    expect(empty.exitCode).toBe(1);
    expect(empty.tile).toMatchObject({ status: 'failed', outputs: [], error: { code: 'publish_guard_tripped' } });
    const message = (empty.tile.error as { message: string }).message;
    expect(message).toContain('job incidents');
    expect(message).toContain(target);
    expect(message).toContain(`it holds ${INCIDENTS} rows`);
    expect(message).toContain('guard.allowEmpty');
    expect(message).toContain('--allow-shrink');
    expect(message).toContain('TILEHOUSE_ALLOW_SHRINK=1');
    expect(empty.tile.guard).toMatchObject({
      tripped: true,
      overridden: false,
      verdicts: [{ target, verdict: 'trip', rule: 'empty', held: INCIDENTS, exported: 0 }],
    });
    expect(empty.stderr).toContain('publish_guard_tripped');
    // Read from the manifest when there is one, else from the file itself (CSV records, Parquet footer).
    expect(String(empty.tile.guard!.verdicts[0]!.reason)).toContain(
      'manifest' in extra ? '(its manifest)' : `(the ${kind === 'csv' ? 'CSV' : 'Parquet'} file counted)`,
    );
    expect((await readFile(target)).equals(before)).toBe(true);
    expect(await listFiles(workspace.outDir)).toEqual(filesBefore);

    const tenth = await runAbove(INCIDENTS - INCIDENTS / 10);
    expect(tenth.exitCode).toBe(1);
    expect(tenth.tile.guard).toMatchObject({ tripped: true, verdicts: [{ verdict: 'trip', rule: 'shrink', held: INCIDENTS, exported: INCIDENTS / 10 }] });
    expect((tenth.tile.error as { message: string }).message).toContain('90% fewer, more than guard.maxShrink 0.5 allows');
    expect((await readFile(target)).equals(before)).toBe(true);
    expect(await listFiles(workspace.outDir)).toEqual(filesBefore);

    const overridden = await runAbove(INCIDENTS - INCIDENTS / 10, { flags: ['--allow-shrink'] });
    expect(overridden.exitCode).toBe(0);
    expect(overridden.tile).toMatchObject({ status: 'succeeded', rows: INCIDENTS / 10, guard: { tripped: true, overridden: true } });
    expect(overridden.stderr).toContain(`warning: ${target}: publish guard overridden (--allow-shrink): 20 rows would replace the ${INCIDENTS} rows it holds`);
    if (kind === 'csv') expect((await readCsv(target)).rows).toHaveLength(INCIDENTS / 10);
  });

  it('passes a modest shrink (30% fewer), and the variable TILEHOUSE_ALLOW_SHRINK=1 overrides as the flag does', async () => {
    expect((await runAbove(0)).exitCode).toBe(0);
    const modest = await runAbove(60);
    expect(modest.exitCode).toBe(0);
    expect(modest.tile.guard).toMatchObject({ tripped: false, verdicts: [{ verdict: 'pass', held: INCIDENTS, exported: 140 }] });
    const emptied = await runAbove(INCIDENTS, { env: { TILEHOUSE_ALLOW_SHRINK: '1' } });
    expect(emptied.exitCode).toBe(0);
    expect(emptied.tile).toMatchObject({ status: 'succeeded', rows: 0, guard: { tripped: true, overridden: true, verdicts: [{ rule: 'empty', held: 140 }] } });
  });

  it('never trips on a first run into nothing, nor over a target emptied by hand; guard settings change the rule', async () => {
    const first = await runAbove(INCIDENTS);
    expect(first.exitCode).toBe(0);
    expect(first.tile.guard).toMatchObject({ tripped: false, verdicts: [{ verdict: 'pass', exported: 0 }] });
    expect((await runAbove(0)).exitCode).toBe(0);
    // Emptied by hand: the file removed (and its manifest), then a run of a tenth.
    await rm(target);
    await rm(`${target}.manifest.json`, { force: true });
    expect((await runAbove(INCIDENTS - 20)).exitCode).toBe(0);
    // The sink's own setting: a shrink of 90% allowed by maxShrink 0.95; an empty run by allowEmpty.
    expect((await runAbove(0)).exitCode).toBe(0);
    expect((await runAbove(INCIDENTS - 20, { guard: { maxShrink: 0.95 } })).exitCode).toBe(0);
    expect((await runAbove(INCIDENTS, { guard: { allowEmpty: true } })).exitCode).toBe(0);
    expect((await runAbove(0)).exitCode).toBe(0);
    const off = await runAbove(INCIDENTS, { guard: false });
    expect(off.exitCode).toBe(0);
    expect(off.tile.guard).toMatchObject({ tripped: false, verdicts: [{ verdict: 'off' }] });
  });
});

describe('the publish guard of a local CSV file emptied by hand to its header', () => {
  it('holds 0 rows: an empty run over it passes', async () => {
    const dir = path.join(fixture.root, 'header-only');
    const workspace = await writeWorkspace(dir, fixture.sandbox, [
      { name: 'incidents', tile: SANDBOX_TILE, query: detailQueryAbove(INCIDENTS), sinks: [{ type: 'csv', path: 'incidents.csv' }] },
    ]);
    await mkdir(workspace.outDir, { recursive: true });
    await writeFile(path.join(workspace.outDir, 'incidents.csv'), 'Number,Created,Description,Severity\r\n');
    const summaryFile = path.join(dir, 'summary.json');
    const result = await runCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir, '--summary-json', summaryFile], {
      env: sandboxEnv(fixture.sandbox),
    });
    expect(result.exitCode).toBe(0);
    // Judged as holding 0 rows, not passed unjudged: an unreadable target ("unknown") exits 0 too.
    const summary = JSON.parse(await readFile(summaryFile, 'utf8')) as { tiles: Array<{ guard: { verdicts: unknown[] } }> };
    expect(summary.tiles[0]!.guard.verdicts).toEqual([expect.objectContaining({ verdict: 'pass', held: 0, exported: 0 })]);
  });
});
