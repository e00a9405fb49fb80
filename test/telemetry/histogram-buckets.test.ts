import { DataPointType, MeterProvider, MetricReader, type Histogram } from '@opentelemetry/sdk-metrics';
import { describe, expect, it } from 'vitest';
import { instrumentsOf, recordRunOn } from '../../src/telemetry/otel-telemetry.js';
import type { RunMetrics } from '../../src/telemetry/telemetry.js';

/** A reader collected on demand: what the exporter would send, without one. */
class CollectingReader extends MetricReader {
  protected override onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
  protected override onShutdown(): Promise<void> {
    return Promise.resolve();
  }
}

const run = (durationMs: number): RunMetrics => ({
  job: 'night',
  status: 'succeeded',
  rows: 10,
  pages: 1,
  bytes: 100,
  durationMs,
  retries: 0,
  throttled: 0,
  tokenFetches: 1,
});

/**
 * Each histogram of the run metrics with runs whose values it must tell apart: tiles of 0.3 s,
 * 2 s, 40 s and 20 minutes (issue 45: with the SDK's millisecond bounds every tile under 5 s
 * landed in one bucket). A histogram added without an entry here fails the first test.
 */
const SEPARATED: Record<string, RunMetrics[]> = {
  'tilehouse.run.duration': [run(300), run(2_000), run(40_000), run(20 * 60_000)],
};

async function histograms(runs: readonly RunMetrics[]): Promise<Map<string, Histogram>> {
  const reader = new CollectingReader();
  const provider = new MeterProvider({ readers: [reader] });
  const instruments = instrumentsOf(provider);
  for (const each of runs) recordRunOn(instruments, each);
  const { resourceMetrics } = await reader.collect();
  const found = new Map<string, Histogram>();
  for (const scope of resourceMetrics.scopeMetrics)
    for (const metric of scope.metrics)
      if (metric.dataPointType === DataPointType.HISTOGRAM) found.set(metric.descriptor.name, metric.dataPoints[0]!.value as Histogram);
  await provider.shutdown();
  return found;
}

describe('the run metrics’ histograms', () => {
  it('are each listed here with values they must tell apart', async () => {
    const names = [...(await histograms([run(1_000)])).keys()];
    expect(names.sort()).toEqual(Object.keys(SEPARATED).sort());
  });

  for (const [name, runs] of Object.entries(SEPARATED)) {
    it(`${name} puts each of its runs (0.3 s, 2 s, 40 s, 20 min) in a bucket of its own`, async () => {
      const histogram = (await histograms(runs)).get(name)!;
      const filled = histogram.buckets.counts.flatMap((count, index) => (count > 0 ? [index] : []));
      expect(histogram.count).toBe(runs.length);
      // Four runs, four buckets holding one each: no two values share a bucket.
      expect(filled).toHaveLength(runs.length);
      expect(filled.map((index) => histogram.buckets.counts[index])).toEqual(runs.map(() => 1));
      // And none past the last bound: a 20-minute tile is inside the range, not in the overflow.
      expect(histogram.buckets.counts.at(-1)).toBe(0);
    });
  }
});
