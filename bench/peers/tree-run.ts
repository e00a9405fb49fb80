import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile, rm } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { TreeRssSampler } from './process-tree.js';

export interface TreeRun {
  exitCode: number | null;
  /** Spawn → exit of the whole tree. */
  wallMs: number;
  /** User + system CPU of every process of the tree (those its processes waited for). */
  cpuMs: number;
  peakRssMb: number;
  /** The peak of the tree's largest process alone (its VmHWM), MB. */
  largestProcessMb: number;
  /** Processes seen in the tree besides the wrapper shell. */
  processes: number;
  stdout: string;
  stderr: string;
}

/**
 * The children's line of a POSIX shell's `times` ("0m0.00s 0m0.01s\n1m2.50s 0m3.10s": the shell's
 * user and system time, then its children's), in milliseconds.
 */
export function childrenCpuMs(times: string): number {
  const lines = times.trim().split('\n');
  const children = lines.at(-1) ?? '';
  const values = [...children.matchAll(/(\d+)m([\d.]+)s/g)].map((match) => Number(match[1]) * 60_000 + Number(match[2]) * 1000);
  if (lines.length < 2 || values.length !== 2) throw new Error(`bench peers: cannot read the shell's times output: ${JSON.stringify(times)}`);
  return values[0]! + values[1]!;
}

// The shell runs the command and waits for it; `times` then reports the CPU of every process it
// waited for, their own waited-for children included (getrusage RUSAGE_CHILDREN): the whole tree,
// whoever in it forked what, without a measuring tool of one language.
const WRAPPER = '"$@"; status=$?; times > "$BENCH_TIMES_FILE"; exit $status';

/** Runs `command args` under /bin/sh, sampling its tree's resident size, and reports the tree's figures. */
export async function runTree(command: string, args: string[], env: NodeJS.ProcessEnv, cwd: string): Promise<TreeRun> {
  const timesFile = join(tmpdir(), `tilehouse-bench-times-${randomUUID()}`);
  const started = performance.now();
  const child = spawn('/bin/sh', ['-c', WRAPPER, 'bench-peer', command, ...args], {
    cwd,
    env: { ...env, BENCH_TIMES_FILE: timesFile },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const sampler = new TreeRssSampler(child.pid!, { excludeRoot: true });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  // Only the tail is kept: a failing Python tool can print long tracebacks, and the CDK logs a lot.
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-20_000)));
  const [exitCode] = (await once(child, 'exit')) as [number | null];
  const wallMs = performance.now() - started;
  const peak = sampler.stop();
  if (!child.stdout.readableEnded) await once(child.stdout, 'end');
  if (!child.stderr.readableEnded) await once(child.stderr, 'end');
  const cpuMs = await readFile(timesFile, 'utf8').then(childrenCpuMs, () => Number.NaN);
  await rm(timesFile, { force: true });
  return { exitCode, wallMs, cpuMs, peakRssMb: peak.peakRssMb, largestProcessMb: peak.largestProcessMb, processes: peak.pids.length - 1, stdout, stderr };
}
