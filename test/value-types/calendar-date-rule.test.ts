import { describe, expect, it } from 'vitest';
import { nominalWindowOf } from '../../src/cli/orchestration-flags.js';
import { jobSchema } from '../../src/config/job-schema.js';
import { daysBetween } from '../../src/pipeline/windows/date-windows.js';
import { summarySchema } from '../../src/pipeline/summary-schema.js';
import { encodeValue } from '../../src/sinks/bigquery/encode-value.js';
import { csvFormat } from '../../src/sinks/csv/csv-format.js';
import { FilePathTemplate } from '../../src/sinks/files/path-template.js';
import { ParquetEncoder } from '../../src/sinks/parquet/encoder/parquet-encoder.js';
import { isValueFailure, parseDate } from '../../src/transform/index.js';
import { isCalendarDate } from '../../src/value-types/civil-date.js';

/**
 * Every place that takes a calendar date from outside asks the one rule in
 * value-types/civil-date.ts, so each accepts and refuses the same texts.
 */
const CASES = [
  '2024-02-29',
  '2023-02-29',
  '1900-02-29',
  '2000-02-29',
  '0000-01-01',
  '0001-01-01',
  '0050-06-15',
  '9999-12-31',
  '2026-02-30',
  '2026-2-3',
  '2026-04-31',
];

const startFromSchema = jobSchema.shape.incremental.unwrap().shape.startFrom;

const consumers: Record<string, (text: string) => boolean> = {
  "a job's incremental.startFrom": (text) => startFromSchema.safeParse(text).success,
  "a file path template's {date}": (text) => {
    try {
      new FilePathTemplate(csvFormat, '{date}.csv').resolve({ name: 'n', tile: 't', runId: 'r', date: text }, '/srv/out');
      return true;
    } catch {
      return false;
    }
  },
  "BigQuery's DATE value": (text) => {
    try {
      encodeValue(text, { name: 'd', type: 'DATE' });
      return true;
    } catch {
      return false;
    }
  },
  "the Parquet encoder's DATE column": (text) => {
    try {
      new ParquetEncoder([{ name: 'd', type: 'DATE' }]).addRows([[text]]);
      return true;
    } catch {
      return false;
    }
  },
  "transform's DATE parser": (text) => {
    const parsed = parseDate(text);
    return parsed !== null && !isValueFailure(parsed);
  },
  "a backfill's window": (text) => {
    try {
      return daysBetween(text, text) === 0;
    } catch {
      return false;
    }
  },
  '--window-start': (text) => {
    try {
      nominalWindowOf('run', { 'window-start': text, 'window-end': '9999-12-31T23:59:59Z' });
      return true;
    } catch {
      return false;
    }
  },
};

describe('the calendar-date rule, asked everywhere', () => {
  for (const [name, accepts] of Object.entries(consumers)) {
    it(`${name} accepts and refuses what isCalendarDate does`, () => {
      // 9999-12-31 as a window start is not before the window end above; test it on its own.
      const cases = name === '--window-start' ? CASES.filter((text) => text !== '9999-12-31') : CASES;
      expect(Object.fromEntries(cases.map((text) => [text, accepts(text)]))).toEqual(Object.fromEntries(cases.map((text) => [text, isCalendarDate(text)])));
    });
  }

  it('refuses a summary document whose window is not a day, though it has the shape', () => {
    // Only the `from` field matters here: the rest of the document is left out on purpose.
    const issuesFor = (from: string) =>
      summarySchema.safeParse({ command: 'backfill', from }).error?.issues.filter((issue) => issue.path.join('.') === 'from') ?? [];
    expect(issuesFor('2026-02-30')).not.toEqual([]);
    expect(issuesFor('2026-03-01')).toEqual([]);
  });
});
