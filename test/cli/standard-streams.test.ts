import { spawn } from 'node:child_process';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { listFiles, sandboxEnv } from '../support/cli-harness.js';
import { CLI_ENTRY, exitWithin, spawnCli, splitStderr, textOf } from '../support/child-process.js';
import { readCsv } from '../support/csv-read.js';
import { detailCsvJob } from '../support/queries.js';
import { sandboxWorkspaceForAll } from '../support/sandbox-fixture.js';

/**
 * Issue 9: a closed stdout or stderr (the reader of a pipe went away: `| head`, a log shipper
 * that died) must neither hang tilehouse nor change the outcome of a run. Every test runs the
 * real CLI in a child process over real pipes, each bounded in time.
 */

const INCIDENTS = 600;
const PREVIOUS = 'previous output\r\n';
/** A run takes ~2 s here; a hang is what these tests are about, so every child gets this long at most. */
const LIMIT_MS = 30_000;

// 30 pages of 20 rows at 30 ms each, one at a time: long enough that the reader is gone well
// before the run ends, and that a signal arrives mid-export. A debug line per page at trace.
const fixture = sandboxWorkspaceForAll({ incidents: INCIDENTS, latencyMs: 30 }, [detailCsvJob], { itemsPerPage: 20, concurrency: 1 });
const target = () => path.join(fixture.workspace.outDir, 'incident_detail.csv');

async function resetOutput(): Promise<void> {
  await rm(fixture.workspace.outDir, { recursive: true, force: true });
  await mkdir(fixture.workspace.outDir, { recursive: true });
  await writeFile(target(), PREVIOUS);
}

const runArgs = () => ['run', '--config', fixture.workspace.configFile, '--jobs', fixture.workspace.jobsDir, '--log-level', 'trace'];

function exportRequests(): number {
  return fixture.sandbox.requests.filter((request) => request.endpoint === 'export').length;
}

/** Resolves once the sandbox has seen `count` more export requests than `before`: the run is under way. */
async function exportUnderWay(before: number, count: number): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (exportRequests() - before < count) {
    if (Date.now() > deadline) throw new Error('the run never got going');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('tilehouse run with a closed standard stream', () => {
  it.each([
    { outcome: 'succeeds', code: 0, status: 'exit 0' },
    // Headers change at page 20 of the export and again at page 20 of the re-read: export_inconsistent, late in the run.
    { outcome: 'fails late', code: 1, status: 'exit 1' },
  ])('`run --log-level trace 2>&1 | head -1` of a run that $outcome: $status, at once, no temp file', async ({ code }) => {
    await resetOutput();
    fixture.sandbox.clearFaults();
    if (code !== 0) fixture.sandbox.inject({ kind: 'header-mismatch', pageNumber: 20, times: 2 });
    // A real shell pipeline. The shell reports tilehouse's own exit status after head has gone.
    const script = '"$NODE" --import tsx "$CLI" "$@" 2>&1 | head -1; echo "tilehouse exit ${PIPESTATUS[0]}"';
    const child = spawn('bash', ['-c', script, 'bash', ...runArgs()], {
      env: { ...process.env, ...sandboxEnv(fixture.sandbox), NODE: process.execPath, CLI: CLI_ENTRY, CI: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // its own process group: a hang is SIGKILLed as a whole
    });
    const [stdout, stderr, exit] = await Promise.all([textOf(child.stdout), textOf(child.stderr), exitWithin(child, LIMIT_MS)]);

    expect(stderr).toBe('');
    const [first, status, ...rest] = stdout.split('\n');
    expect(JSON.parse(first!)).toMatchObject({ level: 30, msg: 'run starting', jobs: ['incident_detail'] });
    expect(status).toBe(`tilehouse exit ${code}`);
    expect(rest).toEqual(['']);
    expect(exit.code).toBe(0);
    if (code === 0) {
      expect((await readCsv(target())).rows).toHaveLength(INCIDENTS);
    } else {
      expect(await readFile(target(), 'utf8')).toBe(PREVIOUS);
    }
    expect(await listFiles(fixture.workspace.outDir)).toEqual(['incident_detail.csv']);
  });

  it('completes a run with stdout closed: exit 0, every log line on stderr, the CSV published', async () => {
    await resetOutput();
    const child = spawnCli(runArgs(), { env: { ...process.env, ...sandboxEnv(fixture.sandbox), CI: '' }, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.destroy(); // the reader is gone before tilehouse writes a byte
    const [stderr, exit] = await Promise.all([textOf(child.stderr), exitWithin(child, LIMIT_MS)]);

    expect(exit.code).toBe(0);
    const { logs, text } = splitStderr(stderr);
    const messages = logs.map((line) => line.msg);
    expect(messages[0]).toBe('run starting');
    expect(messages.at(-1)).toBe('run finished');
    expect(messages.filter((message) => message === 'page written')).toHaveLength(INCIDENTS / 20);
    expect(text).toEqual([
      expect.stringMatching(/^run \S+: 1 succeeded, 0 failed in [\d.]+ s$/),
      expect.stringMatching(/^ {2}ok {3}incident_detail \([\d.]+ s\): 600 rows, 30 pages → /),
      expect.stringMatching(/^ {7}time: source [\d.]+ s, reading [\d.]+ s, prepare csv [\d.]+ s, publish csv [\d.]+ s$/),
      '',
    ]);
    expect((await readCsv(target())).rows).toHaveLength(INCIDENTS);
    expect(await listFiles(fixture.workspace.outDir)).toEqual(['incident_detail.csv']);
  });

  it('completes a run with stderr closed: exit 0, the --json summary alone on stdout, the CSV published', async () => {
    await resetOutput();
    const child = spawnCli([...runArgs(), '--json'], { env: { ...process.env, ...sandboxEnv(fixture.sandbox), CI: '' }, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stderr!.destroy();
    const [stdout, exit] = await Promise.all([textOf(child.stdout), exitWithin(child, LIMIT_MS)]);

    expect(exit.code).toBe(0);
    const [line, end, ...rest] = stdout.split('\n');
    expect([end, rest]).toEqual(['', []]);
    expect(JSON.parse(line!)).toMatchObject({
      command: 'run',
      exitCode: 0,
      succeeded: 1,
      failed: 0,
      tiles: [{ job: 'incident_detail', status: 'succeeded', rows: INCIDENTS }],
    });
    expect((await readCsv(target())).rows).toHaveLength(INCIDENTS);
  });

  it.each([
    { closed: 'stderr', signal: 'SIGINT' as const, code: 130 },
    { closed: 'stdout and stderr', signal: 'SIGTERM' as const, code: 143 },
  ])('stops on $signal with $closed closed: exit $code, no temp file, the previous output untouched', async ({ closed, signal, code }) => {
    await resetOutput();
    fixture.sandbox.clearFaults();
    const before = exportRequests();
    const child = spawnCli(runArgs(), { env: { ...process.env, ...sandboxEnv(fixture.sandbox), CI: '' }, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stderr!.destroy();
    if (closed.startsWith('stdout')) child.stdout!.destroy();
    const exited = exitWithin(child, LIMIT_MS);
    await exportUnderWay(before, 5);
    child.kill(signal);

    expect((await exited).code).toBe(code);
    expect(await readFile(target(), 'utf8')).toBe(PREVIOUS);
    expect(await listFiles(fixture.workspace.outDir)).toEqual(['incident_detail.csv']);
  });
});
