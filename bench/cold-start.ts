import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { writeBenchWorkspace } from './support/bench-workspace.js';
import type { ImageNode } from './support/image-node.js';
import { repoRoot } from './support/repo-root.js';

export interface ColdStart {
  /** Process start (just before spawn) → the first token request arriving, compiled CLI started as the image starts it, per run. */
  cliMs: number[];
  /** The same started by hand, `node CLI` without flags: it relaunches itself once under them (src/node-flags.ts). */
  byHandMs: number[];
  /** The same for bare node importing undici and POSTing once: the floor. */
  baselineMs: number[];
}

/**
 * Cold start as a CronJob pays it: `node <the image's node flags> dist/bundle/tilehouse.js run`
 * with its NODE_OPTIONS (or `cliPath`, e.g. a bundled build to compare), and beside it the same
 * started by hand without them (a relaunch: issue 44), from spawn until its first token
 * request reaches a tiny recording server in this process (which answers 401 invalid_client, so
 * the run ends there). Baseline and CLI runs alternate, so both see the same machine.
 */
export async function measureColdStart(runs: number, image: ImageNode, cliPath = 'dist/bundle/tilehouse.js'): Promise<ColdStart> {
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
    const byHand = [cliPath, 'run', '--config', workspace.configFile, '--jobs', workspace.jobsDir];
    const cli = [...image.nodeArgs, ...byHand];
    const imageEnv = image.nodeOptions === undefined ? workspace.env : { ...workspace.env, NODE_OPTIONS: image.nodeOptions };
    const baseline = [
      '--input-type=module',
      '-e',
      `import { request } from 'undici'; const r = await request(${JSON.stringify(`${url}/oauth/token`)}, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }); await r.body.text();`,
    ];
    const once_ = async (args: string[], env = workspace.env): Promise<number> => {
      const firstRequest = new Promise<number>((resolve) => (arrived = resolve));
      const started = performance.now();
      const child = spawn(process.execPath, args, { cwd: repoRoot(), env, stdio: 'ignore' });
      const exited = once(child, 'exit');
      const at = await Promise.race([firstRequest, exited.then(() => Number.NaN)]);
      await exited;
      arrived = undefined;
      if (Number.isNaN(at)) throw new Error(`cold start: ${args.join(' ')} exited without a token request`);
      return at - started;
    };
    const result: ColdStart = { cliMs: [], byHandMs: [], baselineMs: [] };
    // One unmeasured run of each warms the OS file cache, as on a node that ran the image before.
    await once_(baseline);
    await once_(cli, imageEnv);
    for (let run = 0; run < runs; run++) {
      result.baselineMs.push(await once_(baseline));
      result.cliMs.push(await once_(cli, imageEnv));
      result.byHandMs.push(await once_(byHand));
    }
    return result;
  } finally {
    server.close();
    await rm(root, { recursive: true, force: true });
  }
}
