/**
 * Preloaded (`node --import`) into every measured child process: at exit it writes the process's
 * peak resident set size and CPU time, so each scenario's figures are its own and cover the whole
 * run, including start-up and the final flush. Nothing else; it must not change what it measures.
 *
 * The peak is the process's own high-water mark (VmHWM in /proc/self/status), not getrusage's
 * maxRSS: on Linux a child started by fork + exec reports as its maxRSS at least the parent's
 * resident size at the fork (measured: a child of a 600 MB parent said 604 MB, VmHWM 39 MB). That
 * floored every scenario's figure at the bench runner's own size, which is how the 1M-row group
 * once reported the same 1108 MB for every scenario.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { getHeapSpaceStatistics } from 'node:v8';

/**
 * Where the memory is at the highest RSS seen (`--memory-breakdown`), in bytes: V8's spaces as
 * committed (`size`) and in use, what lives outside the heap (`external`, of it `arrayBuffers`),
 * and at exit the resident bytes backed by files (node's binary and libraries) and anonymous.
 */
export interface MemoryBreakdown {
  rss: number;
  heapCommitted: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
  spaces: Record<string, { size: number; used: number }>;
  fileBacked?: number;
  anonymous?: number;
}

const file = process.env.BENCH_RSS_FILE;
const breakdownWanted = Boolean(file && process.env.BENCH_MEMORY_BREAKDOWN);
let breakdown: MemoryBreakdown | undefined;
if (breakdownWanted) {
  // Sampled, so the peak is seen only as closely as 10 ms allows; it costs the run a little CPU,
  // which is why it is not on by default.
  setInterval(sampleBreakdown, 10).unref();
}
if (file) {
  process.on('exit', () => {
    // CPU times are in microseconds, all threads included.
    const usage = process.resourceUsage();
    if (breakdownWanted) {
      sampleBreakdown();
      Object.assign(breakdown!, residentKinds());
    }
    writeFileSync(
      file,
      JSON.stringify({
        maxRssKb: ownPeakRssKb() ?? usage.maxRSS,
        userCpuUs: usage.userCPUTime,
        systemCpuUs: usage.systemCPUTime,
        ...(breakdown ? { breakdown } : {}),
      }),
    );
  });
}

function sampleBreakdown(): void {
  const usage = process.memoryUsage();
  if (breakdown !== undefined && usage.rss <= breakdown.rss) return;
  const spaces: MemoryBreakdown['spaces'] = {};
  for (const space of getHeapSpaceStatistics()) {
    if (space.space_size > 0) spaces[space.space_name.replace(/_space$/, '')] = { size: space.space_size, used: space.space_used_size };
  }
  breakdown = {
    rss: usage.rss,
    heapCommitted: usage.heapTotal,
    heapUsed: usage.heapUsed,
    external: usage.external,
    arrayBuffers: usage.arrayBuffers,
    spaces,
  };
}

/** Resident bytes backed by files and anonymous ones, from /proc/self/smaps_rollup (Linux). */
function residentKinds(): { fileBacked?: number; anonymous?: number } {
  try {
    const rollup = readFileSync('/proc/self/smaps_rollup', 'utf8');
    const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB$`, 'm').exec(rollup)?.[1]);
    const rss = kb('Rss');
    const anonymous = kb('Anonymous');
    return Number.isFinite(rss) && Number.isFinite(anonymous) ? { fileBacked: (rss - anonymous) * 1024, anonymous: anonymous * 1024 } : {};
  } catch {
    return {};
  }
}

/** VmHWM in kilobytes, where /proc has it. */
function ownPeakRssKb(): number | undefined {
  try {
    return vmHwmKb(readFileSync('/proc/self/status', 'utf8'));
  } catch {
    return undefined;
  }
}

/** The VmHWM line of a /proc/<pid>/status text, in kilobytes (the kernel always prints kB). */
export function vmHwmKb(status: string): number | undefined {
  const match = /^VmHWM:\s+(\d+) kB$/m.exec(status);
  return match === null ? undefined : Number(match[1]);
}
