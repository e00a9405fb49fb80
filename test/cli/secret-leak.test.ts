import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { listFiles } from '../support/cli-harness.js';
import { exitWithin, spawnCli, splitStderr, textOf } from '../support/child-process.js';
import { detailQuery } from '../support/queries.js';
import { tempDirForAll } from '../support/temp-dir-hooks.js';

/**
 * Issue 10: an issuer and an API that echo credentials back. The token endpoint's
 * error_description quotes the submitted client secret; the export endpoint's error message quotes
 * the bearer token. Whatever they echo, tilehouse must print none of it, at any log level.
 */

const CLIENT_ID = 'leak-test-client-id';
const SECRET = `leak-test-secret-${randomBytes(6).toString('hex')}`;
const WRONG_SECRET = `wrong-secret-${randomBytes(6).toString('hex')}`;

interface EchoServer {
  url: string;
  /** Every access token issued. */
  issued: string[];
  /** Requests received, of any kind. */
  requests(): number;
  close(): Promise<void>;
}

async function bodyOf(request: IncomingMessage): Promise<Record<string, string>> {
  let text = '';
  for await (const chunk of request) text += String(chunk);
  // JSON today; a form body is read the same way in case the token client switches to one.
  return (request.headers['content-type'] ?? '').includes('json')
    ? (JSON.parse(text) as Record<string, string>)
    : Object.fromEntries(new URLSearchParams(text));
}

async function startEchoServer(): Promise<EchoServer> {
  const issued: string[] = [];
  let requests = 0;
  const server: Server = createServer((request, response) => {
    requests++;
    void (async () => {
      const reply = (status: number, body: unknown) => {
        response.writeHead(status, { 'content-type': 'application/json' });
        response.end(JSON.stringify(body));
      };
      const url = new URL(request.url ?? '/', 'http://localhost');
      if (request.method === 'POST' && url.pathname === '/oauth/token') {
        const body = await bodyOf(request);
        if (body.client_secret !== SECRET) {
          reply(401, { error: 'invalid_client', error_description: `client_secret "${body.client_secret}" is not valid for ${body.client_id}` });
          return;
        }
        const token = `echo-token-${randomBytes(12).toString('hex')}`;
        issued.push(token);
        reply(200, { access_token: token, token_type: 'Bearer', expires_in: 3600 });
        return;
      }
      if (request.method === 'POST' && url.pathname === '/api/v1/topics/incident/execute') {
        await bodyOf(request);
        const token = (request.headers.authorization ?? '').replace(/^Bearer /, '');
        reply(400, { error: { status: 400, message: `token ${token} may not export tile ${url.searchParams.get('tileId')}` } });
        return;
      }
      reply(404, { error: { status: 404, message: 'not found' } });
    })();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    issued,
    requests: () => requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

let echo: EchoServer;
const temp = tempDirForAll();

beforeAll(async () => {
  echo = await startEchoServer();
});
afterAll(async () => {
  await echo.close();
});

/** A config and one job in a directory of its own; `clientSecret` as written into the YAML. */
async function workspace(name: string, clientSecret: string): Promise<{ config: string; jobs: string; out: string }> {
  const dir = path.join(temp.path, name);
  const jobs = path.join(dir, 'jobs');
  const out = path.join(dir, 'out');
  await rm(dir, { recursive: true, force: true });
  await mkdir(jobs, { recursive: true });
  const config = path.join(dir, 'env.yaml');
  await writeFile(
    config,
    stringify({
      source: { baseUrl: echo.url, authUrl: echo.url, clientId: '${LEAK_CLIENT_ID}', clientSecret, requestTimeoutMs: 2000 },
      sinks: { csv: { directory: out } },
    }),
  );
  await writeFile(path.join(jobs, 'echoed.yaml'), stringify({ name: 'echoed', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }] }));
  return { config, jobs, out };
}

/** Runs the real CLI at trace level with the secret in the environment; all of stdout and stderr. */
async function runCli(ws: { config: string; jobs: string }, secret: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawnCli(['run', '--config', ws.config, '--jobs', ws.jobs, '--log-level', 'trace'], {
    env: { ...process.env, LEAK_CLIENT_ID: CLIENT_ID, LEAK_CLIENT_SECRET: secret, TILEHOUSE_LOG_LEVEL: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const [stdout, stderr, exit] = await Promise.all([textOf(child.stdout), textOf(child.stderr), exitWithin(child, 30_000)]);
  return { code: exit.code, stdout, stderr };
}

describe('secrets echoed by the source', () => {
  it('an issuer that echoes the refused client secret: redacted in stderr and in every log line', async () => {
    const ws = await workspace('refused', '${LEAK_CLIENT_SECRET}');
    const result = await runCli(ws, WRONG_SECRET);

    expect(result.code).toBe(1);
    const everything = result.stdout + result.stderr;
    expect(everything).not.toContain(WRONG_SECRET);
    expect(everything).not.toContain(CLIENT_ID);
    const echoed = 'invalid_client — client_secret "[redacted]" is not valid for [redacted]';
    // Logs are on stderr (JSON lines off a terminal), then the human summary; stdout stays empty.
    expect(result.stdout).toBe('');
    const { logs, text } = splitStderr(result.stderr);
    expect(text).toEqual([
      expect.stringMatching(/^run \S+: 0 succeeded, 1 failed in [\d.]+ s$/),
      expect.stringMatching(new RegExp(`^  FAIL echoed \\([\\d.]+ s\\): auth_invalid_client: token request refused \\(HTTP 401\\): ${escape(echoed)}$`)),
      expect.stringMatching(/^ {7}time: source [\d.]+ s, reading [\d.]+ s$/),
      '',
    ]);
    expect(logs.map((line) => line.msg)).toEqual(['run starting', `job echoed failed: token request refused (HTTP 401): ${echoed}`, 'run finished']);
    expect(JSON.stringify(logs)).toContain('client_secret \\"[redacted]\\" is not valid for [redacted]');
  });

  // Needs the token client to call registerSecret(accessToken) for each token it is issued.
  it('an API that echoes the bearer token in its error: neither the secret nor any issued token is printed', async () => {
    const before = echo.issued.length;
    const ws = await workspace('token-echo', '${LEAK_CLIENT_SECRET}');
    const result = await runCli(ws, SECRET);

    expect(result.code).toBe(1);
    const issued = echo.issued.slice(before);
    expect(issued.length).toBeGreaterThan(0);
    const everything = result.stdout + result.stderr;
    for (const secret of [SECRET, CLIENT_ID, ...issued]) expect(everything).not.toContain(secret);
    expect(result.stdout).toBe('');
    const { logs, text } = splitStderr(result.stderr);
    expect(text).toEqual([
      expect.stringMatching(/^run \S+: 0 succeeded, 1 failed in [\d.]+ s$/),
      expect.stringMatching(
        /^ {2}FAIL echoed \([\d.]+ s\): export_api_error: page 0: export for tile sandbox-tile \(sent as query item tileId\) failed with HTTP 400: token \[redacted\] may not export tile sandbox-tile; check the job's tile and source\.tileParam$/,
      ),
      expect.stringMatching(/^ {7}time: source [\d.]+ s, reading [\d.]+ s$/),
      '',
    ]);
    expect(logs.map((line) => line.msg)).toEqual([
      'run starting',
      "job echoed failed: page 0: export for tile sandbox-tile (sent as query item tileId) failed with HTTP 400: token [redacted] may not export tile sandbox-tile; check the job's tile and source.tileParam",
      'run finished',
    ]);
    expect(await listFiles(ws.out)).toEqual([]);
  });

  it('a literal secret in the YAML: exit 2, file, line and field named, the value never printed', async () => {
    const literal = `literal-secret-${randomBytes(6).toString('hex')}`;
    const ws = await workspace('literal', literal);
    const before = echo.requests();
    const result = await runCli(ws, SECRET);

    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).not.toContain(literal);
    expect(result.stderr.split('\n')).toEqual([
      'tilehouse: config_invalid:',
      expect.stringMatching(new RegExp(`^  ${escape(ws.config)}:\\d+: source\\.clientSecret: .*literal secrets? (is|are) refused`)),
      '',
    ]);
    expect(echo.requests()).toBe(before);
  });
});

function escape(text: string): string {
  return text.replace(/[\\^$.*+?()[\]{}|/]/g, '\\$&');
}
