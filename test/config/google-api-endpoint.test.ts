import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { googleApiEndpointProblem } from '../../src/config/google-api-endpoint.js';
import { loadEnvironment } from '../../src/config/load-config.js';
import { runCli, refusalCode } from '../support/cli-harness.js';
import { configErrorOf, configFilesEachTest } from '../support/config-files.js';
import { tempDirForAll } from '../support/temp-dir-hooks.js';

const ENVIRONMENT = (sinks: string[]) =>
  [
    'source:', // 1
    '  baseUrl: http://127.0.0.1:9', // 2
    '  authUrl: http://127.0.0.1:9', // 3
    '  clientId: ${TEST_CLIENT_ID}', // 4
    '  clientSecret: ${TEST_CLIENT_SECRET}', // 5
    'sinks:', // 6
    ...sinks, // 7...
    '',
  ].join('\n');

describe('googleApiEndpointProblem', () => {
  it.each([
    'https://bigquery.europe-west3.rep.googleapis.com',
    'https://storage.me-central2.rep.googleapis.com/',
    'https://bigquery-myendpoint.p.googleapis.com:443',
    'http://127.0.0.1:9050',
    'http://localhost:8080',
    'http://[::1]:8080',
  ])('accepts %s', (value) => {
    expect(googleApiEndpointProblem(value)).toBeUndefined();
  });

  it.each([
    ['bigquery.googleapis.com', /must be a URL/],
    ['http://bigquery.example.com', /http:\/\/ is refused for non-loopback hosts/],
    ['ftp://bigquery.example.com', /https:\/\//],
    ['https://bigquery.googleapis.com/bigquery/v2', /origin only.*https:\/\/bigquery\.googleapis\.com/],
    ['https://storage.googleapis.com/?alt=json', /origin only/],
    ['https://user:pw@bigquery.googleapis.com', /user or password/],
  ])('refuses %s', (value, says) => {
    expect(googleApiEndpointProblem(value)).toMatch(says);
  });
});

describe('loadEnvironment: sinks.bigquery.apiEndpoint and sinks.gcs.apiEndpoint', () => {
  const files = configFilesEachTest();

  it('keeps both endpoints as origins, with the credentials wait defaulted', async () => {
    const file = await files.write(
      'env.yaml',
      ENVIRONMENT([
        '  bigquery:',
        '    dataset: d',
        '    apiEndpoint: https://bigquery.europe-west3.rep.googleapis.com/',
        '  gcs:',
        '    apiEndpoint: http://127.0.0.1:4443',
      ]),
    );
    const environment = await loadEnvironment(file);
    expect(environment.sinks.bigquery?.apiEndpoint).toBe('https://bigquery.europe-west3.rep.googleapis.com');
    expect(environment.sinks.gcs?.apiEndpoint).toBe('http://127.0.0.1:4443');
    expect(environment.googleCredentialsWaitMs).toBe(30_000);
  });

  it("leaves both unset by default (the clients use Google's endpoints)", async () => {
    const environment = await loadEnvironment(await files.write('env.yaml', ENVIRONMENT(['  csv:', '    directory: out'])));
    expect(environment.sinks.bigquery).toBeUndefined();
    expect(environment.sinks.gcs).toBeUndefined();
  });

  it('names file, line, field and value of a bad endpoint', async () => {
    const file = await files.write(
      'env.yaml',
      ENVIRONMENT([
        '  bigquery:',
        '    dataset: d',
        '    apiEndpoint: http://bigquery.example.com',
        '  gcs:',
        '    apiEndpoint: https://storage.googleapis.com/storage/v1',
      ]),
    );
    const error = await configErrorOf(loadEnvironment(file));
    expect(error.problems).toEqual([
      expect.objectContaining({
        file,
        line: 9,
        field: 'sinks.bigquery.apiEndpoint',
        value: '"http://bigquery.example.com"',
        message: expect.stringMatching(/http:\/\/ is refused/),
      }),
      expect.objectContaining({
        file,
        line: 11,
        field: 'sinks.gcs.apiEndpoint',
        value: '"https://storage.googleapis.com/storage/v1"',
        message: expect.stringMatching(/origin only/),
      }),
    ]);
  });

  it('refuses a credentials wait below a second or above five minutes', async () => {
    for (const value of [500, 600_000]) {
      const file = await files.write('env.yaml', `${ENVIRONMENT(['  csv:', '    directory: out'])}googleCredentialsWaitMs: ${value}\n`);
      const error = await configErrorOf(loadEnvironment(file));
      expect(error.problems[0]).toMatchObject({ field: 'googleCredentialsWaitMs', value: String(value) });
    }
  });
});

describe('tilehouse validate with Google endpoints', () => {
  const temp = tempDirForAll();
  beforeAll(async () => {
    await mkdir(path.join(temp.path, 'jobs'));
    await writeFile(
      path.join(temp.path, 'jobs', 'a.yaml'),
      [
        'name: a',
        'tile: t-1',
        'query:',
        '  items:',
        '    - header: Type',
        '      formula: "[incident.type]"',
        '      dataType: text',
        '      order: asc',
        '      filters: []',
        'sinks:',
        '  - type: bigquery',
        '    table: a',
        '',
      ].join('\n'),
    );
  });
  const validate = async (sinks: string[]) => {
    const configFile = path.join(temp.path, 'env.yaml');
    await writeFile(configFile, ENVIRONMENT(sinks));
    return {
      configFile,
      result: await runCli(['validate', '--config', configFile, '--jobs', path.join(temp.path, 'jobs')], {
        env: { TEST_CLIENT_ID: 'id', TEST_CLIENT_SECRET: 'secret-2718' },
      }),
    };
  };

  it('passes endpoints on https and on loopback', async () => {
    const { result } = await validate([
      '  bigquery:',
      '    dataset: d',
      '    apiEndpoint: https://bigquery.europe-west3.rep.googleapis.com',
      '  gcs:',
      '    apiEndpoint: http://127.0.0.1:4443',
    ]);
    expect(result.stderr).not.toContain('apiEndpoint');
    expect(result.exitCode, result.stderr).toBe(0);
  });

  it('refuses plain http to another host as file:line: field = value, exit 2', async () => {
    const { configFile, result } = await validate(['  bigquery:', '    dataset: d', '  gcs:', '    apiEndpoint: http://storage.example.com']);
    expect(result.exitCode).toBe(2);
    expect(refusalCode(result)).toBe('config_invalid');
    expect(result.stderr).toContain(`${configFile}:10: sinks.gcs.apiEndpoint = "http://storage.example.com": http:// is refused for non-loopback hosts`);
  });
});
