import { chmod, mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli-harness.js';
import { spawnCli } from '../support/spawn-cli.js';
import { tempDirEachTest } from '../support/temp-dir-hooks.js';
import { openToOthers, UNPRIVILEGED } from '../support/unprivileged.js';

/**
 * Issue 11: `tilehouse validate` reports what would fail or be ignored later, without the network,
 * each problem as `file:line: field = value: problem`, exit 2. The job files are written line by
 * line here so that every expected line number can be read off the test.
 */

const ENV = { TEST_CLIENT_ID: 'validate-client', TEST_CLIENT_SECRET: 'validate-secret-3141' };

const temp = tempDirEachTest();
let configFile: string;
let jobsDir: string;
let outDir: string;

function environmentText(directory: string, itemsPerPage = 50): string {
  return [
    'source:', // 1
    '  baseUrl: http://127.0.0.1:9', // 2
    '  authUrl: http://127.0.0.1:9', // 3
    '  clientId: ${TEST_CLIENT_ID}', // 4
    '  clientSecret: ${TEST_CLIENT_SECRET}', // 5
    `  itemsPerPage: ${itemsPerPage}`, // 6
    'sinks:', // 7
    '  csv:', // 8
    `    directory: ${directory}`, // 9
    '',
  ].join('\n');
}

/** A valid job; `edit` changes its lines (1-based numbers below) before it is written. */
function jobLines(name: string): string[] {
  return [
    `name: ${name}`, // 1
    'tile: t-1', // 2
    'schedule:', // 3
    '  cron: "0 6 * * *"', // 4
    'query:', // 5
    '  items:', // 6
    '    - header: Type', // 7
    '      formula: "[incident.type]"', // 8
    '      dataType: text', // 9
    '      filters:', // 10
    '        - operator: in', // 11
    '          values: [a]', // 12
    '          beforeAggregate: true', // 13
    '    - header: Incidents', // 14
    '      formula: "[incident.number]"', // 15
    '      dataType: number', // 16
    '      aggregate: count', // 17
    '      filters: []', // 18
    '    - header: Created', // 19
    '      formula: "[incident.created]"', // 20
    '      dataType: datetime', // 21
    '      hidden: true', // 22
    '      filters: []', // 23
    '  options:', // 24
    '    pageNumber: 0', // 25
    '    itemsPerPage: 50', // 26
    'sinks:', // 27
    '  - type: csv', // 28
    'columns:', // 29
    '  Incidents: { type: INT64 }', // 30
    '',
  ];
}

async function writeJob(name: string, edit: (lines: string[]) => void = () => {}): Promise<string> {
  const lines = jobLines(name);
  edit(lines);
  const file = path.join(jobsDir, `${name}.yaml`);
  await writeFile(file, lines.join('\n'));
  return file;
}

async function validate(...extra: string[]) {
  return runCli(['validate', '--config', configFile, '--jobs', jobsDir, ...extra], { env: ENV });
}

/** stderr of a refused validate: the header line, then one line per problem, then ''. */
function problemsOf(stderr: string): string[] {
  const [header, ...rest] = stderr.split('\n');
  expect(header).toBe('tilehouse: config_invalid:');
  expect(rest.pop()).toBe('');
  return rest.map((line) => line.replace(/^ {2}/, ''));
}

beforeEach(async () => {
  const dir = temp.path;
  configFile = path.join(dir, 'env.yaml');
  jobsDir = path.join(dir, 'jobs');
  outDir = path.join(dir, 'out');
  await mkdir(jobsDir);
  await writeFile(configFile, environmentText(outDir));
});

describe('tilehouse validate', () => {
  it('passes a valid workspace: exit 0, one line on stdout, nothing on stderr', async () => {
    await writeJob('a');
    const result = await validate();
    expect(result).toMatchObject({ exitCode: 0, stderr: '', stdout: `valid: ${configFile} and 1 job in ${jobsDir}: a\n` });
  });

  it('accepts gs:// targets without touching the local disk, and refuses a malformed one naming file, field and value', async () => {
    await writeFile(configFile, environmentText('gs://tilehouse-exports/nightly'));
    await writeJob('a');
    await writeJob('b', (lines) => lines.splice(28, 0, '    path: gs://tilehouse-exports/other/{name}/{date}.csv'));
    expect(await validate()).toMatchObject({ exitCode: 0, stderr: '' });
    expect(await readdir(path.dirname(configFile))).not.toContain('gs:');
    const bad = await writeJob('c', (lines) => lines.splice(28, 0, '    path: gs://Bad_Bucket/{name}.csv'));
    const refused = await validate();
    expect(refused.exitCode).toBe(2);
    expect(refused.stderr).toContain(bad);
    expect(refused.stderr).toMatch(/sinks\[0\]\.path.*gs:\/\/Bad_Bucket.*lowercase/);
  });

  it('checks the publish guard settings of a sink, file:line, and accepts legal ones', async () => {
    await writeJob('a', (lines) => lines.splice(28, 0, '    guard: { maxShrink: 0.8, recentRuns: 7, allowEmpty: true, minOfRecent: 0 }'));
    await writeJob('c', (lines) => lines.splice(28, 0, '    guard: false'));
    expect(await validate()).toMatchObject({ exitCode: 0, stderr: '' });
    const bad = await writeJob('b', (lines) => lines.splice(28, 0, '    guard:', '      maxShrink: 1.5', '      recentRuns: 2', '      maxshrink: 0.1'));
    const problems = problemsOf((await validate()).stderr);
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(new RegExp(`^${bad}:30: sinks\\[0\\]\\.guard\\.maxShrink = 1\\.5: .*1`)),
        expect.stringMatching(new RegExp(`^${bad}:31: sinks\\[0\\]\\.guard\\.recentRuns = 2: .*3`)),
        expect.stringMatching(new RegExp(`^${bad}:32: sinks\\[0\\]\\.guard\\.maxshrink`)),
      ]),
    );
  });

  it('refuses a malformed gs:// CSV directory in the environment', async () => {
    await writeFile(configFile, environmentText('gs://Bad_Bucket/x'));
    await writeJob('a');
    const refused = await validate();
    expect(refused.exitCode).toBe(2);
    expect(refused.stderr).toMatch(/sinks\.csv\.directory.*lowercase/);
  });

  it.each([
    {
      case: 'an unknown key in a query item',
      edit: (lines: string[]) => lines.splice(9, 0, '      hiden: true'),
      problem: (file: string) => `${file}:10: query.items[0].hiden: Unrecognized key: "hiden"`,
    },
    {
      case: 'an unknown key in a filter',
      edit: (lines: string[]) => (lines[12] = '          beforeAgregate: true'),
      problem: (file: string) => `${file}:13: query.items[0].filters[0].beforeAgregate: Unrecognized key: "beforeAgregate"`,
    },
    {
      case: 'an unknown key in the options',
      edit: (lines: string[]) => (lines[25] = '    itemsPerpage: 50'),
      problem: (file: string) => `${file}:26: query.options.itemsPerpage: Unrecognized key: "itemsPerpage"`,
    },
    {
      case: 'a columns override for a header the query does not have',
      edit: (lines: string[]) => (lines[29] = '  Incident: { type: INT64 }'),
      problem: (file: string) => `${file}:30: columns.Incident = {"type":"INT64"}: no visible query item has this header; headers: "Type", "Incidents"`,
    },
    {
      case: 'a columns override for a hidden item',
      edit: (lines: string[]) => (lines[29] = '  Created: { type: DATE }'),
      problem: (file: string) => `${file}:30: columns.Created = {"type":"DATE"}: this query item is hidden: the export has no such column`,
    },
    {
      case: 'text overridden to a number type',
      edit: (lines: string[]) => lines.splice(30, 0, '  Type: { type: NUMERIC }'),
      problem: (file: string) => `${file}:31: columns.Type.type = "NUMERIC": the item's dataType is text, which can be read as STRING`,
    },
  ])('refuses $case: exit 2, file:line: field = value: problem', async ({ edit, problem }) => {
    const file = await writeJob('a', edit);
    const result = await validate();
    expect(result.exitCode).toBe(2);
    expect(result.stdout).toBe('');
    expect(problemsOf(result.stderr)).toEqual([problem(file)]);
  });

  describe('BigQuery partition and cluster columns, against the columns the visible items and overrides give', () => {
    /** Adds a BigQuery sink after the CSV one: its lines are 29-31, the layout on line 31. */
    const bigquerySink = (layout: string) => (lines: string[]) => lines.splice(28, 0, '  - type: bigquery', '    dataset: ops', `    ${layout}`);

    it.each([
      {
        case: 'a partition column that is not a date',
        layout: 'partitionBy: { column: Incidents }',
        problems: [
          'sinks[1].partitionBy.column = "Incidents": column incidents is INT64; partitioning needs a DATE or TIMESTAMP column, which only a datetime query item gives',
        ],
      },
      {
        case: 'a partition column of a hidden item',
        layout: 'partitionBy: { column: Created, granularity: month }',
        problems: ['sinks[1].partitionBy.column = "Created": no such column; columns: type, incidents'],
      },
      {
        case: 'a cluster column the query does not have',
        layout: 'clusterBy: [Type, Nope]',
        problems: ['sinks[1].clusterBy[1] = "Nope": no such column; columns: type, incidents'],
      },
    ])('refuses $case: exit 2, file:line: field = value: problem', async ({ layout, problems }) => {
      const file = await writeJob('a', bigquerySink(layout));
      const result = await validate();
      expect(result.exitCode).toBe(2);
      expect(problemsOf(result.stderr)).toEqual(problems.map((problem) => `${file}:31: ${problem}`));
    });

    it('reports a bad partition column and a bad cluster column of one sink, each on its line', async () => {
      const file = await writeJob('a', (lines) =>
        lines.splice(28, 0, '  - type: bigquery', '    dataset: ops', '    partitionBy:', '      column: Type', '    clusterBy:', '      - Created'),
      );
      const result = await validate();
      expect(problemsOf(result.stderr)).toEqual([
        `${file}:32: sinks[1].partitionBy.column = "Type": column type is STRING; partitioning needs a DATE or TIMESTAMP column, which only a datetime query item gives`,
        `${file}:34: sinks[1].clusterBy[0] = "Created": no such column; columns: type, incidents`,
      ]);
    });

    it('applies the columns overrides: a number is FLOAT64 (no clustering) unless overridden to INT64', async () => {
      const withoutOverride = await writeJob('a', (lines) => {
        bigquerySink('clusterBy: [Incidents]')(lines);
        lines.splice(31, 2);
      });
      const refused = await validate();
      expect(problemsOf(refused.stderr)).toEqual([
        `${withoutOverride}:31: sinks[1].clusterBy[0] = "Incidents": column incidents is FLOAT64, which BigQuery cannot cluster by`,
      ]);

      await writeJob('a', bigquerySink('clusterBy: [Incidents]'));
      expect(await validate()).toMatchObject({ exitCode: 0, stderr: '' });
    });

    it('passes a visible datetime item (TIMESTAMP, or DATE through columns) and clusterable columns, by header or output name', async () => {
      for (const override of [[], ['  Created: { type: DATE }']]) {
        await writeJob('a', (lines) => {
          lines.splice(
            28,
            0,
            '  - type: bigquery',
            '    dataset: ops',
            '    partitionBy: { column: created, granularity: month }',
            '    clusterBy: [Type, incidents, Created]',
          );
          lines.splice(21, 1); // Created is no longer hidden
          lines.splice(-1, 0, ...override);
        });
        expect(await validate()).toMatchObject({ exitCode: 0, stderr: '' });
      }
    });
  });

  describe('writeMode: merge, its key against the columns the visible items give', () => {
    /** Adds a BigQuery sink after the CSV one: lines 29-32, the key option on line 32. */
    const mergeSink =
      (option: string, writeMode = 'merge') =>
      (lines: string[]) =>
        lines.splice(28, 0, '  - type: bigquery', '    dataset: ops', `    writeMode: ${writeMode}`, ...(option ? [`    ${option}`] : []));

    it.each([
      {
        case: 'merge without a primaryKey',
        edit: mergeSink(''),
        problem: (file: string) => `${file}:31: sinks[1].writeMode = "merge": writeMode: merge needs primaryKey: the columns whose values identify a row`,
      },
      {
        case: 'a primaryKey column the query does not have',
        edit: mergeSink('primaryKey: [Type, Ticket]'),
        problem: (file: string) =>
          `${file}:32: sinks[1].primaryKey[1] = "Ticket": no such column (a key must be a visible item's header or output name); columns: type, incidents`,
      },
      {
        case: 'a primaryKey column of a hidden item',
        edit: mergeSink('primaryKey: [Created]'),
        problem: (file: string) =>
          `${file}:32: sinks[1].primaryKey[0] = "Created": no such column (a key must be a visible item's header or output name); columns: type, incidents`,
      },
      {
        case: 'a latestBy column the query does not have',
        edit: (lines: string[]) => {
          mergeSink('primaryKey: [Type]')(lines);
          lines.splice(32, 0, '    latestBy: Updated');
        },
        problem: (file: string) =>
          `${file}:33: sinks[1].latestBy = "Updated": no such column (a key must be a visible item's header or output name); columns: type, incidents`,
      },
      {
        case: 'a primaryKey in another write mode',
        edit: mergeSink('primaryKey: [Type]', 'append'),
        problem: (file: string) => `${file}:32: sinks[1].primaryKey = ["Type"]: only with writeMode: merge (this sink's is append)`,
      },
      {
        case: 'merge into a CSV sink',
        edit: (lines: string[]) => lines.splice(28, 0, '    writeMode: merge'),
        problem: (file: string) =>
          `${file}:29: sinks[0].writeMode = "merge": a CSV sink has no writeMode: each run writes its own whole file (replace); append, partition and merge are BigQuery write modes`,
      },
    ])('refuses $case: exit 2, file:line: field = value: problem', async ({ edit, problem }) => {
      const file = await writeJob('a', edit);
      const result = await validate();
      expect(result.exitCode).toBe(2);
      expect(problemsOf(result.stderr)).toEqual([problem(file)]);
    });

    it('passes a key and latestBy of visible items, by header or output name', async () => {
      await writeJob('a', (lines) => {
        mergeSink('primaryKey: [type]')(lines);
        lines.splice(32, 0, '    latestBy: Incidents');
      });
      expect(await validate()).toMatchObject({ exitCode: 0, stderr: '' });
    });
  });

  it('refuses a CSV directory that is a file, naming the config line', async () => {
    await writeJob('a');
    await writeFile(outDir, 'not a directory');
    const result = await validate();
    expect(result.exitCode).toBe(2);
    expect(problemsOf(result.stderr)).toEqual([
      `${configFile}:9: sinks.csv.directory = ${JSON.stringify(outDir)}: CSV files cannot be written there: ${outDir} is a file, not a directory`,
    ]);
  });

  it('refuses a CSV path whose folder is a file, naming the job line', async () => {
    const file = await writeJob('a', (lines) => lines.splice(28, 0, '    path: reports/{date}.csv'));
    await mkdir(outDir);
    await writeFile(path.join(outDir, 'reports'), '');
    const result = await validate();
    expect(result.exitCode).toBe(2);
    expect(problemsOf(result.stderr)).toEqual([
      `${file}:29: sinks[0].path = "reports/{date}.csv": CSV files cannot be written there: ${path.join(outDir, 'reports')} is a file, not a directory`,
    ]);
  });

  it('refuses a CSV directory that is not writable (as a user who may not write it: nobody, when the suite runs as root)', async () => {
    await writeJob('a');
    await mkdir(outDir);
    await chmod(outDir, 0o555);
    // nobody may not write the temp directory either: the history (its own test) goes to a bucket here.
    await writeFile(configFile, `${environmentText(outDir)}history:\n  location: gs://acme/history\n`);
    await openToOthers(temp.path, temp.path);
    const result = await spawnCli(['validate', '--config', configFile, '--jobs', jobsDir], { env: ENV, timeoutMs: 30_000, spawn: UNPRIVILEGED });
    expect(result.code).toBe(2);
    expect(problemsOf(result.stderr)).toEqual([
      `${configFile}:9: sinks.csv.directory = ${JSON.stringify(outDir)}: CSV files cannot be written there: ${outDir} is not writable (EACCES)`,
    ]);
  });

  it('warns when the history cannot be written here (exit 0, exit 2 with --strict): runs would keep no record for status', async () => {
    await writeJob('a');
    await writeFile(configFile, `${environmentText(outDir)}history:\n  location: state/history\n`);
    await writeFile(path.join(temp.path, 'state'), 'not a directory');
    const history = path.join(temp.path, 'state', 'history');
    const warning =
      `${configFile}:11: history.location = "state/history": ${path.join(temp.path, 'state')} is a file, so ${history} cannot be created: ` +
      'every run would log history_unavailable and keep no record for tilehouse status; make it writable or set gs://bucket/prefix or s3://bucket/prefix';
    const lenient = await validate();
    expect(lenient).toMatchObject({
      exitCode: 0,
      stderr: `warning: ${warning}\n`,
      stdout: `valid: ${configFile} and 1 job in ${jobsDir}: a (1 warning above)\n`,
    });
    const strict = await validate('--strict');
    expect(strict.exitCode).toBe(2);
    expect(problemsOf(strict.stderr)).toEqual([warning]);
  });

  it('refuses two jobs writing the same CSV path', async () => {
    await writeJob('a', (lines) => lines.splice(28, 0, '    path: shared.csv'));
    const second = await writeJob('b', (lines) => lines.splice(28, 0, '    path: shared.csv'));
    const result = await validate();
    expect(result.exitCode).toBe(2);
    expect(problemsOf(result.stderr)).toEqual([
      `${second}:29: sinks[0].path = "shared.csv": ${path.join(outDir, 'shared.csv')} is also written by job a (${path.join(jobsDir, 'a.yaml')}); each run would replace the other's output`,
    ]);
  });

  it('warns about a 6-field cron (schedule runs it, k8s refuses it): exit 0, exit 2 with --strict', async () => {
    const file = await writeJob('a', (lines) => (lines[3] = '  cron: "0 0 6 * * *"'));
    const warning = `${file}:4: schedule.cron = "0 0 6 * * *": tilehouse schedule runs it, but tilehouse k8s refuses it: a Kubernetes CronJob takes 5 fields (minute hour day month weekday); this has 6`;
    const lenient = await validate();
    expect(lenient.exitCode).toBe(0);
    expect(lenient.stderr).toBe(`warning: ${warning}\n`);
    expect(lenient.stdout).toBe(`valid: ${configFile} and 1 job in ${jobsDir}: a (1 warning above)\n`);
    const strict = await validate('--strict');
    expect(strict.exitCode).toBe(2);
    expect(problemsOf(strict.stderr)).toEqual([warning]);
  });

  it('warns when the job page size differs from the environment: the environment wins', async () => {
    await writeFile(configFile, environmentText(outDir, 200));
    const file = await writeJob('a');
    const result = await validate();
    expect(result.exitCode).toBe(0);
    expect(result.stderr).toBe(
      `warning: ${file}:26: query.options.itemsPerPage = 50: ignored: every request asks for source.itemsPerPage = 200 rows (${configFile}); remove it or make the two equal\n`,
    );
  });

  it('warns when a query that may span pages states no order (exit 0, exit 2 with --strict), not when one item has an order or the query is one aggregate row', async () => {
    const grouped = (lines: string[]) => lines.splice(9, 0, '      grouped: true');
    const file = await writeJob('a', grouped);
    const warning = `${file}:7: query.items = "3 items without order": rows have no stated order; pages may overlap or skip rows if the source orders them differently per request; add \`order: asc\` to a unique number or datetime item`;
    const lenient = await validate();
    expect(lenient.exitCode).toBe(0);
    expect(lenient.stderr).toBe(`warning: ${warning}\n`);
    const strict = await validate('--strict');
    expect(strict.exitCode).toBe(2);
    expect(problemsOf(strict.stderr)).toEqual([warning]);

    await writeJob('a', (lines) => {
      grouped(lines);
      lines.splice(10, 0, '      order: asc');
    });
    expect(await validate('--strict')).toMatchObject({ exitCode: 0, stderr: '' });
    // The fixture as written: a count with nothing grouped is one row, whatever the order.
    await writeJob('a');
    expect(await validate('--strict')).toMatchObject({ exitCode: 0, stderr: '' });
  });

  it('shows an example in its help', async () => {
    const result = await runCli(['validate', '--help'], { env: {} });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toMatch(/\nExample:\n {2}tilehouse validate --config \S+ --jobs jobs --strict\n/);
  });
});
