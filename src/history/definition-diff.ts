import type { LoadedJob } from '../config/load-config.js';
import { definitionPartValues, partValueText } from '../value-types/job-definition.js';
import type { RunRecord } from './run-record.js';

/** One part of a job's definition that differs from a run's: its name as a person reads it, the old value and the new. */
export interface ValueChange {
  /** `tile`, `filters on Status`, `item Owner`, `query options`, `columns`, `sinks`. */
  part: string;
  /** Canonical JSON of the value the run ran with; absent: the part is new. */
  old?: string;
  /** Canonical JSON of the value now; absent: the part was removed. */
  new?: string;
}

const ITEM = 'query.item:';
const FILTERS = 'query.filters:';

function partName(name: string): string {
  if (name.startsWith(FILTERS)) return `filters on ${name.slice(FILTERS.length)}`;
  if (name.startsWith(ITEM)) return `item ${name.slice(ITEM.length)}`;
  if (name === 'query.options') return 'query options';
  return name;
}

/**
 * What changed in a job since the run a record keeps, as old → new values: the tile id first,
 * then each part of the definition in the fingerprint's order. Empty when nothing did.
 */
export function changesSince(record: Pick<RunRecord, 'definition'>, job: LoadedJob): ValueChange[] {
  const changes: ValueChange[] = [];
  if (record.definition.tile !== job.tile) changes.push({ part: 'tile', old: JSON.stringify(record.definition.tile), new: JSON.stringify(job.tile) });
  const before = record.definition.values;
  const now = definitionPartValues(job);
  const names = [...new Set([...Object.keys(before), ...Object.keys(now)])];
  for (const name of names) {
    const old = name in before ? partValueText(before[name]) : undefined;
    const value = name in now ? partValueText(now[name]) : undefined;
    if (old === value) continue;
    changes.push({ part: partName(name), ...(old === undefined ? {} : { old }), ...(value === undefined ? {} : { new: value }) });
  }
  return changes;
}
