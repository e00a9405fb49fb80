/**
 * Preloaded (`node --import`) into every measured child process: at exit it writes the process's
 * peak resident set size and CPU time, so each scenario's figures are its own and cover the whole
 * run, including start-up and the final flush. Nothing else; it must not change what it measures.
 */
import { writeFileSync } from 'node:fs';

const file = process.env.BENCH_RSS_FILE;
if (file) {
  process.on('exit', () => {
    // Linux reports maxRSS in kilobytes; CPU times are in microseconds, all threads included.
    const usage = process.resourceUsage();
    writeFileSync(file, JSON.stringify({ maxRssKb: usage.maxRSS, userCpuUs: usage.userCPUTime, systemCpuUs: usage.systemCPUTime }));
  });
}
