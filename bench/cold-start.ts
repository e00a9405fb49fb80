import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { writeBenchWorkspace } from './support/bench-workspace.js';
import { repoRoot } from './support/repo-root.js';

export interface ColdStart {
  /** Process start (just before spawn) → the first token request arriving, compiled CLI, per run. */
  cliMs: number[];
  /** The same for bare node importing undici and POSTing once: the floor. */
  baselineMs: number[];
}

/**
 * Cold start as a CronJob pays it: `node dist/bundle/tilehouse.js run` (or `cliPath`, e.g. a bundled build
 * to compare) from spawn until its first token
 * request reaches a tiny recording server in this process (which answers 401 invalid_client, so
 * the run ends there). Baseline and CLI runs alternate, so both see the same machine.
 */
export async function measureColdStart(runs: number, cliPath = 'dist/bundle/tilehouse.js'): Promise<ColdStart> {
  let arrived: ((at: number) => void) | undefined;
  const server = createServer((req, res) => {
    const at = performance.now();
    req.resume();
    req.on('end', () => {
      arrived?.(at);
      res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'invalid_client', error_description: 'cold-start probe' }));
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const root = await mkdtemp(join(tmpdir(), 'tilehouse-bench-cold-'));
  try {
    const workspace = await writeBenchWorkspace(
      root,
      { url, tileId: 'sandbox-tile', clientId: 'probe', clientSecret: 'probe' },
      {
        concurrency: 4,
        itemsPerPage: 1000,
        sink: { type: 'csv' },
      },
    );
    const cli = [cliPath, 'run', '--config', workspace.configFile, '--jobs', workspace.jobsDir];
    const baseline = [
      '--input-type=module',
      '-e',
      `import { request } from 'undici'; const r = await request(${JSON.stringify(`${url}/oauth/token`)}, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }); await r.body.text();`,
    ];
    const once_ = async (args: string[]): Promise<number> => {
      const firstRequest = new Promise<number>((resolve) => (arrived = resolve));
      const started = performance.now();
      const child = spawn(process.execPath, args, { cwd: repoRoot(), env: workspace.env, stdio: 'ignore' });
      const exited = once(child, 'exit');
      const at = await Promise.race([firstRequest, exited.then(() => Number.NaN)]);
      await exited;
      arrived = undefined;
      if (Number.isNaN(at)) throw new Error(`cold start: ${args.join(' ')} exited without a token request`);
      return at - started;
    };
    const result: ColdStart = { cliMs: [], baselineMs: [] };
    // One unmeasured run of each warms the OS file cache, as on a node that ran the image before.
    await once_(baseline);
    await once_(cli);
    for (let run = 0; run < runs; run++) {
      result.baselineMs.push(await once_(baseline));
      result.cliMs.push(await once_(cli));
    }
    return result;
  } finally {
    server.close();
    await rm(root, { recursive: true, force: true });
  }
}
