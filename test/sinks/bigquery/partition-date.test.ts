import { describe, expect, it } from 'vitest';
import { partitionDate, partitionDecorator } from '../../../src/sinks/bigquery/partition-date.js';

describe('partitionDate', () => {
  it('is the first day of the backfill window', () => {
    expect(partitionDate({ startedAt: new Date('2024-03-10T12:00:00Z'), window: { from: '2024-01-05' } }, 'UTC')).toBe('2024-01-05');
  });

  it('is the day the run started in the job time zone', () => {
    const startedAt = new Date('2024-02-29T23:30:00Z');
    expect(partitionDate({ startedAt }, 'UTC')).toBe('2024-02-29');
    expect(partitionDate({ startedAt }, 'Europe/Berlin')).toBe('2024-03-01');
    expect(partitionDate({ startedAt: new Date('2024-03-01T03:00:00Z') }, 'America/Los_Angeles')).toBe('2024-02-29');
  });
});

describe('partitionDecorator', () => {
  it('addresses the day partition as table$YYYYMMDD', () => {
    expect(partitionDecorator('incidents', '2024-01-05')).toBe('incidents$20240105');
  });
});
