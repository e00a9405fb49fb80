import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'vitest';
import { openLineageProblems } from './openlineage-schemas.js';

/** A dataset of an event, as the tests read it. */
export interface LineageDataset {
  namespace: string;
  name: string;
  facets?: Record<string, Record<string, unknown>>;
  outputFacets?: Record<string, Record<string, unknown>>;
}

/** An OpenLineage RunEvent, as the tests read it. */
export interface LineageEvent {
  eventType: string;
  run: { runId: string; facets: Record<string, Record<string, unknown>> };
  job: { namespace: string; name: string };
  inputs: LineageDataset[];
  outputs: LineageDataset[];
}

/** The variables that send a run's events to `<dir>/lineage.jsonl` (the file transport). */
export function fileTransportEnv(dir: string): Record<string, string> {
  return { OPENLINEAGE__TRANSPORT__TYPE: 'file', OPENLINEAGE__TRANSPORT__LOG_FILE_PATH: path.join(dir, 'lineage.jsonl') };
}

/** The events the file transport wrote under `dir`, in order, each checked against the OpenLineage spec's schemas. */
export async function lineageEventsIn(dir: string): Promise<LineageEvent[]> {
  const lines = (await readFile(path.join(dir, 'lineage.jsonl'), 'utf8')).trimEnd().split('\n');
  const events = lines.map((line) => JSON.parse(line) as LineageEvent);
  for (const event of events) expect(openLineageProblems(event), JSON.stringify(event)).toEqual([]);
  return events;
}
