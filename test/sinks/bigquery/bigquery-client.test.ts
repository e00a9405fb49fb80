import { afterEach, describe, expect, it } from 'vitest';
import { bigqueryEmulatorOrigin, createBigQueryClient } from '../../../src/sinks/bigquery/bigquery-client.js';

describe('bigqueryEmulatorOrigin', () => {
  it.each([
    ['http://127.0.0.1:9050', 'http://127.0.0.1:9050'],
    ['127.0.0.1:9050', 'http://127.0.0.1:9050'],
    ['http://localhost:9050/bigquery/v2', 'http://localhost:9050'],
    [' http://127.0.0.1:9050/ ', 'http://127.0.0.1:9050'],
  ])('reads %j as the origin %s', (value, origin) => {
    expect(bigqueryEmulatorOrigin({ BIGQUERY_EMULATOR_HOST: value })).toBe(origin);
  });

  it('is undefined (real BigQuery) when the variable is unset or empty', () => {
    expect(bigqueryEmulatorOrigin({})).toBeUndefined();
    expect(bigqueryEmulatorOrigin({ BIGQUERY_EMULATOR_HOST: '' })).toBeUndefined();
  });

  it('refuses a value that is not a URL, naming it', () => {
    expect(() => bigqueryEmulatorOrigin({ BIGQUERY_EMULATOR_HOST: 'http://' })).toThrow(
      'BIGQUERY_EMULATOR_HOST="http://" is not a URL (expected http://host:port)',
    );
  });
});

describe('createBigQueryClient', () => {
  const saved = process.env.BIGQUERY_EMULATOR_HOST;
  afterEach(() => {
    if (saved === undefined) delete process.env.BIGQUERY_EMULATOR_HOST;
    else process.env.BIGQUERY_EMULATOR_HOST = saved;
  });

  it('aims JSON calls at <origin>/bigquery/v2 and uploads at the origin, and leaves the variable as it was', () => {
    process.env.BIGQUERY_EMULATOR_HOST = 'http://127.0.0.1:9050';
    const client = createBigQueryClient('demo');
    expect(client.baseUrl).toBe('http://127.0.0.1:9050/bigquery/v2');
    expect(client.apiEndpoint).toBe('http://127.0.0.1:9050');
    expect(client.projectId).toBe('demo');
    expect(process.env.BIGQUERY_EMULATOR_HOST).toBe('http://127.0.0.1:9050');
  });

  it('uses BigQuery itself without the variable', () => {
    delete process.env.BIGQUERY_EMULATOR_HOST;
    const client = createBigQueryClient(undefined, {});
    expect(client.baseUrl).toBe('https://bigquery.googleapis.com/bigquery/v2');
  });

  it('aims JSON calls and uploads at sinks.bigquery.apiEndpoint, with credentials', () => {
    delete process.env.BIGQUERY_EMULATOR_HOST;
    const client = createBigQueryClient('demo', {}, { apiEndpoint: 'https://bigquery.europe-west3.rep.googleapis.com' });
    expect(client.baseUrl).toBe('https://bigquery.europe-west3.rep.googleapis.com/bigquery/v2');
    expect(client.apiEndpoint).toBe('https://bigquery.europe-west3.rep.googleapis.com');
  });

  it('lets BIGQUERY_EMULATOR_HOST win over the configured endpoint (local work)', () => {
    process.env.BIGQUERY_EMULATOR_HOST = 'http://127.0.0.1:9050';
    const client = createBigQueryClient('demo', process.env, { apiEndpoint: 'https://bigquery.europe-west3.rep.googleapis.com' });
    expect(client.baseUrl).toBe('http://127.0.0.1:9050/bigquery/v2');
  });
});
