import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { definitionChanges, describeDefinitionChanges, jobDefinitionOf, type DefinitionSource } from '../../src/value-types/job-definition.js';

const job = (filterValue: string, extra: Partial<DefinitionSource> = {}): DefinitionSource => ({
  query: {
    items: [
      { header: 'Number', formula: '[incident.number]', dataType: 'number', filters: [{ operator: 'gt', values: [filterValue] }] },
      { header: 'Severity', formula: '[incident.severity_label]', dataType: 'text', filters: [] },
    ],
    options: { pageNumber: 0 },
  },
  columns: {},
  sinks: [{ type: 'csv', settings: { path: 'out/open.csv' } }],
  ...extra,
});

describe('jobDefinitionOf', () => {
  it('is the same for the same definition, whatever the order of its keys', () => {
    const reordered: DefinitionSource = {
      sinks: [{ settings: { path: 'out/open.csv' }, type: 'csv' }],
      columns: {},
      query: {
        options: { pageNumber: 0 },
        items: [
          { filters: [{ values: ['0'], operator: 'gt' }], dataType: 'number', formula: '[incident.number]', header: 'Number' },
          { filters: [], dataType: 'text', formula: '[incident.severity_label]', header: 'Severity' },
        ],
      },
    };
    expect(jobDefinitionOf(reordered)).toEqual(jobDefinitionOf(job('0')));
    expect(jobDefinitionOf(job('0')).fingerprint).toMatch(/^[0-9a-f]{12}$/);
  });

  it('keeps hashes only: no filter value, formula or path appears in it', () => {
    const text = JSON.stringify(jobDefinitionOf(job('secret-looking-value-4242')));
    expect(text).not.toContain('secret-looking-value-4242');
    expect(text).not.toContain('incident.number');
    expect(text).not.toContain('out/open.csv');
  });
});

describe('definitionChanges', () => {
  it('names the item whose filters were edited, and nothing else', () => {
    const changes = definitionChanges(jobDefinitionOf(job('0')), jobDefinitionOf(job('100000')));
    expect(changes).toEqual([{ part: 'query', details: ['filters on Number'] }]);
    expect(describeDefinitionChanges(changes, 'R1')).toBe("the job's query changed since run R1: filters on Number");
  });

  it('names an added item, changed sinks and changed column overrides, each once', () => {
    const before = job('0');
    const after = job('0', { sinks: [{ type: 'csv', settings: { path: 'out/other.csv' } }], columns: { Number: { type: 'STRING' } } });
    after.query = { ...after.query, items: [...after.query.items, { header: 'Owner', formula: '[incident.owner]', dataType: 'text' }] };
    const changes = definitionChanges(jobDefinitionOf(before), jobDefinitionOf(after));
    expect(describeDefinitionChanges(changes, 'R1')).toBe(
      "the job's query changed since run R1: item Owner added; its column overrides changed since run R1; its sinks changed since run R1",
    );
  });

  it('finds no change when only the fingerprint agrees, and a change it cannot place still counts', () => {
    expect(definitionChanges(jobDefinitionOf(job('0')), jobDefinitionOf(job('0')))).toEqual([]);
    const newer = { fingerprint: 'ffffffffffff', parts: jobDefinitionOf(job('0')).parts };
    expect(definitionChanges(newer, jobDefinitionOf(job('0')))).toEqual([{ part: 'definition' }]);
  });
});

describe('the fingerprint covers what decides the rows', () => {
  it('names a changed tile id (another tile is other rows, whatever the query says)', () => {
    const changes = definitionChanges(jobDefinitionOf(job('0', { tile: 'tile-1' })), jobDefinitionOf(job('0', { tile: 'tile-2' })));
    expect(describeDefinitionChanges(changes, 'R1')).toBe("the job's tile changed since run R1");
  });

  it('names the source settings that change values, and not how many windows a run takes', () => {
    const base = {
      tile: 't',
      timezone: 'UTC',
      onInvalidValue: 'fail',
      incremental: { item: 'Opened', startFrom: '2026-01-01', lookbackDays: 1, maxWindows: 31 },
    };
    const before = jobDefinitionOf(job('0', base));
    expect(definitionChanges(before, jobDefinitionOf(job('0', { ...base, onInvalidValue: 'null' })))).toEqual([{ part: 'source settings' }]);
    expect(definitionChanges(before, jobDefinitionOf(job('0', { ...base, timezone: 'Europe/Zurich' })))).toEqual([{ part: 'source settings' }]);
    expect(definitionChanges(before, jobDefinitionOf(job('0', { ...base, incremental: { ...base.incremental, item: 'Closed' } })))).toEqual([
      { part: 'source settings' },
    ]);
    expect(definitionChanges(before, jobDefinitionOf(job('0', { ...base, incremental: { ...base.incremental, lookbackDays: 3, maxWindows: 5 } })))).toEqual([]);
  });

  it('counts nothing as changed in a definition recorded before tile and source were parts', () => {
    const now = jobDefinitionOf(job('0', { tile: 't' }));
    const { tile: _tile, source: _source, ...older } = now.parts;
    const recorded = { fingerprint: 'aaaaaaaaaaaa', parts: older };
    expect(definitionChanges(recorded, now)).toEqual([]);
    expect(definitionChanges(recorded, jobDefinitionOf(job('1', { tile: 't' })))).toEqual([{ part: 'query', details: ['filters on Number'] }]);
  });

  it("does not count the sinks of a target 0.1.0 wrote (every setting hashed, the guard's too) as changed", () => {
    const now = jobDefinitionOf(job('0', { tile: 't' }));
    const { tile: _tile, source: _source, ...older } = now.parts;
    // 0.1.0's part: its sink configs whole, hashed as this version hashes a part (canonical JSON, 8 hex digits).
    const legacySinks = createHash('sha256').update('[{"guard":{"maxShrink":0.9},"path":"out/open.csv","type":"csv"}]').digest('hex').slice(0, 8);
    const recorded = { fingerprint: 'aaaaaaaaaaaa', parts: { ...older, sinks: legacySinks } };
    expect(definitionChanges(recorded, now)).toEqual([]);
    expect(definitionChanges(recorded, jobDefinitionOf(job('1', { tile: 't' })))).toEqual([{ part: 'query', details: ['filters on Number'] }]);
    // Once both runs recorded the tile, the sinks compare again.
    const other = jobDefinitionOf(job('0', { tile: 't', sinks: [{ type: 'csv', settings: { path: 'out/other.csv' } }] }));
    expect(definitionChanges(now, other)).toEqual([{ part: 'sinks' }]);
  });
});
