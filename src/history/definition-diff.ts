import type { LoadedJob } from '../config/load-config.js';
import { definitionPartValues, definitionValueChanges, type ValueChange } from '../value-types/job-definition.js';
import type { RunRecord } from './run-record.js';
import { definitionSourceOf } from '../sinks/registry.js';

export type { ValueChange } from '../value-types/job-definition.js';

/**
 * What changed in a job since the run a record keeps, as old → new values (the tile id first,
 * then each part of the definition in the fingerprint's order); empty when nothing did.
 */
export function changesSince(record: Pick<RunRecord, 'definition'>, job: LoadedJob): ValueChange[] {
  return definitionValueChanges(record.definition, { tile: job.tile, values: definitionPartValues(definitionSourceOf(job)) });
}
