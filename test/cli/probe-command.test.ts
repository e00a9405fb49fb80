import { randomBytes } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SANDBOX_TILE, startSandbox, type Sandbox } from '../../sandbox/index.js';
import { parseRecording } from '../../src/source/recording.js';
import { RecordingWriteError } from '../../src/cli/probe-command.js';
import { listFiles, runCli, sandboxEnv, writeWorkspace, type Workspace } from '../support/cli-harness.js';
import { detailQuery } from '../support/queries.js';
import { makeTempDir } from '../support/temp-dir.js';

/** Issue 19: `tilehouse probe` records what a tenant answered, and the sandbox replays it. */

const INCIDENTS = 130;
let sandbox: Sandbox;
let root: string;
let workspace: Workspace;

beforeAll(async () => {
  sandbox = await startSandbox({ incidents: INCIDENTS });
  root = await makeTempDir();
  workspace = await writeWorkspace(root, sandbox, [{ name: 'detail', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }] }]);
});
afterAll(async () => {
  await sandbox.close();
  await rm(root, { recursive: true, force: true });
});

const probe = (args: string[], where: Workspace = workspace, env = sandboxEnv(sandbox)) =>
  runCli(['probe', '--config', where.configFile, '--jobs', where.jobsDir, ...args], { env });

describe('tilehouse probe', () => {
  it('records --pages pages (shapes only), writes no sink, prints nothing on stdout and a report on stderr', async () => {
    const file = path.join(root, 'three.json');
    const before = sandbox.requests.length;
    const result = await probe(['--job', 'detail', '--pages', '2', '--record', file]);
    expect(result).toMatchObject({ exitCode: 0, stdout: '' });
    expect(result.stderr).toContain(`probe job detail: 2 pages recorded (100 of ${INCIDENTS} rows) into ${file}`);
    // The sandbox's own clock stands still at its dataset's "now": the only difference it reports.
    expect(result.stderr.split('\n').slice(1)).toEqual([
      expect.stringMatching(/^  differs: clock: the server's Date is -\d+ s from ours$/),
      '  page identity: echo (the echoed pageNumber follows the request: each page is proven by it)',
      '',
    ]);
    expect(await listFiles(workspace.outDir)).toEqual([]);
    // One token, then exactly the pages asked for, then page 0 again (is the row order stable?).
    expect(sandbox.requests.slice(before).map((request) => [request.endpoint, request.pageNumber])).toEqual([
      ['token', null],
      ['export', 0],
      ['export', 1],
      ['export', 0],
    ]);
    const recording = parseRecording(await readFile(file, 'utf8'), file);
    expect(recording).toMatchObject({ job: 'detail', tile: SANDBOX_TILE, pagesAsked: 2, withValues: false, checks: { accepted: true } });
    expect(recording.token).toMatchObject({ status: 200, tokenType: 'Bearer', expiresIn: 3600, fields: ['access_token', 'expires_in', 'token_type'] });
    expect(recording.behaviour).toEqual({
      echo: 'request',
      hasPrev: 'page-above-zero',
      compression: 'none',
      rowShape: 'array',
      dateOffsetMs: expect.any(Number),
      rowOrderStable: true,
    });
    const [page0, page1] = recording.pages;
    expect(page1).toMatchObject({ pageNumber: 1, rows: 50, navigation: { hasPrev: true, hasNext: true, rowsCount: 50, totalRows: INCIDENTS } });
    expect(page0!.headers).toEqual(['Number', 'Created', 'Description', 'Severity']);
    expect(page0!.query).toMatchObject({ options: { pageNumber: 0, itemsPerPage: 50 } });
    expect(page0!.values).toBeUndefined();
    // Shapes, not values: Number integers, Created epoch ms, Severity 4-character text.
    expect(page0!.columns[0]).toEqual([{ type: 'number', class: 'integer', count: 50, minLength: 1, maxLength: 2 }]);
    expect(page0!.columns[1]).toEqual([{ type: 'number', class: 'epoch-ms', count: 50, minLength: 13, maxLength: 13 }]);
    expect(page0!.columns[3]).toEqual([{ type: 'string', class: 'text', count: 50, minLength: 4, maxLength: 4 }]);
    expect(recording.exchanges.map((exchange) => `${exchange.endpoint} ${exchange.status} ${exchange.path}`)).toEqual([
      'token 200 /oauth/token',
      `export 200 /api/v1/topics/incident/execute?tileId=${SANDBOX_TILE}`,
      `export 200 /api/v1/topics/incident/execute?tileId=${SANDBOX_TILE}`,
      `export 200 /api/v1/topics/incident/execute?tileId=${SANDBOX_TILE}`,
    ]);
    expect(recording.exchanges.map((exchange) => exchange.pageNumber)).toEqual([null, 0, 1, 0]);
    expect(recording.exchanges[1]!.headers).toMatchObject({ 'content-type': 'application/json; charset=utf-8', date: expect.any(String) });
  });

  it('stops at the last page when the tile ends before --pages', async () => {
    const file = path.join(root, 'all.json');
    const result = await probe(['--job', 'detail', '--pages', '9', '--record', file]);
    expect(result.exitCode).toBe(0);
    const recording = parseRecording(await readFile(file, 'utf8'), file);
    expect(recording.pages.map((page) => page.rows)).toEqual([50, 50, 30]);
    expect(recording.checks).toEqual({ accepted: true, pageIdentity: 'echo' });
  });

  it('reports what differs from the sandbox: an echo of the saved query, gzip, and that a run accepts it by its rows', async () => {
    const odd = await startSandbox({ incidents: INCIDENTS, echo: 'saved-query', compress: true });
    try {
      const oddRoot = await makeTempDir();
      const where = await writeWorkspace(oddRoot, odd, [{ name: 'detail', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }] }]);
      const file = path.join(oddRoot, 'odd.json');
      const result = await probe(['--job', 'detail', '--record', file], where, sandboxEnv(odd));
      expect(result.exitCode).toBe(0);
      expect(result.stderr).toContain('differs: echo: saved-query');
      expect(result.stderr).toContain('differs: compression: gzip');
      expect(result.stderr).toContain('page identity: rows-digest (the echo does not follow the request');
      expect(result.stderr).not.toContain('a run would refuse this tile');
      const recording = parseRecording(await readFile(file, 'utf8'), file);
      expect(recording.behaviour).toMatchObject({ echo: 'saved-query', compression: 'gzip' });
      expect(recording.pages.map((page) => (page.query as { options: { pageNumber: number } }).options.pageNumber)).toEqual([0, 0, 0]);
      await rm(oddRoot, { recursive: true, force: true });
    } finally {
      await odd.close();
    }
  });

  it('a failing source: exit 1, and the file holds what was recorded and the failure', async () => {
    const file = path.join(root, 'failing.json');
    sandbox.inject({ kind: 'server-error', endpoint: 'export', pageNumber: 1, status: 503, times: Infinity });
    try {
      const result = await probe(['--job', 'detail', '--record', file]);
      expect(result.exitCode).toBe(1);
      expect(result.stderr).toContain('the source failed: ');
      const recording = parseRecording(await readFile(file, 'utf8'), file);
      expect(recording.pages.map((page) => page.pageNumber)).toEqual([0]);
      expect(recording.failure?.code).toBe('source_server_error');
      expect(recording.exchanges.filter((exchange) => exchange.status === 503).length).toBeGreaterThan(1);
      expect(recording.exchanges.find((exchange) => exchange.status === 503)?.error).toBe('service unavailable');
    } finally {
      sandbox.clearFaults();
    }
  });

  it('a failing page with OTEL_EXPORTER_OTLP_ENDPOINT set: the source failure, never internal_error (issue 61)', async () => {
    // The log lines' mixin (trace_id/span_id) once returned one frozen object, and pino merges each
    // line's fields into it: the retry warning's `page` ended the probe as internal_error.
    sandbox.inject({ kind: 'server-error', endpoint: 'export', pageNumber: 1, status: 503, times: Infinity });
    try {
      const env = { ...sandboxEnv(sandbox), OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', OTEL_METRICS_EXPORTER: 'none' };
      const result = await probe(['--job', 'detail', '--pages', '3', '--record', path.join(root, 'traced.json')], workspace, env);
      expect(result.stderr).not.toContain('internal_error');
      expect(result.stderr).not.toContain('not extensible');
      expect(result.exitCode).toBe(1);
      expect(result.stderr.split('\n').at(-2)).toBe(
        '  the source failed: source_server_error: job detail: page 1: the server failed with HTTP 503: service unavailable',
      );
    } finally {
      sandbox.clearFaults();
    }
  });

  it('refuses bad usage with exit 2 before any request', async () => {
    const before = sandbox.requests.length;
    const cases = [
      [['--job', 'detail'], '--record FILE is required'],
      [['--record', path.join(root, 'x.json')], 'name exactly one job'],
      [['--job', 'detail', '--record', path.join(root, 'x.json'), '--pages', '0'], '--pages must be a whole number'],
      // A record path that cannot be written is found before the tenant is asked anything.
      [['--job', 'detail', '--record', path.join(root, 'missing-dir', 'x.json')], `cannot write in ${path.join(root, 'missing-dir')} (ENOENT)`],
      [['--job', 'detail', '--record', root], 'is a directory; name a file'],
    ] as const;
    for (const [args, message] of cases) {
      const result = await probe([...args]);
      expect(result.exitCode).toBe(2);
      expect(result.stderr).toContain(message);
    }
    expect(sandbox.requests.length).toBe(before);
  });
});

describe('RecordingWriteError', () => {
  it('names the file, with the stable code of a known file-system failure, else probe_record_write_failed', () => {
    const full = new RecordingWriteError('/data/probe.json', Object.assign(new Error('no space'), { code: 'ENOSPC' }));
    expect([full.code, full.exitCode, full.message]).toEqual([
      'disk_full',
      1,
      'cannot write the recording to /data/probe.json: ENOSPC; free space on that volume',
    ]);
    expect(new RecordingWriteError('/data/probe.json', Object.assign(new Error('gone'), { code: 'ENOENT' })).code).toBe('probe_record_write_failed');
  });
});

describe('a probe recording replayed', () => {
  it('a probe of the sandbox (--with-values) and a replay of it give byte-identical CSV through tilehouse', async () => {
    const file = path.join(root, 'values.json');
    expect((await probe(['--job', 'detail', '--pages', '9', '--with-values', '--record', file])).exitCode).toBe(0);
    const replay = await startSandbox({ replay: parseRecording(await readFile(file, 'utf8'), file) });
    const replayRoot = await makeTempDir();
    try {
      const live = await runCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir], { env: sandboxEnv(sandbox) });
      const where = await writeWorkspace(replayRoot, replay, [{ name: 'detail', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }] }]);
      const replayed = await runCli(['run', '--config', where.configFile, '--jobs', where.jobsDir], { env: sandboxEnv(replay) });
      expect([live.exitCode, replayed.exitCode]).toEqual([0, 0]);
      const [csv] = await listFiles(workspace.outDir);
      expect(await listFiles(where.outDir)).toEqual([csv]);
      const liveBytes = await readFile(path.join(workspace.outDir, csv!));
      expect(liveBytes.toString('utf8').split('\n').length).toBeGreaterThan(INCIDENTS);
      expect((await readFile(path.join(where.outDir, csv!))).equals(liveBytes)).toBe(true);
    } finally {
      await replay.close();
      await rm(replayRoot, { recursive: true, force: true });
      await rm(workspace.outDir, { recursive: true, force: true });
    }
  });
});

describe('secrets in a recording', () => {
  it('the file holds neither the client id (from the environment), the client secret, nor any access token, as bytes', async () => {
    const clientId = `probe-id-${randomBytes(6).toString('hex')}`;
    const clientSecret = `probe-secret-${randomBytes(8).toString('hex')}`;
    const secretive = await startSandbox({ incidents: 60, clientId, clientSecret });
    const secretRoot = await makeTempDir();
    try {
      const where = await writeWorkspace(secretRoot, secretive, [{ name: 'detail', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }] }]);
      const file = path.join(secretRoot, 'secret.json');
      const result = await probe(['--job', 'detail', '--with-values', '--record', file, '--log-level', 'trace'], where, sandboxEnv(secretive));
      expect(result.exitCode).toBe(0);
      expect(secretive.issuedTokens.length).toBeGreaterThan(0);
      const bytes = await readFile(file);
      const everything = Buffer.concat([bytes, Buffer.from(result.stdout + result.stderr + JSON.stringify(result.logs))]);
      for (const secret of [clientId, clientSecret, ...secretive.issuedTokens]) {
        expect(everything.includes(secret)).toBe(false);
        expect(everything.includes(encodeURIComponent(secret))).toBe(false);
      }
      expect(bytes.toString('utf8')).not.toMatch(/access_token"\s*:/);
    } finally {
      await secretive.close();
      await rm(secretRoot, { recursive: true, force: true });
    }
  });
});
