import { describe, expect, it } from 'vitest';
import { killedRunLines, leftBehindLines } from '../../src/presentation/left-behind-lines.js';

describe('leftBehindLines', () => {
  it('says nothing when nothing was named, found or left unchecked', () => {
    expect(leftBehindLines({})).toEqual([]);
    expect(leftBehindLines({ leftovers: [], leftBehind: { items: [], unchecked: [] } })).toEqual([]);
  });

  it('lists what the run named, then each thing found with how it goes, then each place that could not be looked at and why', () => {
    expect(
      leftBehindLines({
        leftovers: ['public.t (holds neither run whole)'],
        leftBehind: {
          items: [{ what: 'temp file /out/.t.csv.tilehouse-r+h.tmp', goes: "its run's process is gone: the next run's sweep removes it" }],
          unchecked: [{ sink: 'postgres', where: 'schema public', reason: 'connect ECONNREFUSED 127.0.0.1:5432' }],
        },
      }),
    ).toEqual([
      '  left behind:',
      '    public.t (holds neither run whole)',
      '    temp file /out/.t.csv.tilehouse-r+h.tmp',
      "      goes: its run's process is gone: the next run's sweep removes it",
      '    not checked: postgres schema public: connect ECONNREFUSED 127.0.0.1:5432',
    ]);
  });
});

describe('killedRunLines', () => {
  it('says why a killed run shows no trace id, and who closed its lineage; nothing for another verdict', () => {
    const lineageClosed = { eventType: 'FAIL' as const, at: '2026-12-08T02:00:01.000Z', byRunId: 'r2', runIds: ['u1'] };
    expect(killedRunLines({ verdict: 'killed', noSpansExported: true, lineageClosed })).toEqual([
      '    no trace: it was killed before the collector accepted a span of it',
      '    lineage: u1 closed with FAIL by run r2 at 2026-12-08T02:00:01.000Z',
    ]);
    expect(killedRunLines({ verdict: 'failed', noSpansExported: true, lineageClosed })).toEqual([]);
  });
});
