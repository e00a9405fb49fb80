import { createHash } from 'node:crypto';
import { z } from 'zod';

/**
 * A fingerprint of what a job asks for (its tile, the source settings that change its rows, its
 * query, its column overrides, its sinks), carried by
 * the run summary, the file manifests and the run ledger, so that a target can say which
 * definition wrote it and a refusal can say what changed since. Only hashes are kept: a part's
 * text (a filter's values, a bucket) is never stored, so nothing secret or sensitive leaves with it.
 *
 * `parts` names each piece that can change on its own (`query.filters:Number`, `query.item:Number`,
 * `query.options`, `columns`, `sinks`, `tile`, `source`) with 8 hex digits of its SHA-256; `fingerprint` is 12 hex
 * digits of them all. Two definitions compare part by part (`definitionChanges`).
 */
export interface JobDefinition {
  fingerprint: string;
  parts: Record<string, string>;
}

/** A definition as read back from where a run recorded it (a manifest, a ledger row): untrusted. */
export const jobDefinitionSchema = z.object({ fingerprint: z.string(), parts: z.record(z.string(), z.string()) });

const FILTERS = 'query.filters:';
const ITEM = 'query.item:';

/** Canonical JSON: object keys sorted, so the same definition always hashes the same. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, entry]) => entry !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, entry]) => `${JSON.stringify(key)}:${canonical(entry)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

function digest(text: string, length: number): string {
  return createHash('sha256').update(text).digest('hex').slice(0, length);
}

/**
 * One sink as the definition sees it: its kind and the settings of its config that decide what
 * lands (the kind names them: `definitionSettings` in src/sinks/sink-kind.ts), not those that only
 * change how it is written or checked (a guard's thresholds), so a changed threshold is not "its
 * sinks changed". A job's sink configs are not this shape: they pass through the kinds first.
 */
export interface SinkDefinition {
  type: string;
  settings: Record<string, unknown>;
}

/** What a job's definition is made of, as plain values (the config layer hands them over, its sinks through their kinds). */
export interface DefinitionSource {
  /** The tile id: another tile is other rows, whatever the query says. */
  tile?: string;
  /**
   * The job's settings that change which rows land or their values: the zone that datetimes
   * without an offset are read in, what becomes of a value that does not parse, the items and the
   * first day a windowed job filters by. Not how they are fetched (page size, concurrency, timeouts).
   */
  timezone?: string;
  onInvalidValue?: string;
  backfill?: unknown;
  incremental?: { item?: string | undefined; bucketColumn?: string | undefined; startFrom?: string | undefined } & Record<string, unknown>;
  query: { items: ReadonlyArray<{ header: string; filters?: readonly unknown[] | undefined } & Record<string, unknown>>; options?: unknown };
  columns?: unknown;
  sinks: readonly SinkDefinition[];
}

/**
 * A job's definition part by part, as plain values, under the names `parts` uses: what the run
 * history keeps of a run (src/history/), so that `status` and the guard can say old → new. The
 * job file's values as parsed: a secret never appears in one (credentials are `${ENV}` references
 * or files in the environment file and the sinks' connection settings).
 */
export function definitionPartValues(source: DefinitionSource): Record<string, unknown> {
  const parts: Record<string, unknown> = {};
  for (const [index, item] of source.query.items.entries()) {
    const { filters, ...rest } = item;
    // Two items with one header (legal in a query) are told apart by their place.
    const name = source.query.items.findIndex((other) => other.header === item.header) === index ? item.header : `${item.header}#${index}`;
    parts[`${ITEM}${name}`] = { ...rest, index };
    parts[`${FILTERS}${name}`] = filters ?? [];
  }
  parts['query.options'] = source.query.options ?? {};
  parts.columns = source.columns ?? {};
  parts.sinks = source.sinks;
  if (source.tile !== undefined) parts.tile = source.tile;
  // How many windows a run takes (lookbackDays, maxWindows) decides when rows land, not which.
  const incremental =
    source.incremental === undefined
      ? undefined
      : { item: source.incremental.item, bucketColumn: source.incremental.bucketColumn, startFrom: source.incremental.startFrom };
  parts.source = { timezone: source.timezone, onInvalidValue: source.onInvalidValue, backfill: source.backfill, incremental };
  return parts;
}

/** The fingerprint of a job's definition; an item is named by its header (the name a person edits). */
export function jobDefinitionOf(source: DefinitionSource): JobDefinition {
  return definitionOfValues(definitionPartValues(source));
}

/** The fingerprint of a definition's part values (definitionPartValues), as a run's record keeps them: the same as the run's. */
export function definitionOfValues(values: Record<string, unknown>): JobDefinition {
  const parts: Record<string, string> = {};
  for (const [name, value] of Object.entries(values)) parts[name] = digest(canonical(value), 8);
  return { fingerprint: digest(canonical(parts), 12), parts };
}

/** One part of a definition that changed: the query (with what in it), the column overrides, the sinks. */
export interface DefinitionChange {
  part: 'tile' | 'source settings' | 'query' | 'column overrides' | 'sinks' | 'definition';
  /** For the query: what in it, e.g. `filters on Number`, `item Owner added`. */
  details?: string[];
}

/** What changed from `before` to `now`, part by part; empty when the fingerprints agree. */
export function definitionChanges(before: JobDefinition, now: JobDefinition): DefinitionChange[] {
  if (before.fingerprint === now.fingerprint) return [];
  const names = [...new Set([...Object.keys(before.parts), ...Object.keys(now.parts)])];
  const differs = (name: string) => before.parts[name] !== now.parts[name];
  const query: string[] = [];
  for (const name of names.filter((candidate) => candidate.startsWith(ITEM))) {
    const header = name.slice(ITEM.length);
    if (before.parts[name] === undefined) query.push(`item ${header} added`);
    else if (now.parts[name] === undefined) query.push(`item ${header} removed`);
    else {
      if (differs(name)) query.push(`item ${header} changed`);
      if (differs(`${FILTERS}${header}`)) query.push(`filters on ${header}`);
    }
  }
  if (differs('query.options')) query.push('its options');
  // A part the target's run did not record (an older tilehouse wrote it, before `tile` and
  // `source` were parts) is not known to have changed: it is not named, nor counted below.
  const recorded = (name: string) => before.parts[name] !== undefined;
  // tilehouse 0.1.0 hashed every setting of the sinks (a guard's thresholds too); since then the
  // part is each sink's settings that decide what lands, and `tile` is recorded beside it, so a
  // target whose run recorded no `tile` holds a `sinks` of the old meaning: not compared, as an
  // unrecorded part is not (else every target an upgrade finds would say its sinks changed).
  const sinksComparable = recorded('tile') || now.parts.tile === undefined;
  const changes: DefinitionChange[] = [];
  if (recorded('tile') && differs('tile')) changes.push({ part: 'tile' });
  if (recorded('source') && differs('source')) changes.push({ part: 'source settings' });
  if (query.length > 0) changes.push({ part: 'query', details: query });
  if (differs('columns')) changes.push({ part: 'column overrides' });
  if (sinksComparable && differs('sinks')) changes.push({ part: 'sinks' });
  if (changes.length > 0) return changes;
  const unrecorded = Object.keys(now.parts).filter((name) => !name.startsWith(ITEM) && !name.startsWith(FILTERS) && !recorded(name));
  const same = (name: string) => before.parts[name] === now.parts[name] || (name === 'sinks' && !sinksComparable);
  if (unrecorded.length > 0 && Object.keys(before.parts).every(same)) return [];
  // Parts this version does not know (a newer tilehouse wrote the target): still a change.
  return [{ part: 'definition' }];
}

/** `the job's query changed since run R: filters on Number; its sinks changed since run R`. */
export function describeDefinitionChanges(changes: readonly DefinitionChange[], runId: string): string {
  return changes
    .map((change, index) => {
      const subject = index === 0 ? `the job's ${change.part}` : `its ${change.part}`;
      return `${subject} changed since run ${runId}${change.details === undefined ? '' : `: ${change.details.join(', ')}`}`;
    })
    .join('; ');
}

/** A job's definition as plain values: its tile id and each part (definitionPartValues), as the run history keeps it. */
export interface DefinitionValues {
  tile: string;
  values: Record<string, unknown>;
}

/** One part of a job's definition that differs between two runs: its name as a person reads it, the old value and the new. */
export interface ValueChange {
  /** `tile`, `filters on Status`, `item Owner`, `query options`, `columns`, `sinks`. */
  part: string;
  /** Canonical JSON of the earlier value; absent: the part is new. */
  old?: string;
  /** Canonical JSON of the value now; absent: the part was removed. */
  new?: string;
}

function partName(name: string): string {
  if (name.startsWith(FILTERS)) return `filters on ${name.slice(FILTERS.length)}`;
  if (name.startsWith(ITEM)) return `item ${name.slice(ITEM.length)}`;
  if (name === 'query.options') return 'query options';
  if (name === 'source') return 'source settings';
  return name;
}

/** What changed from `before` to `now`, as old → new values: the tile id first, then each part in the fingerprint's order. */
export function definitionValueChanges(before: DefinitionValues, now: DefinitionValues): ValueChange[] {
  const changes: ValueChange[] = [];
  if (before.tile !== now.tile) changes.push({ part: 'tile', old: JSON.stringify(before.tile), new: JSON.stringify(now.tile) });
  const names = [...new Set([...Object.keys(before.values), ...Object.keys(now.values)])];
  // The tile id is told once, above (a record holds it beside its values too).
  for (const name of names.filter((candidate) => candidate !== 'tile')) {
    const old = name in before.values ? canonical(before.values[name]) : undefined;
    const value = name in now.values ? canonical(now.values[name]) : undefined;
    if (old === value) continue;
    changes.push({ part: partName(name), ...(old === undefined ? {} : { old }), ...(value === undefined ? {} : { new: value }) });
  }
  return changes;
}
