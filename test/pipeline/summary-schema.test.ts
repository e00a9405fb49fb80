import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { runSummaryDocument, summaryJsonSchemaFile, summarySchema } from '../../src/pipeline/summary-schema.js';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { runCli, sandboxEnv, writeWorkspace, type Workspace, refusalCode } from '../support/cli-harness.js';
import { detailQuery } from '../support/queries.js';
import { loadForRun, PublishFailsSink, runLoaded } from '../support/run-jobs-harness.js';
import { sandboxAndRootForAll } from '../support/sandbox-fixture.js';
import { jobRunSummary } from '../support/job-run-summary.js';

const SCHEMA_FILE = 'schema/run-summary.schema.json';

/** The committed JSON Schema, read back into a validator: what an orchestrator would check against. */
async function committedSchema(): Promise<z.ZodType> {
  return z.fromJSONSchema(JSON.parse(await readFile(SCHEMA_FILE, 'utf8')) as Parameters<typeof z.fromJSONSchema>[0]);
}

async function expectValid(document: unknown): Promise<void> {
  const committed = await committedSchema();
  const result = committed.safeParse(document);
  expect(result.success ? [] : result.error.issues).toEqual([]);
  expect(summarySchema.safeParse(document).success).toBe(true);
}

describe('schema/run-summary.schema.json', () => {
  it('matches the zod schema (run `npm run schema` after changing it)', async () => {
    const { file, text } = summaryJsonSchemaFile();
    expect(await readFile(file, 'utf8')).toBe(text);
  });

  it('refuses a summary without a run id or with an unknown status', async () => {
    const committed = await committedSchema();
    const tile = jobRunSummary();
    const good = {
      command: 'run',
      schemaVersion: 1,
      exitCode: 0,
      runId: 'r',
      window: null,
      startedAt: '2026-06-01T00:00:00.000Z',
      durationMs: 1,
      tokenFetches: 1,
      tiles: [tile],
      succeeded: 1,
      failed: 0,
      partiallyPublished: 0,
    };
    expect(committed.safeParse(good).success).toBe(true);
    const { runId: _dropped, ...withoutRunId } = good;
    expect(committed.safeParse(withoutRunId).success).toBe(false);
    expect(committed.safeParse({ ...good, tiles: [{ ...tile, status: 'done' }] }).success).toBe(false);
  });
});

describe('the run summary against its schema', () => {
  const fixture = sandboxAndRootForAll({ incidents: 60 });
  let workspace: Workspace;
  const jobs = [
    { name: 'first', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }] },
    { name: 'second', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }] },
  ];

  beforeAll(async () => {
    workspace = await writeWorkspace(fixture.root, fixture.sandbox, jobs, { itemsPerPage: 20 });
  });

  const run = (args: string[], env: Record<string, string> = {}) =>
    runCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir, '--json', ...args], { env: { ...sandboxEnv(fixture.sandbox), ...env } });

  it('a successful run: run id and nominal window passed in and echoed, per tile rows, pages, bytes, targets, one token', async () => {
    const result = await run(['--run-id', 'argo-wf-1234', '--window-start', '2026-06-01T06:00:00Z', '--window-end', '2026-06-02T06:00:00Z']);
    expect(result.exitCode).toBe(0);
    const summary = JSON.parse(result.stdout) as z.infer<typeof summarySchema> & { command: 'run' };
    await expectValid(summary);
    expect(summary).toMatchObject({
      command: 'run',
      exitCode: 0,
      runId: 'argo-wf-1234',
      window: { start: '2026-06-01T06:00:00Z', end: '2026-06-02T06:00:00Z' },
      tokenFetches: 1,
    });
    for (const tile of summary.tiles) {
      expect(tile).toMatchObject({
        status: 'succeeded',
        runId: 'argo-wf-1234',
        rows: 60,
        pages: 3,
        targets: [path.join(workspace.outDir, `${tile.job}.csv`)],
        bigqueryJobIds: [],
      });
      expect(tile.bytes).toBeGreaterThan(1000);
      expect(tile.error).toBeUndefined();
    }
    expect(summary.tiles.map((tile) => tile.tokenFetches).sort()).toEqual([0, 1]);
  });

  it('takes the run id from $TILEHOUSE_RUN_ID and refuses half a window (exit 2)', async () => {
    const fromEnv = await run(['--tile', 'first'], { TILEHOUSE_RUN_ID: 'from-env.7' });
    expect(JSON.parse(fromEnv.stdout)).toMatchObject({ runId: 'from-env.7', window: null });
    const half = await run(['--window-start', '2026-06-01']);
    expect(half.exitCode).toBe(2);
    expect(refusalCode(half)).toBe('usage_invalid');
    expect(half.stderr).toMatch(/--window-start and --window-end come together/);
    const backwards = await run(['--window-start', '2026-06-02', '--window-end', '2026-06-01T00:00:00+02:00']);
    expect(backwards.exitCode).toBe(2);
    expect(refusalCode(backwards)).toBe('usage_invalid');
  });

  it('a failed run: exit 1, the tile failed with its error code, still valid', async () => {
    fixture.sandbox.inject({ kind: 'server-error', endpoint: 'export', status: 500, times: Infinity });
    try {
      const result = await run(['--tile', 'first']);
      expect(result.exitCode).toBe(1);
      const summary = JSON.parse(result.stdout) as { tiles: Array<{ status: string; error?: { code: string } }> };
      await expectValid(summary);
      expect(summary).toMatchObject({ exitCode: 1, failed: 1, succeeded: 0 });
      expect(summary.tiles[0]).toMatchObject({ status: 'failed', error: { code: 'source_server_error', retryable: true } });
    } finally {
      fixture.sandbox.clearFaults();
    }
  });

  it('a partially published run: exit 3 document with outputs and unpublished, still valid', async () => {
    const two = await writeWorkspace(path.join(fixture.root, 'two'), fixture.sandbox, [
      {
        name: 'both',
        tile: SANDBOX_TILE,
        query: detailQuery,
        sinks: [
          { type: 'csv', path: 'a.csv' },
          { type: 'csv', path: 'b.csv' },
        ],
      },
    ]);
    const summary = await runLoaded(await loadForRun(two, fixture.sandbox), { sinksFor: (_job, [a, b]) => [a!, new PublishFailsSink(b!)] });
    const document = runSummaryDocument(summary, { exitCode: 3, window: null });
    await expectValid(JSON.parse(JSON.stringify(document)));
    expect(document.tiles[0]).toMatchObject({
      status: 'partially_published',
      unpublished: [path.join(two.outDir, 'b.csv')],
      targets: [path.join(two.outDir, 'a.csv'), path.join(two.outDir, 'b.csv')],
    });
  });
});
