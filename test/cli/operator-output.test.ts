import { mkdir, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { COMMANDS } from '../../src/cli/commands.js';
import { formatRunSummary } from '../../src/presentation/run-summary.js';
import type { JobRunSummary } from '../../src/pipeline/job-summary.js';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { runCli, sandboxEnv } from '../support/cli-harness.js';
import { detailQuery } from '../support/queries.js';
import { sandboxWorkspaceForAll } from '../support/sandbox-fixture.js';
import { jobRunSummary } from '../support/job-run-summary.js';

/** Issue 11: what a run prints where, flags given twice, the log level, every help's example. */

const INCIDENTS = 120;
const fixture = sandboxWorkspaceForAll(
  { incidents: INCIDENTS },
  [
    { name: 'detail', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }] },
    { name: 'other', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }] },
  ],
  { itemsPerPage: 50 },
);

const tokenRequests = () => fixture.sandbox.requests.filter((request) => request.endpoint === 'token').length;
const base = () => ['--config', fixture.workspace.configFile, '--jobs', fixture.workspace.jobsDir];

describe('tilehouse run output', () => {
  it('--json prints one summary object on stdout and nothing else; logs stay off stdout', async () => {
    const result = await runCli(['run', ...base(), '--tile', 'detail', '--json'], { env: sandboxEnv(fixture.sandbox) });
    expect(result.exitCode).toBe(0);
    const lines = result.stdout.split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[1]).toBe('');
    const summary = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(Object.keys(summary).sort()).toEqual([
      'command',
      'durationMs',
      'exitCode',
      'failed',
      'partiallyPublished',
      'runId',
      'schemaVersion',
      'startedAt',
      'succeeded',
      'tiles',
      'tokenFetches',
      'window',
    ]);
    expect(summary).toMatchObject({ command: 'run', exitCode: 0, succeeded: 1, failed: 0, partiallyPublished: 0 });
    expect(summary.tiles).toMatchObject([{ job: 'detail', status: 'succeeded', rows: INCIDENTS, pages: 3, nulledValues: 0, rowsDropped: 0 }]);
    // The human summary is on stderr, as before.
    expect(result.stderr.split('\n')).toEqual([
      expect.stringMatching(/^run \S+: 1 succeeded, 0 failed in [\d.]+ s$/),
      expect.stringMatching(/^ {2}ok {3}detail \([\d.]+ s\): 120 rows, 3 pages → .*detail\.csv$/),
      // Where its time went (as status tells it the morning after).
      expect.stringMatching(/^ {7}time: source [\d.]+ s, reading [\d.]+ s, prepare csv [\d.]+ s, publish csv [\d.]+ s$/),
      '',
    ]);
    expect(result.logs.map((line) => line.msg)).toEqual(['run starting', 'job detail succeeded: 120 rows in 3 pages', 'run finished']);
  });

  it('--summary-json FILE and $TILEHOUSE_SUMMARY_FILE write the summary atomically, no temp file left', async () => {
    const dir = path.join(fixture.root, 'summaries');
    await mkdir(dir, { recursive: true });
    const byFlag = await runCli(['run', ...base(), '--tile', 'detail', '--summary-json', path.join(dir, 'flag.json')], { env: sandboxEnv(fixture.sandbox) });
    const byEnv = await runCli(['run', ...base(), '--tile', 'detail'], {
      env: { ...sandboxEnv(fixture.sandbox), TILEHOUSE_SUMMARY_FILE: path.join(dir, 'env.json') },
    });
    for (const result of [byFlag, byEnv]) {
      expect(result.exitCode).toBe(0);
      expect(result.stdout).toBe('');
    }
    expect(await readdir(dir)).toEqual(['env.json', 'flag.json']);
    for (const [file, result] of [
      ['flag.json', byFlag],
      ['env.json', byEnv],
    ] as const) {
      const summary = JSON.parse(await readFile(path.join(dir, file), 'utf8')) as { runId: string; tiles: unknown[] };
      expect(summary).toMatchObject({ command: 'run', exitCode: 0, tiles: [{ job: 'detail', rows: INCIDENTS }] });
      expect(result.stderr).toContain(`run ${summary.runId}:`);
    }
  });

  it('refuses a summary file in a directory that does not exist before fetching anything: exit 2', async () => {
    const before = tokenRequests();
    const missing = path.join(fixture.root, 'no-such-dir', 'summary.json');
    const result = await runCli(['run', ...base(), '--summary-json', missing], { env: sandboxEnv(fixture.sandbox) });
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toBe(
      `tilehouse: usage_invalid:\n  run: --summary-json ${JSON.stringify(missing)}: the directory ${path.dirname(missing)} does not exist\n`,
    );
    expect(tokenRequests()).toBe(before);
  });

  it('runs a tile named twice once', async () => {
    const before = tokenRequests();
    const result = await runCli(['run', ...base(), '--tile', 'detail', '--tile', 'detail', '--json'], { env: sandboxEnv(fixture.sandbox) });
    expect(result.exitCode).toBe(0);
    expect((JSON.parse(result.stdout) as { tiles: unknown[] }).tiles).toHaveLength(1);
    expect(tokenRequests() - before).toBe(1);
  });

  it('logs at debug with -v and only errors with -q', async () => {
    const verbose = await runCli(['run', ...base(), '--tile', 'detail', '-v'], { env: sandboxEnv(fixture.sandbox) });
    expect(verbose.logs.filter((line) => line.msg === 'page written')).toHaveLength(3);
    const quiet = await runCli(['run', ...base(), '--tile', 'detail', '-q'], { env: sandboxEnv(fixture.sandbox) });
    expect(quiet.exitCode).toBe(0);
    expect(quiet.logs).toEqual([]);
    expect(quiet.stderr).toMatch(/^run \S+: 1 succeeded, 0 failed in [\d.]+ s\n {2}ok {3}detail /);
  });
});

describe('usage errors (exit 2, nothing run)', () => {
  it.each([
    { args: ['run', '--log-level', 'verbose'], says: 'run: --log-level must be one of trace, debug, info, warn, error, fatal, silent; got "verbose"' },
    { args: ['run', '-q', '-v'], says: 'run: --quiet and --verbose contradict each other; give one' },
    { args: ['run', '--config', 'a.yaml', '--config', 'b.yaml'], says: 'run: --config is given 2 times ("a.yaml", "b.yaml"); give it once' },
    { args: ['validate', '-c', 'a.yaml', '--config=b.yaml'], says: 'validate: --config is given 2 times ("a.yaml", "b.yaml"); give it once' },
    {
      args: ['run', '--json', '--summary-json', 'x.json'],
      says: 'run: --json prints the summary on stdout and --summary-json "x.json" writes it to a file; give one',
    },
    {
      args: ['backfill', '--tile', 'a', '--tile', 'b', '--from', '2026-01-01', '--to', '2026-01-02'],
      says: 'backfill: one --job per backfill, got a, b; run one backfill per job (each has its own windows and re-run commands)',
    },
  ])('$args.0 $args.1 $args.2 $args.3: $says', async ({ args, says }) => {
    const before = tokenRequests();
    const result = await runCli(args, { env: sandboxEnv(fixture.sandbox) });
    expect(result).toMatchObject({ exitCode: 2, stdout: '', stderr: `tilehouse: usage_invalid:\n  ${says}\n` });
    expect(tokenRequests()).toBe(before);
  });

  it('refuses an unknown $TILEHOUSE_LOG_LEVEL the same way', async () => {
    const result = await runCli(['run', ...base()], { env: { ...sandboxEnv(fixture.sandbox), TILEHOUSE_LOG_LEVEL: 'loud' } });
    expect(result).toMatchObject({
      exitCode: 2,
      stderr: 'tilehouse: usage_invalid:\n  $TILEHOUSE_LOG_LEVEL must be one of trace, debug, info, warn, error, fatal, silent; got "loud"\n',
    });
  });
});

describe('help', () => {
  it.each(COMMANDS.map((command) => command.name))('tilehouse %s --help shows an example', async (name) => {
    const result = await runCli([name, '--help'], { env: {} });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toMatch(new RegExp(`\\nExample:\\n {2}(\\S+=\\S+ )?tilehouse ${name} `));
  });
});

describe('formatRunSummary', () => {
  const tile = (overrides: Partial<JobRunSummary>) =>
    jobRunSummary({
      job: 'by_type',
      runId: 'r1',
      rows: 48,
      bytes: 4096,
      durationMs: 120,
      outputs: [{ sink: 'csv', target: 'out/by_type.csv', rows: 48, details: {} }],
      targets: ['out/by_type.csv'],
      ...overrides,
    });

  it('says what made an "ok" less than whole: nulled values, dropped rows, warnings, retries', () => {
    const text = formatRunSummary({
      runId: 'r1',
      startedAt: '',
      durationMs: 1500,
      tokenFetches: 1,
      succeeded: 1,
      failed: 0,
      partiallyPublished: 0,
      tiles: [
        tile({ nulledValues: 48, rowsDropped: 2, warnings: ['column "X": unknown dataType "money", loaded as STRING'], retries: 3, reauthentications: 1 }),
      ],
    });
    expect(text.split('\n')).toEqual([
      'run r1: 1 succeeded, 0 failed in 1.5 s',
      '  ok   by_type (0.1 s): 48 rows, 1 page → out/by_type.csv',
      '       48 values did not parse and were written as null (onInvalidValue: null)',
      '       2 rows outside the window dropped',
      '       warning: column "X": unknown dataType "money", loaded as STRING',
      '       3 retries, 1 re-authentication',
      '',
    ]);
  });

  it('names which targets hold which run after a partial publish', () => {
    const text = formatRunSummary({
      runId: 'r2',
      startedAt: '',
      durationMs: 900,
      tokenFetches: 1,
      succeeded: 0,
      failed: 0,
      partiallyPublished: 1,
      tiles: [tile({ status: 'partially_published', unpublished: ['bigquery p.d.by_type'], error: { code: 'publish_partial', message: 'bigquery failed' } })],
    });
    expect(text.split('\n')).toEqual([
      'run r2: 0 succeeded, 0 failed, 1 PARTIALLY PUBLISHED in 0.9 s',
      '  PART by_type (0.1 s): publish_partial: bigquery failed',
      '       published (new run): out/by_type.csv',
      '       NOT published (previous run kept): bigquery p.d.by_type; re-run this tile',
      '',
    ]);
  });

  // The summary's message names the job so that it reads on its own; the line names it already.
  it("names a failed tile's job once: the line's, not again the message's", () => {
    const error = { code: 'write_failed', message: 'job by_type: csv out/by_type.csv: renaming the temp file failed: EIO' };
    const text = formatRunSummary({
      runId: 'r3',
      startedAt: '',
      durationMs: 300,
      tokenFetches: 1,
      succeeded: 0,
      failed: 1,
      partiallyPublished: 0,
      tiles: [tile({ status: 'failed', outputs: [], error })],
    });
    expect(text.split('\n')).toEqual([
      'run r3: 0 succeeded, 1 failed in 0.3 s',
      '  FAIL by_type (0.1 s): write_failed: csv out/by_type.csv: renaming the temp file failed: EIO',
      '',
    ]);
  });
});
