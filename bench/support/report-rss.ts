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

const file = process.env.BENCH_RSS_FILE;
if (file) {
  process.on('exit', () => {
    // CPU times are in microseconds, all threads included.
    const usage = process.resourceUsage();
    writeFileSync(file, JSON.stringify({ maxRssKb: ownPeakRssKb() ?? usage.maxRSS, userCpuUs: usage.userCPUTime, systemCpuUs: usage.systemCPUTime }));
  });
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
