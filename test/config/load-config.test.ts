import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadEnvironment, loadJob, loadJobs, selectJobs } from '../../src/config/load-config.js';
import { configErrorOf, configFilesEachTest } from '../support/config-files.js';

const VALID_JOB = `name: incidents_by_type
tile: tile-1
schedule:
  cron: "0 3 * * *"
  timezone: Europe/Berlin
query:
  items:
    - header: Type
      formula: "[incident.type]"
      dataType: text
      grouped: true
      filters: []
    - header: Incidents
      formula: "[incident.number]"
      dataType: number
      aggregate: count
      filters: []
  options:
    pageNumber: 0
    itemsPerPage: 50
sinks:
  - type: csv
columns:
  Incidents:
    type: INT64
`;

const VALID_ENV = `source:
  baseUrl: https://acme.incidents.example.com
  authUrl: https://auth.incidents.example.com
  clientId: \${TILEHOUSE_CLIENT_ID}
  clientSecret: \${TILEHOUSE_CLIENT_SECRET}
sinks:
  csv:
    directory: out
`;

const files = configFilesEachTest();
const write = files.write;

describe('loadJob', () => {
  it('accepts a valid job and resolves its timezone from the schedule', async () => {
    const job = await loadJob(await write('job.yaml', VALID_JOB));
    expect(job.name).toBe('incidents_by_type');
    expect(job.timezone).toBe('Europe/Berlin');
    expect(job.onInvalidValue).toBe('fail');
    expect(job.columns).toEqual({ Incidents: { type: 'INT64' } });
    expect(job.sinks).toEqual([{ type: 'csv', gzip: false }]);
  });

  // Each case: a change to the valid job, and what the message must name.
  const malformed: Array<{ case: string; yaml: string; field: string; value?: string; line?: number; says: RegExp }> = [
    {
      case: 'a name with upper case',
      yaml: VALID_JOB.replace('name: incidents_by_type', 'name: Incidents-By-Type'),
      field: 'name',
      value: '"Incidents-By-Type"',
      line: 1,
      says: /lower-case/,
    },
    {
      case: 'an invalid cron expression',
      yaml: VALID_JOB.replace('"0 3 * * *"', '"61 3 * * *"'),
      field: 'schedule.cron',
      value: '"61 3 * * *"',
      line: 4,
      says: /not a valid cron expression.*minute/,
    },
    { case: 'a missing tile id', yaml: VALID_JOB.replace('tile: tile-1\n', ''), field: 'tile', says: /expected string/i },
    { case: 'an unknown top-level key', yaml: `${VALID_JOB}retries: 3\n`, field: 'retries', line: 26, says: /unrecognized key/i },
    {
      case: 'a bad timezone',
      yaml: VALID_JOB.replace('Europe/Berlin', 'Mars/Olympus'),
      field: 'schedule.timezone',
      value: '"Mars/Olympus"',
      line: 5,
      says: /IANA/,
    },
    {
      case: 'no query items',
      yaml: VALID_JOB.replace(/query:\n {2}items:[\s\S]*?(?= {2}options:)/, 'query:\n  items: []\n'),
      field: 'query.items',
      says: /at least one item/,
    },
    {
      case: 'an item without a formula',
      yaml: VALID_JOB.replace('      formula: "[incident.number]"\n', ''),
      field: 'query.items[1].formula',
      says: /expected string/i,
    },
    {
      case: 'a bad order value',
      yaml: VALID_JOB.replace('      grouped: true', '      grouped: true\n      order: up'),
      field: 'query.items[0].order',
      value: '"up"',
      says: /asc|desc/,
    },
    {
      case: 'a negative itemsPerPage',
      yaml: VALID_JOB.replace('itemsPerPage: 50', 'itemsPerPage: -5'),
      field: 'query.options.itemsPerPage',
      value: '-5',
      line: 20,
      says: /0|positive/i,
    },
    {
      case: 'an unknown sink type',
      yaml: VALID_JOB.replace('- type: csv', '- type: avro'),
      field: 'sinks[0].type',
      value: '"avro"',
      says: /csv|bigquery|parquet|discriminat|Invalid/i,
    },
    { case: 'no sinks', yaml: VALID_JOB.replace('sinks:\n  - type: csv\n', 'sinks: []\n'), field: 'sinks', says: /at least one sink/ },
    {
      case: 'an unknown column type override',
      yaml: VALID_JOB.replace('type: INT64', 'type: BIGINT'),
      field: 'columns.Incidents.type',
      value: '"BIGINT"',
      line: 25,
      says: /INT64/,
    },
    { case: 'a bad onInvalidValue', yaml: `${VALID_JOB}onInvalidValue: skip\n`, field: 'onInvalidValue', value: '"skip"', says: /fail|null/ },
    {
      case: 'a bad BigQuery write mode',
      yaml: VALID_JOB.replace('- type: csv', '- type: bigquery\n    writeMode: upsert'),
      field: 'sinks[0].writeMode',
      value: '"upsert"',
      says: /replace|append|partition/,
    },
    {
      case: 'a filter with non-string values',
      yaml: VALID_JOB.replace(
        '      grouped: true\n      filters: []',
        '      grouped: true\n      filters:\n        - operator: in\n          values: [1, 2]',
      ),
      field: 'query.items[0].filters[0].values[0]',
      value: '1',
      says: /expected string/i,
    },
  ];

  it.each(malformed)('refuses $case, naming file, field and value', async ({ yaml, field, value, line, says }) => {
    const file = await write('job.yaml', yaml);
    const error = await configErrorOf(loadJob(file));
    const problem = error.problems.find((p) => p.field === field);
    expect(problem, `problems were: ${error.message}`).toBeDefined();
    expect(problem!.file).toBe(file);
    expect(problem!.message).toMatch(says);
    if (value !== undefined) expect(problem!.value).toBe(value);
    if (line !== undefined) expect(problem!.line).toBe(line);
    expect(error.message).toContain(`${file}:`);
    expect(error.message).toContain(field);
    expect(error.exitCode).toBe(2);
    expect(error.code).toBe('config_invalid');
  });

  it('reports a YAML syntax error with its line', async () => {
    const file = await write('job.yaml', 'name: x\nquery: [unclosed\nsinks: []\n');
    const error = await configErrorOf(loadJob(file));
    expect(error.problems[0]!.line).toBeGreaterThanOrEqual(2);
    expect(error.message).toMatch(/YAML syntax/);
  });

  it('refuses duplicate keys instead of silently taking the last one', async () => {
    const file = await write('job.yaml', `${VALID_JOB}name: other\n`);
    const error = await configErrorOf(loadJob(file));
    expect(error.message).toMatch(/YAML syntax.*unique|duplicate/i);
  });
});

describe('loadJobs', () => {
  it('loads every yaml file of a directory in name order', async () => {
    await write('jobs/b.yaml', VALID_JOB.replace('incidents_by_type', 'b_job'));
    await write('jobs/a.yml', VALID_JOB.replace('incidents_by_type', 'a_job'));
    await write('jobs/notes.txt', 'not a job');
    const jobs = await loadJobs(path.join(files.dir, 'jobs'));
    expect(jobs.map((job) => job.name)).toEqual(['a_job', 'b_job']);
  });

  it('lists the problems of every bad file at once', async () => {
    await write('jobs/one.yaml', VALID_JOB.replace('tile: tile-1', 'tile: ""'));
    await write('jobs/two.yaml', VALID_JOB.replace('incidents_by_type', 'Two'));
    const error = await configErrorOf(loadJobs(path.join(files.dir, 'jobs')));
    expect(error.problems.map((p) => path.basename(p.file))).toEqual(['one.yaml', 'two.yaml']);
  });

  it('refuses two jobs with the same name', async () => {
    await write('jobs/one.yaml', VALID_JOB);
    await write('jobs/two.yaml', VALID_JOB);
    const error = await configErrorOf(loadJobs(path.join(files.dir, 'jobs')));
    expect(error.message).toMatch(/two\.yaml.*name = "incidents_by_type".*one\.yaml/);
  });

  it('refuses an empty or missing directory', async () => {
    await mkdir(path.join(files.dir, 'empty'));
    expect((await configErrorOf(loadJobs(path.join(files.dir, 'empty')))).message).toMatch(/no job files/);
    expect((await configErrorOf(loadJobs(path.join(files.dir, 'missing')))).message).toMatch(/ENOENT/);
  });
});

describe('selectJobs', () => {
  it('names the unknown job and lists the known ones', async () => {
    const job = await loadJob(await write('job.yaml', VALID_JOB));
    expect(() => selectJobs([job], ['nope'], 'jobs')).toThrow(
      expect.objectContaining({ code: 'config_invalid', message: expect.stringMatching(/--job = "nope".*known: incidents_by_type/) }),
    );
    expect(selectJobs([job], [], 'jobs')).toEqual([job]);
  });
});

describe('loadEnvironment', () => {
  it('applies defaults', async () => {
    const config = await loadEnvironment(await write('env.yaml', VALID_ENV));
    expect(config.source.tileParam).toBe('tileId');
    expect(config.source.itemsPerPage).toBe(50);
    expect(config.source.requestTimeoutMs).toBe(30_000);
    expect(config.source.allowInsecureHttp).toBe(false);
  });

  it('refuses a literal client secret', async () => {
    const file = await write('env.yaml', VALID_ENV.replace('${TILEHOUSE_CLIENT_SECRET}', 'hunter2'));
    const error = await configErrorOf(loadEnvironment(file));
    expect(error.problems[0]).toMatchObject({ field: 'source.clientSecret', line: 5 });
    expect(error.message).toMatch(/literal secrets are refused/);
  });

  it('requires exactly one of clientSecret and clientSecretFile', async () => {
    const both = VALID_ENV.replace('sinks:', '  clientSecretFile: /run/secret\nsinks:');
    expect((await configErrorOf(loadEnvironment(await write('env.yaml', both)))).message).toMatch(/exactly one of clientSecret/);
    const none = VALID_ENV.replace(/ {2}clientSecret:.*\n/, '');
    expect((await configErrorOf(loadEnvironment(await write('env2.yaml', none)))).message).toMatch(/exactly one of clientSecret/);
  });

  it('refuses http:// for a non-loopback host unless allowInsecureHttp is set', async () => {
    const insecure = VALID_ENV.replace('https://acme', 'http://acme');
    const error = await configErrorOf(loadEnvironment(await write('env.yaml', insecure)));
    expect(error.problems[0]).toMatchObject({ field: 'source.baseUrl', value: '"http://acme.incidents.example.com"' });
    const allowed = insecure.replace('sinks:', '  allowInsecureHttp: true\nsinks:');
    await expect(loadEnvironment(await write('env2.yaml', allowed))).resolves.toBeDefined();
    const loopback = VALID_ENV.replace('https://acme.incidents.example.com', 'http://127.0.0.1:8787');
    await expect(loadEnvironment(await write('env3.yaml', loopback))).resolves.toBeDefined();
  });

  it('refuses a base URL that is not a URL', async () => {
    const file = await write('env.yaml', VALID_ENV.replace('https://acme.incidents.example.com', 'acme'));
    const error = await configErrorOf(loadEnvironment(file));
    expect(error.problems[0]).toMatchObject({ field: 'source.baseUrl', value: '"acme"', line: 2 });
  });

  it('says which file cannot be read', async () => {
    const error = await configErrorOf(loadEnvironment(path.join(files.dir, 'absent.yaml')));
    expect(error.message).toMatch(/absent\.yaml.*cannot read file \(ENOENT\)/);
  });
});
