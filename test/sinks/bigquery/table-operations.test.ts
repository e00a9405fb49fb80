import { describe, expect, it } from 'vitest';
import { describeTableOperations, runsPerDay } from '../../../src/sinks/bigquery/table-operations.js';

const from = new Date('2024-03-04T10:00:00Z'); // a Monday

describe('runsPerDay', () => {
  it('is 1 for a daily cron, 288 for every five minutes, 1440 for every minute', () => {
    expect(runsPerDay({ cron: '0 6 * * *', timezone: 'Europe/Berlin' }, from)).toBe(1);
    expect(runsPerDay({ cron: '*/5 * * * *', timezone: 'UTC' }, from)).toBe(288);
    expect(runsPerDay({ cron: '* * * * *', timezone: 'UTC' }, from)).toBe(1440);
  });

  it('counts the busiest day of the week for a weekly cron and a workday cron', () => {
    expect(runsPerDay({ cron: '0 9 * * 1', timezone: 'UTC' }, from)).toBe(1);
    expect(runsPerDay({ cron: '0 */2 * * 1-5', timezone: 'UTC' }, from)).toBe(12);
  });

  it('counts 6-field crons with seconds, up to the limit of 1,500 a day (a schedule that reaches it is over it)', () => {
    expect(runsPerDay({ cron: '0 */2 * * * *', timezone: 'UTC' }, from)).toBe(720);
    expect(runsPerDay({ cron: '* * * * * *', timezone: 'UTC' }, from)).toBe(1500);
  });
});

describe('describeTableOperations', () => {
  it('counts one job a run against 1,500 a day, without a warning below 80 %', () => {
    const lines = describeTableOperations({ writeMode: 'append' }, { cron: '*/5 * * * *', timezone: 'UTC' });
    expect(lines).toContain('table operations/day: 288 scheduled runs x 1 = 288 of 1,500 (19 %)');
    expect(lines.some((line) => line.startsWith('warning:'))).toBe(false);
  });

  it('warns from 80 % of the limit on, and says when the schedule exceeds it', () => {
    const near = describeTableOperations({ writeMode: 'replace' }, { cron: '* * * * *', timezone: 'UTC' });
    expect(near).toContain('table operations/day: 1,440 scheduled runs x 1 = 1,440 of 1,500 (96 %)');
    expect(near.at(-1)).toMatch(/^warning: near BigQuery's 1,500 table operations per table per day/);
    const over = describeTableOperations({ writeMode: 'replace' }, { cron: '*/30 * * * * *', timezone: 'UTC' });
    expect(over).toContain('table operations/day: >= 1,500 scheduled runs x 1 = 1,500 of 1,500 (100 %)');
    expect(over.at(-1)).toMatch(/^warning: exceeds /);
  });

  it('with partitionBy in replace mode, counts one copy per partition and says how many partitions a run may touch', () => {
    const lines = describeTableOperations({ writeMode: 'replace', partitionBy: { column: 'day', granularity: 'day' } }, { cron: '0 * * * *', timezone: 'UTC' });
    expect(lines[0]).toMatch(/1 copy per partition its rows fall in/);
    expect(lines).toContain('table operations/day: 24 scheduled runs x (partitions per run, at least 1) = >= 24 of 1,500 (2 %)');
    expect(lines).toContain('  (50 partitions per run reach 80 % of the limit; a backfill window adds its partitions too)');
  });

  it('without a schedule, says what each run or window costs', () => {
    expect(describeTableOperations({ writeMode: 'append' }, undefined).at(-1)).toBe(
      'table operations/day: no schedule; each run or backfill window uses one of 1,500 a day',
    );
  });
});
