import type { SinkRunContext } from '../../src/sinks/sink.js';
import type { Column, TypedRow } from '../../src/transform/column.js';
import { silentLogger } from './fake-sinks.js';

// Two columns, one header needing CSV quotes, and two rows, one with a newline: what the object
// writers' tests write, gs:// and s3:// alike.
export const twoColumns: Column[] = [
  { name: 'id', header: 'id', type: 'INT64', sourceDataType: 'number' },
  { name: 'title', header: 'Title, "quoted"', type: 'STRING', sourceDataType: 'text' },
];
export const twoRows: TypedRow[] = [
  [1n, 'first'],
  [2n, 'zweite\nZeile'],
];

/** A run of the job `incidents` (tile `t`) started 2026-07-01 06:00 UTC, with the two columns. */
export function incidentsRun(runId: string): SinkRunContext {
  return { jobName: 'incidents', tileId: 't', runId, startedAt: new Date('2026-07-01T06:00:00Z'), columns: twoColumns, logger: silentLogger };
}
