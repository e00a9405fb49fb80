import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import { listFiles, runCli } from '../support/cli-harness.js';
import { exportPage, startScriptedSource, type ScriptedAnswer } from '../support/scripted-source.js';
import { tempDirEachTest } from '../support/temp-dir-hooks.js';

const QUERY = {
  items: [
    { header: 'Type', formula: '[incident.type]', dataType: 'text', grouped: true, filters: [] },
    { header: 'Incidents', formula: '[incident.number]', dataType: 'number', aggregate: 'count', filters: [] },
  ],
  options: { pageNumber: 0, itemsPerPage: 50 },
};
const JOB = { name: 'by_type', tile: 't-1', query: QUERY, sinks: [{ type: 'csv' }] };
// Not a word: the secret is redacted by value from all output, so a common word would blank out messages.
const ENV = { TEST_CLIENT_ID: 'id', TEST_CLIENT_SECRET: 'x9-test-client-secret' };

const temp = tempDirEachTest();

async function workspace(baseUrl: string, job: unknown = JOB, envText?: string) {
  const out = path.join(temp.path, 'out');
  const jobs = path.join(temp.path, 'jobs');
  await mkdir(jobs, { recursive: true });
  const config = path.join(temp.path, 'env.yaml');
  await writeFile(
    config,
    envText ??
      stringify({
        source: { baseUrl, authUrl: baseUrl, clientId: '${TEST_CLIENT_ID}', clientSecret: '${TEST_CLIENT_SECRET}', requestTimeoutMs: 2000 },
        sinks: { csv: { directory: out } },
      }),
  );
  await writeFile(path.join(jobs, 'job.yaml'), typeof job === 'string' ? job : stringify(job));
  return { config, jobs, out };
}

const json = (value: unknown, status = 200): ScriptedAnswer => ({ status, body: JSON.stringify(value) });

describe('a malformed API response', () => {
  const cases: Array<{ name: string; page?: (n: number) => ScriptedAnswer; token?: ScriptedAnswer; says: RegExp }> = [
    {
      name: 'a page that is HTML, not JSON',
      page: () => ({ status: 200, body: '<html>maintenance</html>', contentType: 'text/html' }),
      says: /page 0: unusable export response: body is not JSON/,
    },
    { name: 'ok: false', page: () => json({ ok: false }), says: /page 0: unusable export response: ok: /i },
    { name: 'no navigation', page: () => json({ ok: true, result: { headers: [], dataTypes: [], rows: [] } }), says: /page 0: .*result\.navigation/ },
    {
      name: 'rows that are not an array',
      page: () => json(exportPage([]).result && { ok: true, result: { ...exportPage([]).result, rows: 'none' } }),
      says: /page 0: .*result\.rows/,
    },
    { name: 'a row of the wrong length', page: () => json(exportPage([['Outage', 3, 'extra']])), says: /page 0: .*row 0 has 3 values for 2 headers/ },
    { name: 'a row that is a string', page: () => json(exportPage(['Outage,3'])), says: /page 0: .*row 0 is string/ },
    {
      name: 'an object row with a key that is not a header',
      page: () => json(exportPage([{ Type: 'Outage', Count: 3 }])),
      says: /page 0: .*row 0 has key "Count" that is not a header/,
    },
    {
      name: 'headers and dataTypes of different lengths',
      page: () => json(exportPage([['Outage', 3]], {}, { dataTypes: ['text'] })),
      says: /page 0: check "headers-dataTypes-aligned"/,
    },
    {
      name: 'rowsCount that disagrees with the rows',
      page: () => json(exportPage([['Outage', 3]], { rowsCount: 2 })),
      says: /page 0: check "rowsCount" failed/,
    },
    {
      name: 'fewer rows than totalRows',
      page: () => json(exportPage([['Outage', 3]], { totalRows: 5 })),
      says: /export_inconsistent: .*check "totalRows-sum" failed: read 1 row in total but totalRows is 5/,
    },
    { name: 'hasNext with an empty page', page: () => json(exportPage([], { hasNext: true, totalRows: 4 })), says: /page 0: check "progress" failed/ },
    {
      name: 'a number column holding text',
      page: () =>
        json(
          exportPage([
            ['Outage', 3],
            ['Security', 'many'],
          ]),
        ),
      says: /value_invalid: .*page 0.*row 1.*Incidents.*"many"/,
    },
    {
      name: 'a Regular error object',
      page: () => json({ error: { status: 400, message: 'invalid id' } }, 400),
      says: /page 0: export for tile \S+ \(sent as query item tileId\) failed with HTTP 400: invalid id/,
    },
    {
      name: 'a plain-text 404',
      page: () => ({ status: 404, body: 'Not Found', contentType: 'text/plain' }),
      says: /page 0: export failed with HTTP 404: Not Found/,
    },
    {
      name: 'a token answer without access_token',
      token: json({ token_type: 'Bearer' }),
      page: () => json(exportPage([])),
      says: /auth_response_invalid: .*access_token/,
    },
    {
      name: 'a token of another type',
      token: json({ access_token: 'x', token_type: 'MAC' }),
      page: () => json(exportPage([])),
      says: /auth_response_invalid: .*token_type must be Bearer/,
    },
    {
      name: 'a token endpoint answering an HTML 502 every time',
      token: { status: 502, body: '<html>bad gateway</html>', contentType: 'text/html' },
      page: () => json(exportPage([])),
      says: /source_server_error: .*token request: the server failed with HTTP 502: <html>bad gateway/,
    },
  ];

  it.each(cases)('$name: exit 1, names the page or field, writes nothing', async ({ page, token, says }) => {
    const source = await startScriptedSource({ page: page!, ...(token ? { token } : {}) });
    try {
      const ws = await workspace(source.url);
      const result = await runCli(['run', '--config', ws.config, '--jobs', ws.jobs], { env: ENV });
      expect(result.stderr).toMatch(says);
      expect(result.exitCode).toBe(1);
      expect(await listFiles(ws.out)).toEqual([]);
    } finally {
      await source.close();
    }
  });
});

describe('a malformed configuration or command line', () => {
  const BASE = 'http://127.0.0.1:9';
  const cases: Array<{ name: string; args?: string[]; job?: unknown; env?: Record<string, string>; envText?: string; says: RegExp; never?: string }> = [
    {
      name: 'a literal secret in YAML',
      envText: `source:\n  baseUrl: ${BASE}\n  authUrl: ${BASE}\n  clientId: id\n  clientSecret: hunter2\n`,
      says: /env\.yaml:5: source\.clientSecret: .*literal secrets? (are|is) refused/,
      never: 'hunter2',
    },
    {
      name: 'a missing secret variable',
      env: { TEST_CLIENT_ID: 'id' },
      says: /source\.clientSecret = "\$\{TEST_CLIENT_SECRET\}": environment variable TEST_CLIENT_SECRET is not set/,
    },
    { name: 'an unknown job field', job: { ...JOB, retries: 3 }, says: /job\.yaml:\d+: retries: Unrecognized key/ },
    { name: 'a job without sinks', job: { ...JOB, sinks: [] }, says: /job\.yaml:\d+: sinks = \[\]: a job needs at least one sink/ },
    {
      name: 'a CSV path with an unknown placeholder',
      job: { ...JOB, sinks: [{ type: 'csv', path: '{nope}.csv' }] },
      says: /sinks\[0\]\.path = "\{nope\}\.csv"/,
    },
    { name: 'a BigQuery sink with no dataset anywhere', job: { ...JOB, sinks: [{ type: 'bigquery' }] }, says: /sinks\[0\]\.dataset: no dataset/ },
    { name: 'an unknown --tile', args: ['--tile', 'nope'], says: /--job = "nope": no such job; known: by_type/ },
    { name: 'an unknown flag', args: ['--frobnicate'], says: /run: Unknown option '--frobnicate'/ },
    { name: 'YAML that does not parse', job: 'name: by_type\nquery: [\n', says: /job\.yaml:\d+: YAML syntax/ },
    {
      name: 'an insecure non-loopback source',
      envText: `source:\n  baseUrl: http://incidents.example.com\n  authUrl: https://auth.example.com\n  clientId: id\n  clientSecret: \${TEST_CLIENT_SECRET}\n`,
      says: /source\.baseUrl = "http:\/\/incidents\.example\.com": http:\/\/ is refused/,
    },
  ];

  it.each(cases)('$name: exit 2, names file and field, runs and writes nothing', async ({ args = [], job, env = ENV, envText, says, never }) => {
    const ws = await workspace(BASE, job ?? JOB, envText);
    const result = await runCli(['run', '--config', ws.config, '--jobs', ws.jobs, ...args], { env });
    expect(result.stderr).toMatch(says);
    if (never !== undefined) expect(result.stdout + result.stderr).not.toContain(never);
    expect(result.exitCode).toBe(2);
    expect(result.logs).toEqual([]);
    expect(await listFiles(ws.out)).toEqual([]);
  });

  it('an unknown command: exit 2 with the list of commands', async () => {
    const result = await runCli(['export'], { env: ENV });
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toMatch(/unknown command "export"; commands: run, /);
  });
});
