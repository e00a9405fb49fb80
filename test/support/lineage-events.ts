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
  expect(runCycleProblems(events)).toEqual([]);
  expect(events.flatMap(sourceProblems)).toEqual([]);
  return events;
}

/**
 * Every dataset of an event (inputs and outputs, of every event type) without its `dataSource`, or
 * with one that is not its namespace's (name: the namespace; uri: the namespace, or a bare scheme's
 * root `<scheme>:///`). Marquez keeps the source of the first event that names a dataset, for good.
 */
export function sourceProblems(event: Pick<LineageEvent, 'eventType' | 'inputs' | 'outputs'>): string[] {
  return [...event.inputs, ...event.outputs].flatMap((dataset) => {
    const source = dataset.facets?.dataSource;
    const uri = /^[a-z][a-z0-9+.-]*:/i.test(dataset.namespace) ? dataset.namespace : `${dataset.namespace}:///`;
    if (source?.name === dataset.namespace && source.uri === uri) return [];
    return [`${event.eventType} ${dataset.namespace} ${dataset.name}: dataSource ${JSON.stringify(source)}, not { name: ${dataset.namespace}, uri: ${uri} }`];
  });
}

const TERMINAL = new Set(['COMPLETE', 'FAIL', 'ABORT']);

/**
 * What breaks the spec's run cycle (website/docs/spec/run-cycle.md) in events read in the order
 * they were sent: for any run id, nothing after a terminal event (COMPLETE, FAIL and ABORT are
 * final), and a START first. Empty when every run keeps it.
 */
export function runCycleProblems(events: readonly Pick<LineageEvent, 'eventType' | 'run'>[]): string[] {
  const problems: string[] = [];
  const seen = new Map<string, string[]>();
  for (const event of events) {
    const types = seen.get(event.run.runId) ?? [];
    if (types.length === 0 && event.eventType !== 'START') problems.push(`run ${event.run.runId}: ${event.eventType} before START`);
    const terminal = types.find((type) => TERMINAL.has(type));
    if (terminal !== undefined) problems.push(`run ${event.run.runId}: ${event.eventType} after ${terminal}`);
    seen.set(event.run.runId, [...types, event.eventType]);
  }
  return problems;
}
