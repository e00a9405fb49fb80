import { SANDBOX_TILE, type Sandbox } from '../../sandbox/index.js';
import { dailySeverityQuery } from './queries.js';
import { sandboxesEachTest } from './sandbox-fixture.js';
import { tempDirForAll } from './temp-dir-hooks.js';

export interface DaySandboxes {
  /** A sandbox of 10 000 incidents whose clock reads noon UTC of `day`, closed after the test: one per "day" of an incremental test. */
  at(day: string): Promise<Sandbox>;
  /** A temp directory for the file's workspaces, removed after it. */
  readonly root: string;
}

/** Sandboxes at given days (sandboxesEachTest: closed after the test that started them) and a temp root for the whole file (tempDirForAll). */
export function daySandboxesForAll(): DaySandboxes {
  const sandboxes = sandboxesEachTest();
  const root = tempDirForAll();
  return {
    at: (day) => sandboxes.sandbox({ incidents: 10_000, now: new Date(`${day}T12:00:00Z`) }),
    get root() {
      return root.path;
    },
  };
}

/** What the source holds of `dailySeverityQuery` for [from, to), straight from its own evaluator (no rw filter), as CSV text reads back. */
export function dailySourceRows(sandbox: Sandbox, from: string, to: string): string[][] {
  const all = sandbox.evaluate({ ...dailySeverityQuery, items: dailySeverityQuery.items.map((item) => ({ ...item, filters: [] })) }, SANDBOX_TILE);
  return all.rows.filter((row) => (row[0] as string) >= from && (row[0] as string) < to).map((row) => row.map(String));
}

/** The incremental job `daily` (Day and Severity counted per day, from 2026-07-01, no lookback) writing one file per day to `sink`. */
export function dailyIncrementalJob(sink: Record<string, unknown>) {
  return {
    name: 'daily',
    tile: SANDBOX_TILE,
    query: dailySeverityQuery,
    sinks: [sink],
    columns: { Day: { type: 'DATE' }, Incidents: { type: 'INT64' } },
    incremental: { item: 'day', bucketColumn: 'Day', startFrom: '2026-07-01', lookbackDays: 0 },
  };
}
