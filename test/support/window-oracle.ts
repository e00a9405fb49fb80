import { SANDBOX_TILE, type Sandbox } from '../../sandbox/index.js';

const DAY_MS = 86_400_000;

/** YYYY-MM-DD (UTC) `offset` days from now: windowed tests run against a sandbox on the real clock. */
export function dayFromToday(offset: number): string {
  return new Date(Date.now() + offset * DAY_MS).toISOString().slice(0, 10);
}

/** The YYYY-MM-DD after `date`. */
export function dayAfter(date: string): string {
  return new Date(Date.parse(`${date}T00:00:00Z`) + DAY_MS).toISOString().slice(0, 10);
}

/**
 * The oracle for a windowed export: what the sandbox holds for [from, to), from its own evaluator
 * with every filter dropped (so no rw window), restricted by the first column (the day bucket),
 * each value as text.
 */
export function sourceRowsBetween(sandbox: Sandbox, query: { items: Array<Record<string, unknown>> }, from: string, to: string): string[][] {
  const all = sandbox.evaluate({ ...query, items: query.items.map((item) => ({ ...item, filters: [] })) }, SANDBOX_TILE);
  return all.rows.filter((row) => (row[0] as string) >= from && (row[0] as string) < to).map((row) => row.map(String));
}
