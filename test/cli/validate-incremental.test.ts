import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli-harness.js';
import { offlineEnvironmentText } from '../support/config-files.js';
import { tempDirEachTest } from '../support/temp-dir-hooks.js';

/** `validate` refuses the incremental jobs that cannot work, each problem at its file:line. */

const ENV = { TEST_CLIENT_ID: 'validate-client', TEST_CLIENT_SECRET: 'validate-secret-3141' };

const temp = tempDirEachTest();
let configFile: string;
let jobsDir: string;

/** A valid incremental job; line numbers are 1-based. */
function jobLines(): string[] {
  return [
    'name: daily', // 1
    'tile: t-1', // 2
    'query:', // 3
    '  items:', // 4
    '    - header: Day', // 5
    '      ref: day', // 6
    '      formula: "[incident.created]"', // 7
    '      dataType: datetime', // 8
    '      function: date', // 9
    '      grouped: true', // 10
    '      order: asc', // 11 (filters default to []; without an order validate warns)
    '    - header: Severity', // 12
    '      formula: "[incident.severity_label]"', // 13
    '      dataType: text', // 14
    '      grouped: true', // 15
    '      filters: []', // 16
    'sinks:', // 17
    '  - type: csv', // 18
    '    path: "daily/{date}.csv"', // 19
    '    manifest: true', // 20
    'incremental:', // 21
    '  item: day', // 22
    '  bucketColumn: Day', // 23
    '  startFrom: 2026-06-01', // 24
    '',
  ];
}

async function validate(edit: (lines: string[]) => void = () => {}, options: { runLedger?: boolean } = {}) {
  const lines = jobLines();
  edit(lines);
  const file = path.join(jobsDir, 'daily.yaml');
  await writeFile(file, lines.join('\n'));
  if (options.runLedger === true) await writeFile(configFile, (await readFile(configFile, 'utf8')).replace('    runLedger: false\n', ''));
  const result = await runCli(['validate', '--config', configFile, '--jobs', jobsDir], { env: ENV });
  return { ...result, file };
}

beforeEach(async () => {
  const dir = temp.path;
  configFile = path.join(dir, 'env.yaml');
  jobsDir = path.join(dir, 'jobs');
  await mkdir(jobsDir);
  const bigquery = ['  bigquery:', '    projectId: p', '    dataset: d', '    runLedger: false'];
  await writeFile(configFile, offlineEnvironmentText(path.join(dir, 'out'), bigquery));
});

describe('tilehouse validate: incremental', () => {
  it('accepts an incremental job, and one that takes its item and bucket column from backfill:', async () => {
    expect((await validate()).exitCode).toBe(0);
    const fromBackfill = await validate(
      (lines) => lines.splice(21, 2, '  lookbackDays: 0', '  maxWindows: 3') && lines.push('backfill:', '  item: day', '  bucketColumn: Day', ''),
    );
    expect(fromBackfill.stderr).toBe('');
    expect(fromBackfill.exitCode).toBe(0);
  });

  it.each(['partition', 'merge'])('accepts a BigQuery sink in writeMode %s (a day exported again lands once)', async (writeMode) => {
    // With the run ledger on: it is where a BigQuery sink's published days are read from.
    const sink = ['  - type: bigquery', `    writeMode: ${writeMode}`, ...(writeMode === 'merge' ? ['    primaryKey: [Day, Severity]'] : [])];
    const result = await validate((lines) => lines.splice(20, 0, ...sink), { runLedger: true });
    expect(result.stderr).toBe('');
    expect(result.exitCode).toBe(0);
  });

  it.each([
    {
      case: 'no datetime item named anywhere',
      edit: (lines: string[]) => lines.splice(21, 2),
      problem: 'F:21: incremental = {"startFrom":"2026-06-01"}: name the datetime query item the day windows filter: incremental.item (or backfill.item)',
    },
    {
      case: 'an item that is not a datetime',
      edit: (lines: string[]) => (lines[21] = '  item: Severity'),
      problem: 'F:22: incremental.item = "Severity": the item\'s dataType is text; incremental day windows filter a datetime item with rw',
    },
    {
      case: 'an item no query item has',
      edit: (lines: string[]) => (lines[21] = '  item: created'),
      problem: 'F:22: incremental.item = "created": no query item has this ref or header',
    },
    {
      case: 'a backfill section that names another item',
      edit: (lines: string[]) => lines.push('backfill:', '  item: Severity', ''),
      problem: 'F:22: incremental.item = "day": backfill.item is "Severity": the two must name the same (or leave this one out)',
    },
    {
      case: 'a bucket column that is not a visible header',
      edit: (lines: string[]) => (lines[22] = '  bucketColumn: Created'),
      problem: 'F:23: incremental.bucketColumn = "Created": no visible query item has this header',
    },
    {
      case: 'a startFrom that is not a day',
      edit: (lines: string[]) => (lines[23] = '  startFrom: 2026-02-30'),
      problem: 'F:24: incremental.startFrom = "2026-02-30": not a calendar date YYYY-MM-DD',
    },
    {
      case: 'a missing startFrom',
      edit: (lines: string[]) => lines.splice(23, 1),
      problem: 'F: incremental.startFrom: Invalid input: expected string, received undefined',
    },
    {
      case: 'a CSV path without {date}',
      edit: (lines: string[]) => (lines[18] = '    path: daily.csv'),
      problem: 'F:19: sinks[0].path = "daily.csv": an incremental job writes one file per day: the path needs {date} (or leave it out: {name}/{date}.csv)',
    },
    {
      case: 'a CSV sink without a manifest',
      edit: (lines: string[]) => lines.splice(19, 1),
      problem: 'F:18: sinks[0] = {"type":"csv","path":"daily/{date}.csv"}: an incremental job tells a finished day by its CSV manifest: set manifest: true',
    },
    {
      case: 'a BigQuery sink that appends',
      edit: (lines: string[]) => lines.splice(20, 0, '  - type: bigquery', '    writeMode: append'),
      problem:
        'F:22: sinks[1].writeMode = "append": an incremental job may export a day again (lookbackDays, a re-run after a failed day), and append would add its rows twice: use writeMode: partition (one partition per day) or merge (rows updated by primaryKey)',
    },
    {
      case: 'a BigQuery sink that replaces',
      edit: (lines: string[]) => lines.splice(20, 0, '  - type: bigquery', '    writeMode: replace'),
      problem:
        'F:22: sinks[1].writeMode = "replace": an incremental job exports one day per window, and replace would leave only the last day in the table: use writeMode: partition (one partition per day) or merge (rows updated by primaryKey)',
    },
    {
      case: 'a BigQuery sink with the run ledger off',
      edit: (lines: string[]) => lines.splice(20, 0, '  - type: bigquery', '    writeMode: partition'),
      problem:
        'F:24: incremental: an incremental job reads the days sinks[1] published from the BigQuery run ledger, which sinks.bigquery.runLedger: false turns off (CONFIG)',
    },
  ])('refuses $case with file:line', async ({ edit, problem }) => {
    const result = await validate(edit);
    expect(result.exitCode).toBe(2);
    expect(result.stderr.replaceAll(result.file, 'F').replaceAll(configFile, 'CONFIG')).toBe(`tilehouse: config_invalid:\n  ${problem}\n`);
  });
});
