import { readFile, writeFile } from 'node:fs/promises';
import { parse, stringify } from 'yaml';
import { afterEach, describe, expect, it } from 'vitest';
import { refreshMarginMs, RunToken, SessionToken } from '../../src/source/session-token.js';
import type { Token } from '../../src/source/token-client.js';
import { SANDBOX_TILE, type Sandbox } from '../../sandbox/index.js';
import { runCli, sandboxEnv, writeWorkspace } from '../support/cli-harness.js';
import { detailQuery } from '../support/queries.js';
import { sandboxesEachTest, sandboxForAll } from '../support/sandbox-fixture.js';

describe('RunToken', () => {
  const issuer = (expiresIn?: number) => {
    let issued = 0;
    const fetch = async (): Promise<Token> => {
      issued += 1;
      return { accessToken: `t${issued}`, ...(expiresIn === undefined ? {} : { expiresIn }) };
    };
    return { fetch, count: () => issued };
  };

  it('shares one fetch between tiles asking at once, and keeps a token without expires_in for the whole run', async () => {
    let now = 0;
    const run = new RunToken({ now: () => now });
    const { fetch, count } = issuer();
    const [a, b] = [new SessionToken(fetch, run), new SessionToken(fetch, run)];
    expect(await Promise.all([a.get(), b.get(), a.get()])).toEqual(['t1', 't1', 't1']);
    now = 10 * 24 * 3_600_000;
    expect(await b.get()).toBe('t1');
    expect([count(), run.fetched, a.fetched, b.fetched]).toEqual([1, 1, 1, 0]);
  });

  it('replaces a token a margin before expires_in, not after', async () => {
    let now = 1_000;
    const run = new RunToken({ now: () => now });
    const { fetch } = issuer(3600);
    const token = new SessionToken(fetch, run);
    expect(await token.get()).toBe('t1');
    now = 1_000 + 3_600_000 - refreshMarginMs(3_600_000) - 1;
    expect(await token.get()).toBe('t1');
    now += 1;
    expect(await token.get()).toBe('t2');
    expect(refreshMarginMs(3_600_000)).toBe(60_000);
    expect(refreshMarginMs(2_000)).toBe(400);
  });

  it('a 401 refreshes once for every holder of the stale token; a failed fetch is not kept', async () => {
    const run = new RunToken();
    let fail = true;
    let issued = 0;
    const fetch = async (): Promise<Token> => {
      if (fail) {
        fail = false;
        throw new Error('issuer down');
      }
      issued += 1;
      return { accessToken: `t${issued}` };
    };
    const token = new SessionToken(fetch, run);
    await expect(token.get()).rejects.toThrow('issuer down');
    expect(await token.get()).toBe('t1');
    expect(await Promise.all([token.refresh('t1'), token.refresh('t1')])).toEqual(['t2', 't2']);
    expect(await token.refresh('t1')).toBe('t2');
    expect(run.fetched).toBe(3);
  });
});

describe('tokens per run against the sandbox', () => {
  const fixture = sandboxForAll({ incidents: 80 });
  const shortLived = sandboxForAll({ incidents: 160, tokenLifetimeSeconds: 1, latencyMs: 40 });
  const each = sandboxesEachTest();
  const jobs = ['a', 'b', 'c'].map((name) => ({ name, tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }] }));

  afterEach(async () => {
    fixture.sandbox.clearFaults();
    fixture.sandbox.clearRequests();
  });

  async function run(target: Sandbox, source: Record<string, unknown> = {}, tileConcurrency = 1) {
    const workspace = await writeWorkspace(await each.tempDir(), target, jobs, { itemsPerPage: 10, ...source });
    const config = parse(await readFile(workspace.configFile, 'utf8')) as Record<string, unknown>;
    await writeFile(workspace.configFile, stringify({ ...config, tileConcurrency }));
    target.clearRequests();
    const result = await runCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir, '--json'], { env: sandboxEnv(target) });
    const tokenRequests = target.requests.filter((request) => request.endpoint === 'token');
    return {
      result,
      summary: JSON.parse(result.stdout) as {
        tokenFetches: number;
        tiles: Array<{ tokenFetches: number; throttled: number; retries: number; reauthentications: number }>;
      },
      tokenRequests,
    };
  }

  it('a three-tile run asks the issuer for one token', async () => {
    const { result, summary, tokenRequests } = await run(fixture.sandbox);
    expect(result.exitCode).toBe(0);
    expect(tokenRequests).toHaveLength(1);
    expect(summary.tokenFetches).toBe(1);
    expect(summary.tiles.reduce((sum, tile) => sum + tile.tokenFetches, 0)).toBe(1);
    expect(fixture.sandbox.requests.filter((request) => request.endpoint === 'export' && request.status !== 200)).toEqual([]);
  });

  it('with source.tokenScope: job, each of the three jobs fetches a fresh token of its own', async () => {
    const { result, summary, tokenRequests } = await run(fixture.sandbox, { tokenScope: 'job' });
    expect(result.exitCode).toBe(0);
    expect(tokenRequests).toHaveLength(3);
    expect(summary.tiles.map((tile) => tile.tokenFetches)).toEqual([1, 1, 1]);
    expect(summary.tokenFetches).toBe(3);
  });

  it('three tiles at once still share one token (the first fetch is awaited by all)', async () => {
    const { result, summary, tokenRequests } = await run(fixture.sandbox, {}, 3);
    expect(result.exitCode).toBe(0);
    expect(tokenRequests).toHaveLength(1);
    expect(summary.tokenFetches).toBe(1);
  });

  it('a 429 from the token endpoint is retried like any 429 and counted', async () => {
    fixture.sandbox.inject({ kind: 'rate-limit', endpoint: 'token', retryAfter: 0 });
    const { result, summary, tokenRequests } = await run(fixture.sandbox);
    expect(result.exitCode).toBe(0);
    expect(tokenRequests.map((request) => request.status)).toEqual([429, 200]);
    expect(summary.tokenFetches).toBe(1);
    expect(summary.tiles.reduce((sum, tile) => sum + tile.throttled, 0)).toBe(1);
  });

  it('a 401 mid-run still fetches a new token once, shared by the tiles after it', async () => {
    fixture.sandbox.inject({ kind: 'token-expiry', afterExportCalls: 4 });
    const { result, summary, tokenRequests } = await run(fixture.sandbox);
    expect(result.exitCode).toBe(0);
    expect(tokenRequests).toHaveLength(2);
    expect(summary.tokenFetches).toBe(2);
    // Each page refused with the dead token counts a re-authentication; they share one new token.
    expect(summary.tiles.reduce((sum, tile) => sum + tile.reauthentications, 0)).toBeGreaterThanOrEqual(1);
  });

  it('short-lived tokens are replaced before they expire, so no request is refused', async () => {
    const { result, summary, tokenRequests } = await run(shortLived.sandbox, { concurrency: 1 });
    expect(result.exitCode).toBe(0);
    // 3 tiles x 16 pages x 40+ ms, one page at a time, is about 2 s of 1 s tokens (refreshed
    // 200 ms before their end, well above a page's 40 ms).
    expect(tokenRequests.length).toBeGreaterThanOrEqual(2);
    expect(summary.tokenFetches).toBe(tokenRequests.length);
    expect(shortLived.sandbox.requests.filter((request) => request.status === 401)).toEqual([]);
    expect(summary.tiles.every((tile) => tile.reauthentications === 0)).toBe(true);
  });
});

describe('check and plan fetch tokens like a run', () => {
  const fixture = sandboxForAll({ incidents: 30 });
  const each = sandboxesEachTest();
  const jobs = ['a', 'b', 'c'].map((name) => ({ name, tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }] }));

  afterEach(async () => {
    fixture.sandbox.clearFaults();
    fixture.sandbox.clearRequests();
  });

  async function inspect(command: 'check' | 'plan', source: Record<string, unknown> = {}) {
    const workspace = await writeWorkspace(await each.tempDir(), fixture.sandbox, jobs, { itemsPerPage: 10, ...source });
    fixture.sandbox.clearRequests();
    const result = await runCli([command, '--config', workspace.configFile, '--jobs', workspace.jobsDir], { env: sandboxEnv(fixture.sandbox) });
    const endpoints = fixture.sandbox.requests.map((request) => `${request.endpoint} ${request.status}`);
    return { result, endpoints, tokenRequests: fixture.sandbox.requests.filter((request) => request.endpoint === 'token') };
  }

  for (const command of ['check', 'plan'] as const) {
    it(`${command} over three jobs asks the issuer for one token, then page 0 of each`, async () => {
      const { result, endpoints } = await inspect(command);
      expect(result.exitCode, result.stderr).toBe(0);
      expect(endpoints).toEqual(['token 200', 'export 200', 'export 200', 'export 200']);
    });

    it(`${command} with source.tokenScope: job fetches a fresh token for each job`, async () => {
      const { result, endpoints } = await inspect(command, { tokenScope: 'job' });
      expect(result.exitCode, result.stderr).toBe(0);
      expect(endpoints).toEqual(['token 200', 'export 200', 'token 200', 'export 200', 'token 200', 'export 200']);
    });

    it(`${command}: a 401 at the second job fetches a new token once, which the third job uses too`, async () => {
      fixture.sandbox.inject({ kind: 'token-expiry', afterExportCalls: 1 });
      const { result, endpoints, tokenRequests } = await inspect(command);
      expect(result.exitCode, result.stderr).toBe(0);
      expect(endpoints).toEqual(['token 200', 'export 200', 'export 401', 'token 200', 'export 200', 'export 200']);
      expect(new Set(tokenRequests.map((request) => request.status))).toEqual(new Set([200]));
      if (command === 'check') expect(result.stdout.match(/^ok job /gm)).toHaveLength(3);
    });
  }
});
