import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { beforeEach, describe, expect, it } from 'vitest';
import { exportQuerySchema } from '../../src/config/job-schema.js';
import { loadJob, loadJobs } from '../../src/config/load-config.js';
import { listFiles, runCli, refusalCode } from '../support/cli-harness.js';
import { shellQuote } from '../support/shell-quote.js';
import { tempDirEachTest } from '../support/temp-dir-hooks.js';

const TOKEN = 'eyJhbGciOiJSUzI1NiJ9.c2VjcmV0LXRva2Vu.sig';
const TILE = '65f0a1c2d3e4f5a6b7c8d9aa';
const URL_TILE_ID = `https://acme.incidents.example.com/api/v1/topics/incident/execute?tileId=${TILE}`;

// The body as the reporting module shows it: one hidden filter column first, quotes in a formula.
const BODY = {
  items: [
    {
      header: 'Created',
      formula: '[incident.created]',
      dataType: 'datetime',
      hidden: true,
      filters: [{ operator: 'rw', values: ['30', 'days', '0', 'days'], beforeAggregate: true }],
    },
    {
      header: 'Severity',
      formula: '[incident.severity_label]',
      dataType: 'text',
      grouped: true,
      order: 'asc',
      orderSequence: 0,
      hidden: false,
      ref: 'sev',
      filters: [],
    },
    { header: 'Label', formula: "concat('SEV ', [ref:sev])", dataType: 'text', hidden: false, filters: [] },
    { header: 'Incidents', formula: '[incident.number]', dataType: 'number', aggregate: 'count', hidden: false, filters: [] },
  ],
  options: { pageNumber: 0, itemsPerPage: 50, ignoreRepeatedRows: false },
};

const CURL = [
  `curl -X POST ${shellQuote(URL_TILE_ID)} \\`,
  `  -H 'Authorization: Bearer ${TOKEN}' \\`,
  "  -H 'content-type: application/json' \\",
  `  --data-raw ${shellQuote(JSON.stringify(BODY))}`,
  '',
].join('\n');

function environmentYaml(baseUrl: string, tileParam: string): string {
  return `source:
  baseUrl: ${baseUrl}
  authUrl: https://auth.incidents.example.com
  clientId: \${TILEHOUSE_CLIENT_ID}
  clientSecret: \${TILEHOUSE_CLIENT_SECRET}
  tileParam: ${tileParam}
`;
}

const temp = tempDirEachTest();
let jobsDir: string;
let configFile: string;
beforeEach(async () => {
  jobsDir = path.join(temp.path, 'jobs');
  configFile = path.join(temp.path, 'env.yaml');
  await writeFile(configFile, environmentYaml('https://acme.incidents.example.com', 'tileId'));
});

async function init(args: string[], stdin?: string) {
  const io = stdin === undefined ? {} : { stdin: Readable.from([Buffer.from(stdin)]) };
  return runCli(['init', ...args], { env: {}, io });
}

async function writeRequest(text: string): Promise<string> {
  const file = path.join(temp.path, 'request.txt');
  await writeFile(file, text);
  return file;
}

describe('tilehouse init --from-request', () => {
  it('writes a job from the curl command that loads back with the query equal to the body', async () => {
    const request = await writeRequest(CURL);
    const result = await init(['--from-request', request, '--jobs', jobsDir, '--config', configFile]);
    expect(result.stderr).toBe('');
    expect(result.exitCode).toBe(0);

    // Named after the first visible column (Created is hidden).
    const file = path.join(jobsDir, 'severity.yaml');
    const job = await loadJob(file);
    expect(job).toMatchObject({ name: 'severity', tile: TILE, sinks: [{ type: 'csv' }] });
    expect(job.schedule).toBeUndefined();
    expect(job.query).toEqual(BODY);
    expect(job.query).toEqual(exportQuerySchema.parse(BODY));
    expect(await loadJobs(jobsDir)).toHaveLength(1);

    const text = await readFile(file, 'utf8');
    expect(text.startsWith('# yaml-language-server: $schema=../schema/job.schema.json\n')).toBe(true);
    expect(result.stdout).toContain(`wrote ${file}: tile ${TILE}, 4 query items (1 hidden)`);
    expect(result.stdout).toMatch(/still to set in .*severity\.yaml:\n {2}schedule .*\n {2}sinks /);
    expect(result.stdout).toContain('sinks             replace the placeholder csv sink: one or more of type csv, bigquery, parquet');
    expect(result.stdout).toContain('source.baseUrl and source.tileParam already match the request');
    expect(result.stdout).toContain('not copied: Authorization header');
    // The suggested command checks the job against the config it was compared with.
    expect(result.stdout.split('\n').at(-2)).toBe(`check it with: tilehouse validate --config ${configFile} --jobs ${jobsDir}`);
    for (const output of [text, result.stdout, result.stderr]) expect(output).not.toContain(TOKEN);
  });

  it('reads the URL and the JSON body from standard input, and names what the environment config lacks', async () => {
    await writeFile(configFile, environmentYaml('http://127.0.0.1:8787', 'tileId'));
    const url = `https://acme.incidents.example.com/reports/api/v1/topics/incident/execute?id=${TILE}&format=json`;
    const result = await init(
      ['--from-request', '-', '--name', 'sev_breakdown', '--jobs', jobsDir, '--config', configFile],
      `${url}\n${JSON.stringify(BODY, null, 2)}\n`,
    );
    expect(result.stderr).toBe('');
    expect(result.exitCode).toBe(0);
    const job = await loadJob(path.join(jobsDir, 'sev_breakdown.yaml'));
    expect(job).toMatchObject({ name: 'sev_breakdown', tile: TILE });
    expect(job.query).toEqual(BODY);
    expect(result.stdout).toContain(`still to set in ${configFile} (the request differs from the environment config):`);
    expect(result.stdout).toMatch(/source\.baseUrl {4}https:\/\/acme\.incidents\.example\.com\/reports {3}\(now http:\/\/127\.0\.0\.1:8787/);
    expect(result.stdout).toMatch(/source\.tileParam {2}id {3}\(now tileId/);
    expect(result.stdout).toContain('note: the URL also had format=json; tilehouse sends only ?id=<tile id>');
  });

  it('compares with $TILEHOUSE_CONFIG and writes to $TILEHOUSE_JOBS when no flags name them', async () => {
    const request = await writeRequest(CURL);
    const result = await runCli(['init', '--from-request', request], { env: { TILEHOUSE_JOBS: jobsDir, TILEHOUSE_CONFIG: configFile } });
    expect(result.exitCode).toBe(0);
    expect(await listFiles(jobsDir)).toEqual(['severity.yaml']);
  });

  it('refuses to overwrite an existing job file unless --force is given', async () => {
    const request = await writeRequest(CURL);
    const args = ['--from-request', request, '--jobs', jobsDir, '--config', configFile];
    await mkdir(jobsDir, { recursive: true });
    await writeFile(path.join(jobsDir, 'severity.yaml'), 'mine\n');

    const refused = await init(args);
    expect(refused.exitCode).toBe(2);
    expect(refusalCode(refused)).toBe('config_invalid');
    expect(refused.stderr).toMatch(/severity\.yaml: already exists; pass --force/);
    expect(await readFile(path.join(jobsDir, 'severity.yaml'), 'utf8')).toBe('mine\n');

    const forced = await init([...args, '--force']);
    expect(forced.exitCode).toBe(0);
    expect((await loadJob(path.join(jobsDir, 'severity.yaml'))).query).toEqual(BODY);
    expect(await listFiles(jobsDir)).toEqual(['severity.yaml']);
  });

  it('takes the tile parameter from --tile-param when the URL has several candidates', async () => {
    const request = await writeRequest(`${URL_TILE_ID}&view=3\n${JSON.stringify(BODY)}`);
    const result = await init(['--from-request', request, '--tile-param', 'tileId', '--jobs', jobsDir, '--config', configFile]);
    expect(result.exitCode).toBe(0);
    expect((await loadJob(path.join(jobsDir, 'severity.yaml'))).tile).toBe(TILE);
    expect(result.stdout).toContain('note: the URL also had view=3; tilehouse sends only ?tileId=<tile id>');
  });

  it('refuses a name another job file already uses, and notes a job of the same tile', async () => {
    await mkdir(jobsDir, { recursive: true });
    await writeFile(path.join(jobsDir, 'other.yaml'), `name: severity\ntile: ${TILE}\n`);
    const request = await writeRequest(CURL);
    const refused = await init(['--from-request', request, '--jobs', jobsDir, '--config', configFile]);
    expect(refused.exitCode).toBe(2);
    expect(refusalCode(refused)).toBe('config_invalid');
    expect(refused.stderr).toMatch(/other\.yaml: name = "severity": this job already has the name/);

    const renamed = await init(['--from-request', request, '--jobs', jobsDir, '--config', configFile, '--name', 'severity_2']);
    expect(renamed.exitCode).toBe(0);
    expect(renamed.stdout).toContain(`note: ${path.join(jobsDir, 'other.yaml')} exports the same tile`);
  });

  const malformed: Array<[string, string, RegExp]> = [
    ['no URL', JSON.stringify(BODY), /url: no URL/],
    ['no body', `curl -X POST '${URL_TILE_ID}' -H 'Authorization: Bearer ${TOKEN}'`, /body: no body/],
    ['a body that is not JSON', `${URL_TILE_ID}\n{"items": [`, /body: not JSON \(.*; the body is not shown\)/],
    ['a body that is not an export query', `${URL_TILE_ID}\n{"rows": []}`, /body\.items: not an export query/],
    ['no tile id in the query string', `${URL_TILE_ID.replace(/\?.*/, '')}\n${JSON.stringify(BODY)}`, /no tile id in the query string/],
    [
      'the wrong path',
      `${URL_TILE_ID.replace('/topics/incident/execute', '/incidents')}\n${JSON.stringify(BODY)}`,
      /url path = "\/api\/v1\/incidents": not the tile export endpoint/,
    ],
    [
      'two candidate tile parameters',
      `${URL_TILE_ID}&view=3\n${JSON.stringify(BODY)}`,
      /cannot tell which query-string item carries the tile id: tileId, view; name it with --tile-param/,
    ],
    ['a pipeline', `${CURL.trim()} | jq .`, /unquoted "\|"/],
    ['a cut-off paste', CURL.split('\n').slice(0, 2).join('\n'), /was the paste cut off/],
  ];
  it.each(malformed)('exits 2 and writes nothing for %s', async (_, text, message) => {
    const request = await writeRequest(text);
    const result = await init(['--from-request', request, '--jobs', jobsDir, '--config', configFile]);
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toMatch(/^tilehouse: config_invalid:/);
    expect(result.stderr).toMatch(message);
    expect(result.stderr + result.stdout).not.toContain(TOKEN);
    expect(await listFiles(jobsDir)).toEqual([]);
  });

  it.each([
    [[], /--from-request FILE\|- is required/, 'usage_invalid'],
    [['--from-request'], /init: .*--from-request/, 'usage_invalid'],
    [['--from-request', '/nonexistent/request.txt'], /\/nonexistent\/request\.txt: --from-request: cannot read the file \(ENOENT\)/, 'config_invalid'],
    [['--from-request', '-', '--name', 'Bad-Name'], /--name = "Bad-Name"/, 'config_invalid'],
    [['--from-request', '-', '--config', '/nonexistent/env.yaml'], /\/nonexistent\/env\.yaml: cannot read file/, 'config_invalid'],
  ])('exits 2 and writes nothing for the arguments %j', async (args, message, code) => {
    const result = await runCli(['init', ...args, '--jobs', jobsDir], { env: {}, io: { stdin: Readable.from([Buffer.from(CURL)]) } });
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toMatch(message);
    expect(await listFiles(jobsDir)).toEqual([]);
    expect(refusalCode(result)).toBe(code);
  });

  it('prints its help', async () => {
    const result = await init(['--help']);
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toContain('Usage: tilehouse init --from-request FILE|- [--name NAME] [--jobs DIR] [--config FILE] [--tile-param NAME] [--force]');
  });
});
