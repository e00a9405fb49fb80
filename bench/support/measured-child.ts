import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { randomUUID } from 'node:crypto';
import { repoRoot, sibling } from './repo-root.js';
import type { MemoryBreakdown } from './report-rss.js';
import type { TokenProxy } from './token-proxy.js';

export interface MeasuredRun {
  /** From just before spawn to the child's exit: start-up included, as a user or a CronJob pays it. */
  wallMs: number;
  /** Spawn → the first token request reaching the TokenProxy: start-up, the cold start. */
  startMs: number;
  /** Date.now() at spawn, to place the child's own log timestamps on the same clock. */
  spawnedAtEpochMs: number;
  exitCode: number | null;
  peakRssMb: number;
  /** User + system CPU time of the child, all its threads (GC, libuv) included. */
  cpuMs: number;
  /** CPU time the source (sandbox process) spent meanwhile. */
  sourceCpuMs: number;
  stdout: string;
  stderr: string;
  /** With BENCH_MEMORY_BREAKDOWN in `env`: where the memory was at the peak (report-rss). */
  breakdown?: MemoryBreakdown;
}

/**
 * Runs `node <nodeArgs> <script> <args>` in its own process with the peak-RSS reporter preloaded,
 * and measures from the parent its wall time and when its first token request came. Output is collected in memory: the children print
 * a result line or a handful of JSON log lines, never data.
 */
export async function runMeasured(nodeArgs: string[], env: NodeJS.ProcessEnv, tokens: TokenProxy, sourcePid: number): Promise<MeasuredRun> {
  const rssFile = join(tmpdir(), `tilehouse-bench-rss-${randomUUID()}.json`);
  const preload = pathToFileURL(sibling('support/report-rss')).href;
  tokens.arm();
  const sourceCpuBefore = await processCpuMs(sourcePid);
  const spawnedAtEpochMs = Date.now();
  const started = performance.now();
  const child = spawn(process.execPath, ['--import', preload, ...nodeArgs], {
    cwd: repoRoot(),
    env: { ...env, BENCH_RSS_FILE: rssFile },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const [exitCode] = (await once(child, 'exit')) as [number | null];
  const wallMs = performance.now() - started;
  const startMs = tokens.firstArrival === undefined ? Number.NaN : tokens.firstArrival - started;
  const sourceCpuMs = (await processCpuMs(sourcePid)) - sourceCpuBefore;
  if (!child.stdout.readableEnded) await once(child.stdout, 'end');
  if (!child.stderr.readableEnded) await once(child.stderr, 'end');
  let peakRssMb = Number.NaN;
  let cpuMs = Number.NaN;
  let breakdown: MemoryBreakdown | undefined;
  try {
    const usage = JSON.parse(await readFile(rssFile, 'utf8')) as { maxRssKb: number; userCpuUs: number; systemCpuUs: number; breakdown?: MemoryBreakdown };
    peakRssMb = usage.maxRssKb / 1024;
    cpuMs = (usage.userCpuUs + usage.systemCpuUs) / 1000;
    breakdown = usage.breakdown;
  } catch {
    // The child died before its exit handler ran; the caller reports the failure.
  }
  await rm(rssFile, { force: true });
  return { wallMs, startMs, spawnedAtEpochMs, exitCode, peakRssMb, cpuMs, sourceCpuMs, stdout, stderr, ...(breakdown === undefined ? {} : { breakdown }) };
}

// USER_HZ: the unit of utime/stime in /proc/<pid>/stat, 100 on every Linux we run on.
const CLOCK_TICKS_PER_SECOND = 100;

/** User + system CPU time of another process so far, from /proc (NaN where there is no /proc). */
export async function processCpuMs(pid: number): Promise<number> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_SECOND;
  } catch {
    return Number.NaN;
  }
}

/** The last JSON line a scenario script printed: its result. */
export function resultLine<T>(run: MeasuredRun, what: string): T {
  const line = run.stdout
    .trim()
    .split('\n')
    .filter((text) => text.startsWith('{'))
    .at(-1);
  if (run.exitCode !== 0 || line === undefined) {
    throw new Error(`${what} failed (exit ${run.exitCode}):\n${run.stderr.slice(-2000)}${run.stdout.slice(-2000)}`);
  }
  return JSON.parse(line) as T;
}
