import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { vmHwmKb, type MemoryBreakdown } from '../../bench/support/report-rss.js';
import { describeUnless, NO_PROC } from '../support/skip.js';

describe('vmHwmKb', () => {
  it('reads the VmHWM line of /proc/<pid>/status, not VmRSS or VmPeak', () => {
    const status = ['Name:\tnode', 'VmPeak:\t 1200000 kB', 'VmSize:\t 1100000 kB', 'VmHWM:\t   98765 kB', 'VmRSS:\t   54321 kB', 'Threads:\t11'].join('\n');
    expect(vmHwmKb(status)).toBe(98765);
  });

  it('is undefined where there is no VmHWM line (no /proc, a kernel thread)', () => {
    expect(vmHwmKb('Name:\tkthreadd\nState:\tS (sleeping)\n')).toBeUndefined();
    expect(vmHwmKb('')).toBeUndefined();
  });
});

// The preload as the bench uses it, on real processes (Linux: /proc).
describeUnless(NO_PROC)('report-rss preloaded into a child', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'report-rss-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function report(code: string, env: NodeJS.ProcessEnv = {}): Promise<{ maxRssKb: number; breakdown?: MemoryBreakdown }> {
    const file = path.join(dir, `${Math.random()}.json`);
    const child = spawn(process.execPath, ['--import', pathToFileURL(path.resolve('bench/support/report-rss.ts')).href, '-e', code], {
      env: { ...process.env, ...env, BENCH_RSS_FILE: file },
      stdio: 'ignore',
    });
    const [exitCode] = await once(child, 'exit');
    expect(exitCode).toBe(0);
    return JSON.parse(await readFile(file, 'utf8')) as { maxRssKb: number; breakdown?: MemoryBreakdown };
  }

  const peakMb = async (code: string) => (await report(code)).maxRssKb / 1024;

  it("reports the child's own peak, which a 96 MB allocation raises and which is not the parent's size", async () => {
    const bare = await peakMb('0');
    // Written to, so the pages are resident; freed before exit, so only the high-water mark keeps it.
    const big = await peakMb('let b = Buffer.alloc(96 * 1024 * 1024, 1); b = null; globalThis.gc?.()');
    expect(big - bare).toBeGreaterThan(90);
    // The vitest worker that forked it is far bigger than a bare node; getrusage's maxRSS would say so.
    expect(bare).toBeLessThan(process.memoryUsage().rss / 1024 / 1024);
    expect(bare).toBeGreaterThan(10);
  });

  it('with BENCH_MEMORY_BREAKDOWN, says where the memory was at the peak: 64 MB of buffers outside the heap, node on file pages', async () => {
    const MB = 1024 * 1024;
    // Held across a timer, so the 10 ms sampler sees it; dropped before exit.
    const code = 'let b = Buffer.alloc(64 * 1024 * 1024, 1); setTimeout(() => { b = null; }, 100)';
    const { breakdown } = await report(code, { BENCH_MEMORY_BREAKDOWN: '1' });
    expect(breakdown!.arrayBuffers).toBeGreaterThan(63 * MB);
    expect(breakdown!.rss).toBeGreaterThan(breakdown!.arrayBuffers);
    expect(breakdown!.heapCommitted).toBeGreaterThan(breakdown!.heapUsed);
    expect(breakdown!.spaces.old!.size).toBeGreaterThan(0);
    expect(breakdown!.fileBacked).toBeGreaterThan(10 * MB);
    expect(breakdown!.anonymous).toBeGreaterThan(0);
    // Off by default: the bench's own figures come from a preload that only reads /proc at exit.
    expect((await report(code)).breakdown).toBeUndefined();
  });
});
