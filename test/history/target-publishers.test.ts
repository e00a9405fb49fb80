import { describe, expect, it } from 'vitest';
import type { JudgedRun } from '../../src/history/read-history.js';
import type { RunRecord } from '../../src/history/run-record.js';
import { lastPublisherOf, publisherNamed } from '../../src/history/target-publishers.js';

function recordOf(runId: string, startedAt: string, targets: RunRecord['targets'], trigger: RunRecord['trigger'] = 'run'): JudgedRun {
  const record: RunRecord = {
    version: 1,
    job: 'daily',
    tile: 'tile-1',
    runId,
    state: 'succeeded',
    trigger,
    startedAt,
    heartbeatAt: startedAt,
    owner: 'test',
    targets,
    definition: { fingerprint: 'f', tile: 'tile-1', values: {} },
  };
  return { record, verdict: 'ok' };
}

const day = (from: string, to: string) => ({ sink: 'csv', target: `out/daily/${from}.csv`, rows: 3, window: { from, to } });

describe('lastPublisherOf and publisherNamed', () => {
  // Newest first, as the history lists them.
  const records = [
    recordOf('nightly-20261128', '2026-11-28T02:00:00.000Z', [{ sink: 'csv', target: 'out/daily.csv', rows: 130 }]),
    recordOf('bf-june', '2026-11-27T03:00:00.000Z', [day('2026-06-28', '2026-06-29'), day('2026-06-29', '2026-06-30')], 'backfill'),
    recordOf('nightly-20261127', '2026-11-27T02:00:00.000Z', [{ sink: 'csv', target: 'out/daily.csv', rows: 120 }]),
  ];

  it('names the newest run that published a target, with the rows it recorded and its window', () => {
    expect(lastPublisherOf(records, 'out/daily.csv')).toMatchObject({ judged: { record: { runId: 'nightly-20261128' } }, rows: 130 });
    expect(lastPublisherOf(records, 'out/daily/2026-06-29.csv')).toMatchObject({
      judged: { record: { runId: 'bf-june' } },
      window: { from: '2026-06-29', to: '2026-06-30' },
    });
    expect(lastPublisherOf(records, 'out/other.csv')).toBeUndefined();
  });

  it("resolves a window's run id to its run's record and window; a run id that is a record's own stays that run's", () => {
    expect(publisherNamed(records, 'bf-june-20260628', 'out/daily/2026-06-28.csv')).toMatchObject({
      judged: { record: { runId: 'bf-june' } },
      window: { from: '2026-06-28', to: '2026-06-29' },
    });
    // Its own id ends in 8 digits too: the record of that id is the answer, not a window of `nightly`.
    expect(publisherNamed(records, 'nightly-20261127', 'out/daily.csv')).toMatchObject({ judged: { record: { runId: 'nightly-20261127' } }, rows: 120 });
    // A window of that day that did not write this target, or a run the history no longer keeps: no answer.
    expect(publisherNamed(records, 'bf-june-20260628', 'out/daily/2026-06-29.csv')).toBeUndefined();
    expect(publisherNamed(records, 'bf-may-20260528', 'out/daily/2026-05-28.csv')).toBeUndefined();
  });
});
