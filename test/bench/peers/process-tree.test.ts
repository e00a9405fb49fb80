import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { residentKb, TreeRssSampler } from '../../../bench/peers/process-tree.js';
import { childrenCpuMs, runTree } from '../../../bench/peers/tree-run.js';
import { describeUnless, NO_PROC } from '../../support/skip.js';

describe('residentKb', () => {
  it('reads VmRSS and VmHWM of a /proc/<pid>/status text', () => {
    const status = ['Name:\tpython3', 'VmPeak:\t 900000 kB', 'VmHWM:\t   98765 kB', 'VmRSS:\t   54321 kB', 'Threads:\t3'].join('\n');
    expect(residentKb(status)).toEqual({ rssKb: 54321, hwmKb: 98765 });
  });

  it('is undefined for a zombie or a kernel thread (no memory lines)', () => {
    expect(residentKb('Name:\tnode\nState:\tZ (zombie)\n')).toBeUndefined();
  });
});

describe('childrenCpuMs', () => {
  it("adds the children's user and system time, the second line of the shell's `times`", () => {
    expect(childrenCpuMs('0m0.001000s 0m0.002000s\n1m2.500000s 0m3.100000s\n')).toBeCloseTo(65_600, 6);
    expect(childrenCpuMs('0m0.00s 0m0.00s\n0m0.25s 0m0.05s')).toBeCloseTo(300, 6);
  });

  it('refuses what it cannot read instead of reporting 0', () => {
    expect(() => childrenCpuMs('')).toThrow(/cannot read the shell's times output/);
    expect(() => childrenCpuMs('0m0.00s 0m0.00s')).toThrow(/cannot read/);
  });
});

// A parent that holds 120 MB and starts a child that holds 80 MB; both hold them together for a
// while, so the tree's peak is their sum plus two node processes' own ~40-60 MB each.
const GRANDCHILD = `const b = Buffer.alloc(80 * 1024 * 1024, 1); process.stdout.write('held'); setTimeout(() => b.length, 600);`;
const PARENT = `
const { spawn } = require('node:child_process');
const a = Buffer.alloc(120 * 1024 * 1024, 1);
const child = spawn(process.execPath, ['-e', ${JSON.stringify(GRANDCHILD)}], { stdio: ['ignore', 'pipe', 'inherit'] });
child.stdout.on('data', () => {});
child.on('exit', (code) => { a.length; process.exit(code ?? 1); });
`;

describeUnless(NO_PROC)('runTree, on real processes', () => {
  it("reports the tree's peak (a parent's and its child's memory together), its CPU and its exit", async () => {
    const run = await runTree(process.execPath, ['-e', PARENT], { PATH: process.env.PATH }, process.cwd());
    expect(run.exitCode).toBe(0);
    expect(run.processes).toBe(2);
    // 200 MB held at once, plus two node processes' own resident size (~40-60 MB each here).
    expect(run.peakRssMb).toBeGreaterThan(200 + 2 * 25);
    expect(run.peakRssMb).toBeLessThan(200 + 2 * 90);
    // The parent alone: its 120 MB and node, less than the two together.
    expect(run.largestProcessMb).toBeGreaterThan(120 + 25);
    expect(run.largestProcessMb).toBeLessThan(run.peakRssMb - 80);
    // Filling 200 MB and starting two node processes takes CPU, which the shell's times report.
    expect(run.cpuMs).toBeGreaterThan(50);
    expect(run.wallMs).toBeGreaterThan(600);
  });

  it("counts one process's own high-water mark, which samples taken after its peak miss", async () => {
    // 150 MB touched and given back (munmap) before the only later sample: VmRSS fell, VmHWM did not.
    const script = `let b = Buffer.allocUnsafeSlow(150 * 1024 * 1024).fill(1); b = null; global.gc(); setTimeout(() => process.stdout.write('freed'), 200); setTimeout(() => {}, 1000);`;
    const child = spawn(process.execPath, ['--expose-gc', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    const sampler = new TreeRssSampler(child.pid!, { intervalMs: 60_000 });
    await once(child.stdout, 'data');
    sampler.sample();
    const peak = sampler.stop();
    child.kill();
    await once(child, 'exit');
    expect(peak.sampledSumMb).toBeLessThan(120);
    expect(peak.peakRssMb).toBeGreaterThan(150 + 25);
    expect(peak.largestProcessMb).toBe(peak.peakRssMb);
  });

  it('passes a failing exit status on', async () => {
    const run = await runTree(process.execPath, ['-e', 'process.exit(3)'], { PATH: process.env.PATH }, process.cwd());
    expect(run.exitCode).toBe(3);
  });
});
