import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_GUARD_SETTINGS } from '../../src/config/publish-guard-schema.js';
import { checkPublishGuards, PublishGuardTrippedError } from '../../src/pipeline/publish-guard-check.js';
import type { SinkWriter } from '../../src/sinks/sink.js';
import { type Attributes, NO_TELEMETRY, type SpanHandle, type Telemetry, useTelemetry } from '../../src/telemetry/telemetry.js';
import { jobDefinitionOf } from '../../src/value-types/job-definition.js';

afterEach(() => {
  useTelemetry(NO_TELEMETRY);
});

/** Telemetry whose current span keeps the events it is given. */
function recordingTelemetry(): { events: Array<{ name: string; attributes: Attributes | undefined }> } {
  const events: Array<{ name: string; attributes: Attributes | undefined }> = [];
  const span: SpanHandle = { setAttributes: () => undefined, addEvent: (name, attributes) => events.push({ name, attributes }), fail: () => undefined };
  useTelemetry({ ...NO_TELEMETRY, enabled: true, current: () => span } as Telemetry);
  return { events };
}

const query = (above: string) => ({ items: [{ header: 'Number', formula: '[incident.number]', filters: [{ operator: 'gt', values: [above] }] }] });
const before = jobDefinitionOf({ query: query('0'), sinks: [] });
const now = jobDefinitionOf({ query: query('100000'), sinks: [] });

/** A prepared writer whose target holds `rows`, written by run R1 under the definition before the edit. */
const writer = (target: string, rows: number) =>
  ({
    target,
    guard: {
      settings: DEFAULT_GUARD_SETTINGS,
      holding: async () => ({ target, effect: 'replace', rows, readFrom: 'its manifest', writtenBy: { runId: 'R1', definition: before } }),
    },
  }) as unknown as SinkWriter;

const options = { jobName: 'incidents_open', logger: pino({ level: 'silent' }), exportedRows: 0, definition: now };

describe('checkPublishGuards in the trace', () => {
  it('adds one tilehouse.publish_guard event per target with its verdict, rule, counts, reason and the run its definition changed since', async () => {
    const { events } = recordingTelemetry();
    const refused = checkPublishGuards([writer('/out/a.csv', 130), writer('/out/b.csv', 0)], options);
    await expect(refused).rejects.toBeInstanceOf(PublishGuardTrippedError);
    expect(events).toEqual([
      {
        name: 'tilehouse.publish_guard',
        attributes: {
          'tilehouse.sink.target': '/out/a.csv',
          'tilehouse.guard.verdict': 'trip',
          'tilehouse.guard.rule': 'empty',
          'tilehouse.guard.held_rows': 130,
          'tilehouse.guard.exported_rows': 0,
          'tilehouse.guard.reason': "this export has no rows and it holds 130 rows (its manifest); the job's query changed since run R1: filters on Number",
          'tilehouse.guard.definition_changed_since_run': 'R1',
        },
      },
      {
        name: 'tilehouse.publish_guard',
        attributes: expect.objectContaining({ 'tilehouse.sink.target': '/out/b.csv', 'tilehouse.guard.verdict': 'pass' }),
      },
    ]);
    // The refusal leads with what changed; the override comes after "if this is meant".
    await expect(refused).rejects.toThrow(
      "job incidents_open: the job's query changed since run R1: filters on Number; the publish guard refused this export, nothing published: /out/a.csv: this export has no rows and it holds 130 rows (its manifest) (rule empty). If this is meant, run it again with --allow-shrink",
    );
  });

  it('says overridden for a trip that --allow-shrink lets publish', async () => {
    const { events } = recordingTelemetry();
    const report = await checkPublishGuards([writer('/out/a.csv', 130)], { ...options, allowShrink: true });
    expect(report?.overridden).toBe(true);
    expect(events.map((event) => event.attributes?.['tilehouse.guard.verdict'])).toEqual(['overridden']);
  });
});

describe('checkPublishGuards asking the run that wrote a target', () => {
  /** A writer whose holding names no run (a table's metadata), and whose kind can find it (BigQuery's ledger). */
  const asking = (rows: number, asked: { count: number }) =>
    ({
      target: 'p.d.t',
      guard: {
        settings: DEFAULT_GUARD_SETTINGS,
        holding: async () => ({ target: 'p.d.t', effect: 'replace', rows, readFrom: 'table metadata' }),
        writtenBy: async () => {
          asked.count += 1;
          return { runId: 'R1', definition: before };
        },
      },
    }) as unknown as SinkWriter;

  it('asks only when a verdict trips, and the refusal then says what changed since that run', async () => {
    const asked = { count: 0 };
    await expect(checkPublishGuards([asking(130, asked)], options)).rejects.toThrow(
      "job incidents_open: the job's query changed since run R1: filters on Number; the publish guard refused this export, nothing published: p.d.t: this export has no rows and it holds 130 rows (table metadata) (rule empty)",
    );
    expect(asked.count).toBe(1);
    await checkPublishGuards([asking(0, asked)], options);
    expect(asked.count).toBe(1);
  });
});
