import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { columnKey, digestCsv, rowDifferences, sameValue } from '../../../bench/peers/csv-check.js';
import { formatPeersReport, peerGroup, rowsLabel, type PeerSample, type Tool } from '../../../bench/peers/peers-report.js';
import { venvPython } from '../../../bench/peers/run-peers.js';

const sample = (wallMs: number, cpuMs: number, peakRssMb: number): PeerSample => ({ wallMs, cpuMs, peakRssMb, largestProcessMb: peakRssMb - 10 });

describe('peerGroup', () => {
  const samples = new Map<Tool, PeerSample[]>([
    ['tilehouse', [sample(10_000, 2000, 150), sample(12_000, 2400, 160), sample(30_000, 9000, 155)]],
    ['dlt', [sample(50_000, 9000, 200), sample(40_000, 8000, 220)]],
    ['airbyte', [sample(60_000, 12_000, 140)]],
  ]);
  const group = peerGroup({ rows: 1_000_000, latencyMs: 50 }, samples, (tool) => (tool === 'tilehouse' ? 8 : 1));

  it("takes each figure's median on its own, and rows/s from the median wall time", () => {
    const tilehouse = group.figures.find((f) => f.tool === 'tilehouse')!;
    expect(tilehouse).toMatchObject({ concurrency: 8, runs: 3, peakRssMb: 155, cpuS: 2.4, wallS: 12 });
    expect(tilehouse.rowsPerS).toBeCloseTo(1_000_000 / 12, 6);
    // An even count: the mean of the middle two.
    expect(group.figures.find((f) => f.tool === 'dlt')).toMatchObject({ concurrency: 1, runs: 2, peakRssMb: 210, cpuS: 8.5, wallS: 45 });
  });

  it("gives each peer's figures as ratios to tilehouse's medians of the same run", () => {
    const dlt = group.figures.find((f) => f.tool === 'dlt')!;
    expect(dlt.vsTilehouse.peakRss).toBeCloseTo(210 / 155, 9);
    expect(dlt.vsTilehouse.cpu).toBeCloseTo(8500 / 2400, 9);
    expect(dlt.vsTilehouse.rowsPerS).toBeCloseTo(12 / 45, 9);
    expect(group.figures.map((f) => f.tool)).toEqual(['tilehouse', 'dlt', 'airbyte']);
    expect(group.samples.dlt).toHaveLength(2);
  });

  it('puts tilehouse at one page in flight right after its default, with ratios to the default', () => {
    const withOne = new Map(samples).set('tilehouse-1', [sample(60_000, 2600, 120)]);
    const both = peerGroup({ rows: 1_000_000, latencyMs: 50 }, withOne, (tool) => (tool === 'tilehouse' ? 8 : 1));
    expect(both.figures.map((f) => [f.tool, f.concurrency])).toEqual([
      ['tilehouse', 8],
      ['tilehouse-1', 1],
      ['dlt', 1],
      ['airbyte', 1],
    ]);
    expect(formatPeersReport({ settings: {}, groups: [both] })).toContain(
      '| 1M, 50 ms | tilehouse, one page at a time | 1 | 1 | 120.0 | 110.0 | 2.6 | 60.0 | 17k | 0.77 | 1.08 | 0.20 |',
    );
  });

  it('has no ratios without a tilehouse run, rather than ratios to nothing', () => {
    const alone = peerGroup({ rows: 10, latencyMs: 0 }, new Map([['dlt', [sample(1000, 500, 90)]]]), () => 1);
    expect(alone.figures[0]!.vsTilehouse.cpu).toBeNaN();
    expect(formatPeersReport({ settings: {}, groups: [alone] })).toContain('| 10, 0 ms | dlt | 1 | 1 | 90.0 | 80.0 | 0.5 | 1.0 | 0k | — | — | — |');
  });

  it('formats one Markdown table, tilehouse first and without ratios, the settings above it', () => {
    const text = formatPeersReport({ settings: { runs: 3, peers: 'dlt 1.31.0' }, groups: [group] });
    const lines = text.trimEnd().split('\n');
    expect(lines.slice(0, 2)).toEqual(['runs: 3', 'peers: dlt 1.31.0']);
    expect(lines[3]).toMatch(
      /^\| rows, latency \| tool \| concurrency \| runs \| peak RSS MB \| largest process MB \| CPU s \| wall s \| rows\/s \| RSS \/ tilehouse/,
    );
    expect(lines.slice(5)).toEqual([
      '| 1M, 50 ms | tilehouse | 8 | 3 | 155.0 | 145.0 | 2.4 | 12.0 | 83k |  |  |  |',
      '| 1M, 50 ms | dlt | 1 | 2 | 210.0 | 200.0 | 8.5 | 45.0 | 22k | 1.35 | 3.54 | 0.27 |',
      '| 1M, 50 ms | Airbyte CDK | 1 | 1 | 140.0 | 130.0 | 12.0 | 60.0 | 17k | 0.90 | 5.00 | 0.20 |',
    ]);
  });

  it('labels rows as the tables do', () => {
    expect([rowsLabel(100_000), rowsLabel(1_000_000), rowsLabel(2500), rowsLabel(5)]).toEqual(['100k', '1M', '2500', '5']);
  });
});

describe("checking a peer's CSV against tilehouse's", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'peers-csv-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('counts rows, not lines (a quoted CR/LF is inside a row), over every file of the table', async () => {
    const a = path.join(dir, 'a.csv');
    const b = path.join(dir, 'b.csv');
    await writeFile(a, '"number","description"\r\n1,"two\r\nlines"\r\n2,"say ""hi"""\r\n');
    await writeFile(b, '"number","description"\r\n3,plain\r\n');
    const digest = await digestCsv([a, b], 'Number', '2');
    expect(digest.rows).toBe(3);
    expect(digest.row).toEqual(['2', 'say "hi"']);
    expect((await digestCsv([a], 'Number', '1')).row).toEqual(['1', 'two\r\nlines']);
    expect((await digestCsv([a], 'Number', '9')).row).toBeUndefined();
    await expect(digestCsv([a], 'Severity', '1')).rejects.toThrow(/no column Severity/);
  });

  it("takes the API's epoch milliseconds for tilehouse's timestamp, equal numbers and dlt's snake_case names as the same", () => {
    expect(columnKey('Impact minutes')).toBe('impact_minutes');
    expect(sameValue('2025-07-14T02:07:09.133Z', '1752458829133')).toBe(true);
    expect(sameValue('4.166666666666667', '4.166666666666667')).toBe(true);
    expect(sameValue('56', '56.0')).toBe(true);
    expect(sameValue('', '')).toBe(true);
    const tilehouse = { header: ['Number', 'Created', 'Impact minutes', 'Root cause'], row: ['7', '2025-07-14T02:07:09.133Z', '', 'capacity'] };
    const dlt = {
      header: ['number', 'created', 'impact_minutes', 'root_cause', '_dlt_load_id', '_dlt_id'],
      row: ['7', '1752458829133', '', 'capacity', '1', 'x'],
    };
    expect(rowDifferences(tilehouse, dlt)).toEqual([]);
  });

  it('names every column a peer got wrong or left out', () => {
    expect(sameValue('2025-07-14T02:07:09.133Z', '1752458829134')).toBe(false);
    expect(sameValue('', '0')).toBe(false);
    expect(sameValue('capacity', 'Capacity')).toBe(false);
    const tilehouse = { header: ['Number', 'Severity', 'Root cause'], row: ['7', '2', 'capacity'] };
    expect(rowDifferences(tilehouse, { header: ['number', 'severity'], row: ['7', '3'] })).toEqual([
      'Severity: "3" where tilehouse wrote "2"',
      'Root cause: no such column',
    ]);
  });
});

describe('venvPython', () => {
  it("is the venv's python when bench/peers/setup.sh made it, and undefined before", async () => {
    const root = await mkdtemp(path.join(tmpdir(), 'peers-venv-'));
    try {
      expect(venvPython(root)).toBeUndefined();
      await mkdir(path.join(root, '.tools/peers-venv/bin'), { recursive: true });
      await writeFile(path.join(root, '.tools/peers-venv/bin/python'), '');
      expect(venvPython(root)).toBe(path.join(root, '.tools/peers-venv/bin/python'));
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
