import { describe, expect, it } from 'vitest';
import { HARD_DESCRIPTIONS, INCIDENT_TYPES, STATUSES, TAG_LABELS } from './dataset-vocabulary.js';
import { countBits, generateDataset, HISTORY_DAYS, incidentAt, type Dataset } from './dataset.js';

const NOW = new Date('2026-07-01T00:00:00Z');
const DAY = 86_400_000;
const all = (d: Dataset) => Array.from({ length: d.size }, (_, i) => incidentAt(d, i));

describe('generateDataset', () => {
  const dataset = generateDataset({ size: 5000, seed: 42, now: NOW });
  const incidents = all(dataset);

  it('gives the same incidents for the same seed', () => {
    expect(all(generateDataset({ size: 5000, seed: 42, now: NOW }))).toEqual(incidents);
  });

  it('gives other incidents for another seed', () => {
    const other = all(generateDataset({ size: 5000, seed: 43, now: NOW }));
    expect(other.filter((incident, i) => incident.type === incidents[i]!.type).length).toBeLessThan(4000);
  });

  it('numbers incidents 1..N in creation order, within the history before now', () => {
    expect(incidents.map((i) => i.number)).toEqual(Array.from({ length: 5000 }, (_, i) => i + 1));
    for (let i = 1; i < incidents.length; i++) expect(incidents[i]!.created).toBeGreaterThanOrEqual(incidents[i - 1]!.created);
    expect(incidents[0]!.created).toBeGreaterThanOrEqual(NOW.getTime() - HISTORY_DAYS * DAY);
    expect(incidents.at(-1)!.created).toBeLessThan(NOW.getTime());
    expect(incidents.at(-1)!.created).toBeGreaterThan(NOW.getTime() - DAY);
  });

  it('moves the whole history with now', () => {
    const later = generateDataset({ size: 5000, seed: 42, now: new Date(NOW.getTime() + 10 * DAY) });
    expect(incidentAt(later, 17).created - incidentAt(dataset, 17).created).toBe(10 * DAY);
  });

  it('draws every status, type and severity, with SEV0 rarest', () => {
    expect(new Set(incidents.map((i) => i.status))).toEqual(new Set(STATUSES));
    expect(new Set(incidents.map((i) => i.type))).toEqual(new Set(INCIDENT_TYPES));
    const bySeverity = [0, 1, 2, 3].map((s) => incidents.filter((i) => i.severity === s).length);
    expect(Math.min(...bySeverity)).toBe(bySeverity[0]);
    expect(incidents.every((i) => i.severityLabel === `SEV${i.severity}`)).toBe(true);
  });

  it('leaves recent incidents open more often than old ones', () => {
    const openShare = (list: typeof incidents) => list.filter((i) => i.status !== 'resolved').length / list.length;
    const recent = incidents.filter((i) => NOW.getTime() - i.created < 2 * DAY);
    const old = incidents.filter((i) => NOW.getTime() - i.created > 30 * DAY);
    expect(openShare(recent)).toBeGreaterThan(0.5);
    expect(openShare(old)).toBeLessThan(0.15);
  });

  it('gives 0 to 3 distinct tags per incident', () => {
    const counts = new Set(incidents.map((i) => i.tags.length));
    expect(counts).toEqual(new Set([0, 1, 2, 3]));
    for (const incident of incidents) expect(new Set(incident.tags).size).toBe(incident.tags.length);
    expect(new Set(incidents.flatMap((i) => i.tags))).toEqual(new Set(TAG_LABELS));
  });

  it('has postmortems only for resolved or mitigated incidents, with some fields missing', () => {
    const withPostmortem = incidents.filter((i) => Object.values(i.postmortem).some((v) => v !== null));
    expect(withPostmortem.every((i) => i.status === 'resolved' || i.status === 'mitigated')).toBe(true);
    expect(withPostmortem.length).toBeGreaterThan(incidents.length / 2);
    for (const key of ['custom_key', 'detection_method', 'customer_impact_minutes', 'action_items'] as const) {
      expect(withPostmortem.some((i) => i.postmortem[key] === null)).toBe(true);
    }
  });

  it('includes every hard description, even in a small dataset', () => {
    const small = all(generateDataset({ size: HARD_DESCRIPTIONS.length, seed: 1, now: NOW }));
    expect(new Set(small.map((i) => i.description))).toEqual(new Set(HARD_DESCRIPTIONS));
    expect(HARD_DESCRIPTIONS).toEqual(expect.arrayContaining(['', '  leading and trailing spaces  ', 'First line\r\nsecond line after CRLF']));
  });

  it('refuses a size it cannot generate', () => {
    expect(() => generateDataset({ size: -1, seed: 1, now: NOW })).toThrow('incidents must be an integer');
    expect(() => generateDataset({ size: 1.5, seed: 1, now: NOW })).toThrow('incidents must be an integer');
  });

  it('generates one million incidents in under 5 seconds of CPU', () => {
    // CPU time, not the clock: on a busy machine the wall time is the other processes' too.
    const started = process.cpuUsage();
    const big = generateDataset({ size: 1_000_000, seed: 42, now: NOW });
    const used = process.cpuUsage(started);
    expect((used.user + used.system) / 1000).toBeLessThan(5000);
    expect(big.size).toBe(1_000_000);
    expect(incidentAt(big, 999_999).number).toBe(1_000_000);
    let tagged = 0;
    for (let i = 0; i < big.size; i++) if (countBits(big.tags[i]!) > 0) tagged++;
    expect(tagged / big.size).toBeGreaterThan(0.7);
  });
});
