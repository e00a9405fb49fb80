import { once } from 'node:events';
import { mkdir, rm, writeFile, readFile } from 'node:fs/promises';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { listFiles, sandboxEnv, writeWorkspace } from '../support/cli-harness.js';
import { exitWithin, spawnCli, splitStderr, textOf } from '../support/child-process.js';
import { detailCsvJob } from '../support/queries.js';
import { makeTempDir } from '../support/temp-dir.js';
import { sandboxWorkspaceForAll } from '../support/sandbox-fixture.js';

const PREVIOUS = 'previous output\r\n';

// 30 pages at 60 ms each: a run takes long enough to be stopped in the middle.
const fixture = sandboxWorkspaceForAll({ incidents: 600, latencyMs: 60 }, [detailCsvJob], {
  itemsPerPage: 20,
  concurrency: 1,
});

/** Spawns the real CLI (through tsx) and sends `signal` once the export is under way. */
async function runAndSignal(signal: NodeJS.Signals): Promise<{ code: number | null; stderr: string }> {
  const before = fixture.sandbox.requests.length;
  const child = spawnCli(['run', '--config', fixture.workspace.configFile, '--jobs', fixture.workspace.jobsDir], {
    env: { ...process.env, ...sandboxEnv(fixture.sandbox), CI: '' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = exitWithin(child, 30_000);
  const deadline = Date.now() + 20_000;
  while (fixture.sandbox.requests.slice(before).filter((r) => r.endpoint === 'export').length < 5) {
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`the run never got going: ${stderr}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  child.kill(signal);
  const { code } = await exited;
  return { code, stderr };
}

describe('tilehouse run as a process', () => {
  it.each([
    { signal: 'SIGTERM' as const, code: 143 },
    { signal: 'SIGINT' as const, code: 130 },
  ])('stops on $signal mid-export with exit $code, no partial file, previous output untouched', async ({ signal, code }) => {
    await mkdir(fixture.workspace.outDir, { recursive: true });
    const target = path.join(fixture.workspace.outDir, 'incident_detail.csv');
    await writeFile(target, PREVIOUS);
    const result = await runAndSignal(signal);
    const { logs, text } = splitStderr(result.stderr);
    expect(logs.map((line) => line.msg)).toEqual([
      'run starting',
      expect.stringMatching(new RegExp(`^job incident_detail failed: .*stopped by ${signal}`)),
      'run finished',
    ]);
    expect(text).toEqual([
      `tilehouse: ${signal} received; stopping cleanly within 20 s (send again to exit at once)`,
      expect.stringMatching(/^run \S+: 0 succeeded, 1 failed in [\d.]+ s$/),
      expect.stringMatching(new RegExp(`^  FAIL incident_detail \\([\\d.]+ s\\): \\w+: .*stopped by ${signal}`)),
      expect.stringMatching(/^ {7}time: source [\d.]+ s, reading [\d.]+ s$/),
      '',
    ]);
    expect(result.code).toBe(code);
    expect(await readFile(target, 'utf8')).toBe(PREVIOUS);
    expect(await listFiles(fixture.workspace.outDir)).toEqual(['incident_detail.csv']);
  });
});

/**
 * A loopback source in front of the sandbox whose `stallAt`-th export answer sends its status, its
 * headers and half its body, and then nothing, ever (the connection stays open).
 */
async function startStallingSource(upstream: string, stallAt: number): Promise<{ url: string; stalled: () => boolean; close(): Promise<void> }> {
  const target = new URL(upstream);
  let exports = 0;
  let stalled = false;
  const server: Server = createServer((incoming, response) => {
    const stall = incoming.method === 'POST' && ++exports === stallAt;
    const forwarded = request(
      { host: target.hostname, port: target.port, method: incoming.method, path: incoming.url, headers: incoming.headers },
      (answer) => {
        if (!stall) {
          response.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(response);
          return;
        }
        void answer.toArray().then((chunks) => {
          const body = Buffer.concat(chunks);
          const { 'content-length': _length, ...headers } = answer.headers;
          response.writeHead(answer.statusCode ?? 502, { ...headers, 'content-length': String(body.length) });
          response.write(body.subarray(0, Math.floor(body.length / 2)));
          stalled = true;
        });
      },
    );
    forwarded.on('error', () => response.destroy());
    incoming.pipe(forwarded);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    stalled: () => stalled,
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

describe('tilehouse run as a process, stopped while a page never finishes', () => {
  it('exits 143 at once on SIGTERM while a page body stalls, with no partial file and the previous output untouched', async () => {
    const source = await startStallingSource(fixture.sandbox.url, 3);
    const stallRoot = await makeTempDir();
    try {
      // Per-gap and whole-request limits far above the test: only the stop can end this wait.
      const ws = await writeWorkspace(stallRoot, fixture.sandbox, [detailCsvJob], {
        baseUrl: source.url,
        itemsPerPage: 20,
        concurrency: 1,
        requestTimeoutMs: 120_000,
        requestDeadlineMs: 600_000,
      });
      // The cleanup deadline far above the wait for the exit below: an exit within that wait was
      // the stop's own doing, however busy the machine (no clock in the test).
      await writeFile(ws.configFile, stringify({ ...(parse(await readFile(ws.configFile, 'utf8')) as object), stopDeadlineMs: 600_000 }));
      await mkdir(ws.outDir, { recursive: true });
      const target = path.join(ws.outDir, 'incident_detail.csv');
      await writeFile(target, PREVIOUS);
      const child = spawnCli(['run', '--config', ws.configFile, '--jobs', ws.jobsDir], {
        env: { ...process.env, ...sandboxEnv(fixture.sandbox), CI: '' },
        stdio: ['ignore', 'ignore', 'pipe'],
        detached: true,
      });
      const stderr = textOf(child.stderr);
      const deadline = Date.now() + 30_000;
      while (!source.stalled()) {
        if (Date.now() > deadline || child.exitCode !== null) {
          child.kill('SIGKILL');
          throw new Error(`the page never stalled: ${await stderr}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      // The client is now inside the body of the stalled page.
      await new Promise((resolve) => setTimeout(resolve, 300));
      child.kill('SIGTERM');
      // Not the cleanup deadline (600 s): the body read is aborted by the stop itself.
      const exit = await exitWithin(child, 60_000);
      expect(exit.code, await stderr).toBe(143);
      expect(await stderr).toMatch(/FAIL incident_detail .*run_stopped: .*stopped by SIGTERM/);
      expect(await readFile(target, 'utf8')).toBe(PREVIOUS);
      expect(await listFiles(ws.outDir)).toEqual(['incident_detail.csv']);
    } finally {
      await source.close();
      await rm(stallRoot, { recursive: true, force: true });
    }
  }, 120_000);
});
