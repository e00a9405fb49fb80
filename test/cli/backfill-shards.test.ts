import { appendFile, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { runCli, sandboxEnv, writeWorkspace, type Workspace, refusalCode } from '../support/cli-harness.js';
import { dailyQuery } from '../support/queries.js';
import { sandboxAndRootForAll } from '../support/sandbox-fixture.js';

const DAY_MS = 86_400_000;
const day = (offset: number) => new Date(Date.now() + offset * DAY_MS).toISOString().slice(0, 10);

const job = {
  name: 'daily',
  tile: SANDBOX_TILE,
  query: dailyQuery,
  sinks: [{ type: 'csv' }],
  columns: { Day: { type: 'DATE' }, Incidents: { type: 'INT64' } },
  backfill: { item: 'day', bucketColumn: 'Day' },
};

interface BackfillDocument {
  runId: string;
  exitCode: number;
  tokenFetches: number;
  window: { start: string; end: string };
  shard: { index: number; count: number; windows: number } | null;
  windows: Array<{ window: { from: string; to: string }; summary: { runId: string; status: string } }>;
}

const fixture = sandboxAndRootForAll({ incidents: 2000, now: new Date() });
let workspace: Workspace;
let validate: z.ZodType;

beforeAll(async () => {
  workspace = await writeWorkspace(fixture.root, fixture.sandbox, [job, { ...job, name: 'resumable', sinks: [{ type: 'csv', manifest: true }] }]);
  validate = z.fromJSONSchema(JSON.parse(await readFile('schema/run-summary.schema.json', 'utf8')) as Parameters<typeof z.fromJSONSchema>[0]);
});

function backfill(args: string[], env: Record<string, string> = {}, tile = 'daily') {
  return runCli(
    ['backfill', '--config', workspace.configFile, '--jobs', workspace.jobsDir, '--tile', tile, '--from', day(-8), '--to', day(-1), '--json', ...args],
    {
      env: { ...sandboxEnv(fixture.sandbox), ...env },
    },
  );
}

describe('backfill shards (Indexed Jobs, Cloud Run tasks)', () => {
  it('three workers run every window exactly once, each under the derived run id, one token each, summaries valid', async () => {
    const environments: Array<Record<string, string>> = [
      { JOB_COMPLETION_INDEX: '0', TILEHOUSE_SHARD_COUNT: '3' },
      { CLOUD_RUN_TASK_INDEX: '1', CLOUD_RUN_TASK_COUNT: '3' },
      {},
    ];
    const documents: BackfillDocument[] = [];
    for (const [index, env] of environments.entries()) {
      fixture.sandbox.clearRequests();
      const result = await backfill(index === 2 ? ['--run-id', 'bf-7', '--shard-index', '2', '--shard-count', '3'] : ['--run-id', 'bf-7'], env);
      expect(result.exitCode).toBe(0);
      const document = JSON.parse(result.stdout) as BackfillDocument;
      const check = validate.safeParse(document);
      expect(check.success ? [] : check.error.issues).toEqual([]);
      // The source clock and every window of this worker share one token.
      expect(fixture.sandbox.requests.filter((request) => request.endpoint === 'token')).toHaveLength(1);
      expect(document).toMatchObject({
        runId: 'bf-7',
        exitCode: 0,
        tokenFetches: 1,
        window: { start: day(-8), end: day(-1) },
        shard: { index, count: 3, windows: 7 },
      });
      documents.push(document);
    }
    const windows = documents.flatMap((document) => document.windows.map((result) => result.window.from));
    expect(windows).toEqual(Array.from({ length: 7 }, (_, offset) => day(-8 + offset)));
    for (const result of documents.flatMap((document) => document.windows)) {
      expect(result.summary).toMatchObject({ status: 'succeeded', runId: `bf-7-${result.window.from.replaceAll('-', '')}` });
    }
  });

  it('refuses half a shard, an index beyond the count, and a run id too long for its windows (exit 2)', async () => {
    expect((await backfill([], { JOB_COMPLETION_INDEX: '0' })).stderr).toMatch(/\$JOB_COMPLETION_INDEX is set but not \$TILEHOUSE_SHARD_COUNT/);
    const beyond = await backfill(['--shard-index', '3', '--shard-count', '3']);
    expect(beyond.exitCode).toBe(2);
    expect(refusalCode(beyond)).toBe('usage_invalid');
    expect(beyond.stderr).toMatch(/--shard-index must be from 0 to 2/);
    const long = await backfill(['--run-id', 'x'.repeat(56)]);
    expect(long.exitCode).toBe(2);
    expect(refusalCode(long)).toBe('usage_invalid');
    expect(long.stderr).toMatch(/--run-id must be 1-55/);
  });
});

describe('backfill --resume', () => {
  it('runs only the windows whose file and manifest do not match, and says which it skipped', async () => {
    const first = await backfill(['--run-id', 'first'], {}, 'resumable');
    expect(first.exitCode).toBe(0);
    const file = (from: string) => path.join(workspace.outDir, 'resumable', `${from}.csv`);
    // One window's file changed under it (a half copy), another lost its manifest (a kill between the renames).
    await appendFile(file(day(-6)), 'x');
    await rm(`${file(day(-3))}.manifest.json`);
    fixture.sandbox.clearRequests();
    const resumed = await backfill(['--run-id', 'second', '--resume'], {}, 'resumable');
    expect(resumed.exitCode).toBe(0);
    const document = JSON.parse(resumed.stdout) as BackfillDocument & { skipped: Array<{ from: string }> };
    expect(validate.safeParse(document).success).toBe(true);
    expect(document.windows.map((result) => result.window.from)).toEqual([day(-6), day(-3)]);
    expect(document.skipped.map((window) => window.from)).toEqual([day(-8), day(-7), day(-5), day(-4), day(-2)]);
    expect(resumed.stderr).toMatch(/--resume: 5 already done, skipped/);
    const manifest = JSON.parse(await readFile(`${file(day(-6))}.manifest.json`, 'utf8')) as { runId: string };
    expect(manifest.runId).toBe(`second-${day(-6).replaceAll('-', '')}`);
    // Everything done now: a further --resume runs nothing.
    const idle = await backfill(['--resume'], {}, 'resumable');
    expect((JSON.parse(idle.stdout) as BackfillDocument).windows).toEqual([]);
  });

  it('refuses --resume for a CSV sink without manifest: true (exit 2)', async () => {
    const result = await backfill(['--resume']);
    expect(result.exitCode).toBe(2);
    expect(refusalCode(result)).toBe('backfill_resume_unsupported');
    expect(result.stderr).toMatch(/set manifest: true on sinks\[0\] of daily/);
  });
});
