import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe } from 'vitest';
import { describeUnless } from '../support/skip.js';
import { underCi } from '../support/ci.js';

/**
 * A real Prometheus Pushgateway for the metrics tests, built by scripts/install-pushgateway.sh
 * into .tools/bin (or $PUSHGATEWAY_BIN). Absent outside CI: the tests are skipped, and say so;
 * absent under CI: they fail.
 */
export function pushgatewayBinaryOrSkip(): string | null {
  const binary = process.env.PUSHGATEWAY_BIN ?? path.resolve('.tools/bin/pushgateway');
  if (existsSync(binary)) return binary;
  if (underCi()) throw new Error(`CI is set but no Pushgateway is installed at ${binary}: run \`npm run setup:pushgateway\`.`);
  return null;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export interface RunningPushgateway {
  url: string;
  /** GET /metrics, as Prometheus would scrape it. */
  scrape(): Promise<string>;
  stop(): Promise<void>;
}

export async function startPushgateway(binary: string): Promise<RunningPushgateway> {
  for (let attempt = 1; ; attempt += 1) {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const child: ChildProcess = spawn(binary, [`--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    const stop = async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    };
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline && child.exitCode === null) {
      const ready = await fetch(`${url}/-/ready`).then(
        (response) => response.ok,
        () => false,
      );
      if (ready) return { url, scrape: async () => (await fetch(`${url}/metrics`)).text(), stop };
      await sleep(50);
    }
    await stop();
    // Another process may have taken the port between freePort and the bind: try another one.
    if (attempt >= 3) throw new Error(`the Pushgateway did not become ready: ${stderr}`);
  }
}

/** `describe` for tests that need a Pushgateway: one per block, skipped when absent outside CI. */
export function describeWithPushgateway(title: string, body: (gateway: { url: string; scrape(): Promise<string> }) => void): void {
  const binary = pushgatewayBinaryOrSkip();
  const fullTitle = `${title} (pushgateway)`;
  if (binary === null) {
    describeUnless('the Pushgateway is not installed (npm run setup:pushgateway)')(fullTitle, () => undefined);
    return;
  }
  describe(fullTitle, () => {
    let running: RunningPushgateway | undefined;
    const gateway = {
      url: '',
      scrape: () => running!.scrape(),
    };
    beforeAll(async () => {
      running = await startPushgateway(binary);
      gateway.url = running.url;
    });
    afterAll(async () => {
      await running?.stop();
    });
    body(gateway);
  });
}

/** The samples of `name` in a text exposition, with their labels. */
export function samplesOf(exposition: string, name: string): Array<{ labels: Record<string, string>; value: number }> {
  const samples: Array<{ labels: Record<string, string>; value: number }> = [];
  for (const line of exposition.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)/.exec(line);
    if (match === null || match[1] !== name) continue;
    const labels: Record<string, string> = {};
    for (const pair of (match[3] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[pair[1]!] = pair[2]!;
    samples.push({ labels, value: Number(match[4]) });
  }
  return samples;
}
