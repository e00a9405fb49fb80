import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Sandbox } from '../../sandbox/index.js';
import { sandboxEnv, type Workspace } from './cli-harness.js';
import { spawnCli } from './child-process.js';
import type { GcsPreconditionProxy } from './gcs-precondition-proxy.js';

/** A seeded generator of kill moments in [0, 1) (Park–Miller): the same kills on every run. */
export function seededRandom(seed: number): () => number {
  return () => (seed = (seed * 48271) % 2147483647) / 2147483647;
}

export type GcsKillPhase = 'export' | 'prepare' | 'publish' | 'published';

export interface GcsKill {
  phase: GcsKillPhase;
  /** The slot the kill was aimed at: 0..pages-1 a page request, then two slots per later phase. */
  moment: number;
  /** The killed child's pid (a temp object it left names it as owner). */
  pid: number | undefined;
}

/**
 * Runs `tilehouse run` of `workspace` as a child process against Cloud Storage behind `proxy`
 * (holding each rewrite `holdRewriteMs`) and kills it with SIGKILL at the `kill`-th of `kills`
 * seeded moments, once it has exited and the proxy has settled. The moment is a point in the run,
 * not on the clock (a loaded machine starts tsx slower), stratified so the kills cover the whole
 * run: after the k-th page request, k from 0 (before the token) to pages - 1; then, two slots
 * each, in prepare (the upload finishing), while the publish's rewrite is held (the temp object
 * whole, the target untouched), and after it.
 */
export async function killGcsRunAtMoment(options: {
  workspace: Workspace;
  sandbox: Sandbox;
  proxy: GcsPreconditionProxy;
  kill: number;
  kills: number;
  pages: number;
  holdRewriteMs: number;
  random: () => number;
}): Promise<GcsKill> {
  const { workspace, sandbox, proxy, kill, kills, pages, holdRewriteMs, random } = options;
  const slots = pages + 6;
  const before = sandbox.requests.length;
  const rewritesBefore = proxy.rewritesReceived;
  const child = spawnCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir], {
    env: { ...process.env, CI: '', ...sandboxEnv(sandbox), STORAGE_EMULATOR_HOST: proxy.origin },
    stdio: 'ignore',
  });
  let exitedAlready = false;
  const exited = once(child, 'exit').then(() => (exitedAlready = true));
  const moment = Math.min(slots - 1, Math.floor(((kill + random()) * slots) / kills));
  const pagesRequested = () => sandbox.requests.slice(before).filter((r) => r.endpoint === 'export').length;
  const rewriteArrived = () => proxy.rewritesReceived > rewritesBefore;
  while (!exitedAlready && pagesRequested() < Math.min(moment, pages)) await sleep(2);
  const phase: GcsKillPhase = moment < pages ? 'export' : (['prepare', 'publish', 'published'] as const)[Math.floor((moment - pages) / 2)]!;
  if (phase === 'prepare') await sleep(Math.floor(random() * 20));
  if (phase !== 'export' && phase !== 'prepare') while (!exitedAlready && !rewriteArrived()) await sleep(2);
  if (phase === 'publish') await sleep(Math.floor(random() * holdRewriteMs * 0.7));
  if (phase === 'published') await sleep(holdRewriteMs + 150 + Math.floor(random() * 100));
  child.kill('SIGKILL');
  await exited;
  await proxy.settled();
  return { phase, moment, pid: child.pid };
}
