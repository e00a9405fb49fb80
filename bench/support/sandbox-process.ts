import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { Agent } from 'undici';
import { BENCH_TILE } from '../bench-query.js';
import { stopProcess } from '../../test/support/child-process.js';
import { repoRoot } from './repo-root.js';
import { fetchPageText, fetchSourceToken, type SourceEndpoint } from './source-requests.js';

export interface SandboxProcess extends SourceEndpoint {
  pid: number;
  stop(): Promise<void>;
}

/**
 * The sandbox in a process of its own (through tsx: its start-up is not measured), so it never
 * shares an event loop with the client being measured. Resolves once it listens and has answered
 * page 0 of the bench query once: the sandbox evaluates a query on first use and caches the
 * result, and no scenario should pay for that.
 */
export async function startSandboxProcess(options: {
  incidents: number;
  latencyMs: number;
  itemsPerPage: number;
  /** gzip answers to requests that accept it (the sandbox's --gzip). */
  gzip?: boolean;
  /** Each answer waits as long as its body takes at this many Mbit/s (the sandbox's --bandwidth-mbps). */
  bandwidthMbps?: number;
}): Promise<SandboxProcess> {
  const args = ['--port', '0', '--incidents', String(options.incidents), '--latency-ms', String(options.latencyMs)];
  if (options.gzip) args.push('--gzip');
  if (options.bandwidthMbps !== undefined) args.push('--bandwidth-mbps', String(options.bandwidthMbps));
  const child = spawn(process.execPath, ['--import', 'tsx', 'sandbox/main.ts', ...args], { cwd: repoRoot(), stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = once(child, 'exit');
  const lines = createInterface({ input: child.stdout! });
  const firstLine = await Promise.race([
    once(lines, 'line').then(([line]) => line as string),
    exited.then(([code]) => {
      throw new Error(`sandbox exited (code ${String(code)}) before listening:\n${stderr}`);
    }),
  ]);
  lines.close();
  const url = firstLine.trim();
  // main.ts prints the credentials on stderr right after the URL line.
  const credentials = await waitFor(() => /client id (\S+), client secret (\S+),/.exec(stderr), 5_000);
  const endpoint: SourceEndpoint = { url, tileId: BENCH_TILE, clientId: credentials[1]!, clientSecret: credentials[2]! };

  const dispatcher = new Agent();
  try {
    const token = await fetchSourceToken(endpoint, dispatcher);
    const page = JSON.parse(await fetchPageText(endpoint, token, 0, options.itemsPerPage, dispatcher)) as { result: { navigation: { totalRows: number } } };
    if (page.result.navigation.totalRows !== options.incidents) {
      throw new Error(`bench query returns ${page.result.navigation.totalRows} rows for ${options.incidents} incidents; expected one row per incident`);
    }
  } catch (error) {
    await stopProcess(child);
    throw error;
  } finally {
    await dispatcher.close();
  }
  return { ...endpoint, pid: child.pid!, stop: () => stopProcess(child) };
}

async function waitFor<T>(probe: () => T | null, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== null) return value;
    if (Date.now() > deadline) throw new Error('bench: timed out waiting for the sandbox');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
