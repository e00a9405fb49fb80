/**
 * The peers' bench measures whole process trees (the Airbyte peer is two processes, a run of any
 * tool may start helpers): every few milliseconds it reads /proc for the descendants of a root
 * process and their resident sizes. The peak it reports is the larger of the highest sum of
 * VmRSS over the tree at one sample and the highest VmHWM (the kernel's own high-water mark) of
 * any one process, so a single-process tool gets its exact peak, as bench/support/report-rss.ts
 * reports it for the other scenarios, and a tree the peak of its sum as sampled.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** VmRSS and VmHWM of one /proc/<pid>/status text, in kB (undefined for a zombie: no memory lines). */
export function residentKb(status: string): { rssKb: number; hwmKb: number } | undefined {
  const rss = /^VmRSS:\s+(\d+) kB$/m.exec(status);
  const hwm = /^VmHWM:\s+(\d+) kB$/m.exec(status);
  if (rss === null || hwm === null) return undefined;
  return { rssKb: Number(rss[1]), hwmKb: Number(hwm[1]) };
}

function readOrUndefined(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

/** The children of `pid`, from /proc/<pid>/task/<tid>/children (every thread may have forked). */
function childrenOf(pid: number): number[] {
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  const children: number[] = [];
  for (const tid of tasks) {
    const text = readOrUndefined(`/proc/${pid}/task/${tid}/children`) ?? '';
    for (const word of text.split(' ')) if (word.trim() !== '') children.push(Number(word));
  }
  return children;
}

/** `root` and all its live descendants. */
export function processTree(root: number): number[] {
  const seen: number[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const pid = queue.shift()!;
    if (seen.includes(pid)) continue;
    seen.push(pid);
    queue.push(...childrenOf(pid));
  }
  return seen;
}

export interface TreePeak {
  /** max(highest Σ VmRSS of one sample, highest VmHWM of one process), MB. */
  peakRssMb: number;
  /** The highest Σ VmRSS of one sample, MB. */
  sampledSumMb: number;
  /** The highest VmHWM of any one process of the tree, MB. */
  largestProcessMb: number;
  /** Every pid seen in the tree (the excluded root included). */
  pids: number[];
  samples: number;
}

/**
 * Samples the tree under `root` every `intervalMs` until `stop()`. `excludeRoot`: the root is a
 * wrapper (the shell that reports the tree's CPU time), not part of what is measured.
 */
export class TreeRssSampler {
  private sumKb = 0;
  private hwmKb = 0;
  private count = 0;
  private readonly seen = new Set<number>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly root: number,
    private readonly options: { intervalMs?: number; excludeRoot?: boolean } = {},
  ) {
    this.sample();
    this.timer = setInterval(() => this.sample(), options.intervalMs ?? 20);
  }

  sample(): void {
    let sum = 0;
    for (const pid of processTree(this.root)) {
      this.seen.add(pid);
      if (this.options.excludeRoot === true && pid === this.root) continue;
      const status = readOrUndefined(`/proc/${pid}/status`);
      const resident = status === undefined ? undefined : residentKb(status);
      if (resident === undefined) continue;
      sum += resident.rssKb;
      this.hwmKb = Math.max(this.hwmKb, resident.hwmKb);
    }
    this.sumKb = Math.max(this.sumKb, sum);
    this.count += 1;
  }

  stop(): TreePeak {
    clearInterval(this.timer);
    return {
      peakRssMb: Math.max(this.sumKb, this.hwmKb) / 1024,
      sampledSumMb: this.sumKb / 1024,
      largestProcessMb: this.hwmKb / 1024,
      pids: [...this.seen],
      samples: this.count,
    };
  }
}
