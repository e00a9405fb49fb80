import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/config-error.js';
import { parseCurlWords } from '../../src/config/import-curl.js';
import { chooseJobName, jobNameFrom, renderImportedJob } from '../../src/config/import-job.js';
import { importRequest, redactCredentials, type ImportedRequest } from '../../src/config/import-request.js';
import { ShellWordsError, splitShellWords } from '../../src/config/import-shell-words.js';
import { exportQuerySchema } from '../../src/config/job-schema.js';
import { parseYamlText } from '../../src/config/read-yaml.js';
import { jobSchema } from '../../src/config/job-schema.js';
import { exportUrl } from '../../src/source/export-endpoint/export-client.js';
import { shellQuote } from '../support/shell-quote.js';

const TOKEN = 'eyJhbGciOiJSUzI1NiJ9.c2VjcmV0LXRva2Vu.sig';
const HOST = 'https://acme.incidents.example.com';
const TILE = '65f0a1c2d3e4f5a6b7c8d9ff';

const QUERY = {
  items: [
    {
      header: 'Created',
      formula: '[incident.created]',
      dataType: 'datetime',
      hidden: true,
      filters: [{ operator: 'rw', values: ['6', 'months', '0', 'months'], beforeAggregate: true }],
    },
    {
      header: 'Incident type',
      formula: '[incident.type]',
      dataType: 'text',
      grouped: true,
      order: 'asc',
      orderSequence: 0,
      hidden: false,
      ref: 'type',
      filters: [],
    },
    { header: 'Label', formula: "concat([ref:type], ' / ', 'it''s')", dataType: 'text', hidden: false, filters: [] },
    { header: 'Incidents', formula: '[incident.number]', dataType: 'number', aggregate: 'count', hidden: false, filters: [] },
  ],
  options: { pageNumber: 0, itemsPerPage: 50, ignoreRepeatedRows: false },
};

function curlCommand(body: string = JSON.stringify(QUERY), url = `${HOST}/api/v1/topics/incident/execute?tileId=${TILE}`): string {
  return [
    `curl -X POST ${shellQuote(url)} \\`,
    `  -H 'Authorization: Bearer ${TOKEN}' \\`,
    "  -H 'content-type: application/json' \\",
    `  --data-raw ${shellQuote(body)}`,
  ].join('\n');
}

function problemsOf(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    expect(error).toMatchObject({ code: 'config_invalid' });
    expect((error as ConfigError).exitCode).toBe(2);
    return (error as ConfigError).message;
  }
  throw new Error('expected a ConfigError');
}

describe('splitShellWords', () => {
  it('splits on blanks and keeps single-quoted text literally', () => {
    expect(splitShellWords(`curl  -H 'a  b' '$HOME \\n'`)).toEqual(['curl', '-H', 'a  b', '$HOME \\n']);
  });

  it('joins backslash-newline continuations, also with CRLF line ends', () => {
    expect(splitShellWords('curl \\\n  -X POST \\\r\n  url')).toEqual(['curl', '-X', 'POST', 'url']);
    expect(splitShellWords('ab\\\ncd')).toEqual(['abcd']);
  });

  it('decodes only $, `, ", \\ and newline escapes inside double quotes, and expands nothing', () => {
    expect(splitShellWords('"a \\"b\\" \\$X \\\\ \\n $TOKEN $(id)"')).toEqual(['a "b" $X \\ \\n $TOKEN $(id)']);
  });

  it("decodes $'…' ANSI-C quotes: named, octal, hex and unicode escapes and \\'", () => {
    expect(splitShellWords("$'it\\'s\\n\\t\\x41\\101\\u00e9\\U0001F600\\cA\\q'")).toEqual(["it's\n\tAAé😀\x01\\q"]);
  });

  it('concatenates adjacent quoted and unquoted parts into one word', () => {
    expect(splitShellWords(`a'b'"c"$'d'\\ e`)).toEqual(['abcd e']);
    expect(splitShellWords(`'{"x":"it'\\''s"}'`)).toEqual([`{"x":"it's"}`]);
  });

  it('keeps empty quoted words and skips comments', () => {
    expect(splitShellWords(`curl '' "" # a comment 'with quote\nnext#not-a-comment`)).toEqual(['curl', '', '', 'next#not-a-comment']);
  });

  it.each([
    ["curl 'open", /unterminated single quote/],
    ['curl "open', /unterminated double quote/],
    ["curl $'open", /unterminated \$'…' quote/],
    ['curl url \\', /ends with a backslash/],
    ['curl url | jq .', /unquoted "\|"/],
    ['curl url?a=1&b=2', /unquoted "&"/],
    ['curl url > out.json', /unquoted ">"/],
  ])('refuses %j', (text, message) => {
    expect(() => splitShellWords(text)).toThrow(ShellWordsError);
    expect(() => splitShellWords(text)).toThrow(message);
  });

  it('reports the line of the problem', () => {
    try {
      splitShellWords("curl \\\n  -H 'x\n\n");
      expect.unreachable();
    } catch (error) {
      expect((error as ShellWordsError).line).toBe(2);
    }
  });
});

describe('parseCurlWords', () => {
  it('reads -X, -H, --data-raw and the URL', () => {
    const request = parseCurlWords(['curl', '-X', 'POST', 'https://h/x', '-H', 'A: b', '--data-raw', '{}']);
    expect(request).toMatchObject({ url: 'https://h/x', method: 'POST', headers: [{ name: 'A', value: 'b' }], body: '{}' });
  });

  it('reads long forms, --url, attached short values and flag clusters', () => {
    const request = parseCurlWords([
      'curl',
      '-sSL',
      '-XPOST',
      '--url',
      'https://h/x',
      '--header',
      'content-type: application/json',
      '-d{"a":1}',
      '--compressed',
    ]);
    expect(request).toMatchObject({ url: 'https://h/x', method: 'POST', body: '{"a":1}' });
  });

  it.each(['-d', '--data', '--data-binary', '--data-raw', '--json'])('takes the body from %s and implies POST', (option) => {
    expect(parseCurlWords(['curl', 'https://h/x', option, '{"a":1}'])).toMatchObject({ method: 'POST', body: '{"a":1}' });
  });

  it('notes credential options without keeping their values', () => {
    const request = parseCurlWords(['curl', 'https://h/x', '-u', 'me:pw', '--oauth2-bearer', 'tok', '-d', '{}']);
    expect(request.credentialOptions).toEqual(['-u', '--oauth2-bearer']);
    expect(JSON.stringify(request)).not.toMatch(/pw|tok\b/);
  });

  it.each([
    [['curl', 'https://h/x', '-d', '{}', '-d', '{}'], /2 data options/],
    [['curl', 'https://h/x', 'https://h/y'], /more than one URL/],
    [['curl', 'https://h/x', '-d', '@body.json'], /reads the body from a file/],
    [['curl', 'https://h/x', '--frobnicate', '-d', '{}'], /unknown curl option --frobnicate/],
    [['curl', 'https://h/x', '-G', '-d', '{}'], /-G is not supported/],
    [['curl', 'https://h/x', '-F', 'a=b'], /-F is not supported/],
    [['curl', 'https://h/x', '-H'], /needs a value/],
  ])('refuses %j', (words, message) => {
    expect(() => parseCurlWords(words)).toThrow(message);
  });

  it('never echoes the value of an unknown --name=value option', () => {
    expect(() => parseCurlWords(['curl', '--auth=Bearer abc'])).toThrow(/--auth=…/);
    expect(() => parseCurlWords(['curl', '--auth=Bearer abc'])).not.toThrow(/abc/);
  });
});

describe('importRequest', () => {
  it('imports the curl command the reporting module shows', () => {
    const imported = importRequest(curlCommand(), { source: 'request.txt' });
    expect(imported).toMatchObject({ baseUrl: HOST, tileParam: 'tileId', tileId: TILE, query: QUERY, otherParams: [] });
    expect(imported.droppedCredentials).toEqual(['Authorization header']);
    expect(JSON.stringify(imported)).not.toContain(TOKEN);
  });

  it("imports a curl command written with double quotes, $'…' and -d", () => {
    const body = JSON.stringify(QUERY).replaceAll('\\', '\\\\').replaceAll("'", "\\'");
    const text = `$ curl "${HOST}/api/v1/topics/incident/execute?tileId=${TILE}" -H "Authorization: Bearer $ACCESS_TOKEN" -d $'${body}'`;
    expect(importRequest(text, { source: 'stdin' })).toMatchObject({ tileId: TILE, query: QUERY });
  });

  it('imports the URL on the first line and the JSON body after it, with header lines between', () => {
    const text = `POST ${HOST}/api/v1/topics/incident/execute?id=${TILE}\nAuthorization: Bearer ${TOKEN}\ncontent-type: application/json; charset=utf-8\n\n${JSON.stringify(QUERY, null, 2)}\n`;
    const imported = importRequest(text, { source: 'stdin' });
    expect(imported).toMatchObject({ tileParam: 'id', tileId: TILE, query: QUERY });
    expect(imported.droppedCredentials).toEqual(['Authorization header']);
  });

  it('keeps a path prefix of the tenant in baseUrl, so exportUrl rebuilds the same URL', () => {
    const url = `${HOST}/incidents/api/v1/topics/incident/execute?tileId=${TILE}`;
    const imported = importRequest(`${url}\n${JSON.stringify(QUERY)}`, { source: 'stdin' });
    expect(imported.baseUrl).toBe(`${HOST}/incidents`);
    expect(exportUrl(imported.baseUrl, imported.tileParam, imported.tileId)).toBe(url);
  });

  it('detects the tile parameter among known other items, and redacts a token in the query string', () => {
    const url = `${HOST}/api/v1/topics/incident/execute?format=json&tile=${TILE}&access_token=${TOKEN}`;
    const imported = importRequest(`${url}\n${JSON.stringify(QUERY)}`, { source: 'stdin' });
    expect(imported.tileParam).toBe('tile');
    expect(imported.otherParams).toEqual([
      { name: 'format', value: 'json' },
      { name: 'access_token', value: '<redacted>' },
    ]);
    expect(imported.droppedCredentials).toContain('access_token query-string item');
    expect(JSON.stringify(imported)).not.toContain(TOKEN);
  });

  it('requires --tile-param when several items could carry the tile id, and accepts it', () => {
    const text = `${HOST}/api/v1/topics/incident/execute?id=${TILE}&view=7\n${JSON.stringify(QUERY)}`;
    expect(problemsOf(() => importRequest(text, { source: 'stdin' }))).toMatch(
      /cannot tell which query-string item carries the tile id: id, view; name it with --tile-param/,
    );
    expect(importRequest(text, { source: 'stdin', tileParam: 'id' })).toMatchObject({
      tileParam: 'id',
      tileId: TILE,
      otherParams: [{ name: 'view', value: '7' }],
    });
    expect(problemsOf(() => importRequest(text, { source: 'stdin', tileParam: 'tileId' }))).toMatch(
      /--tile-param tileId: the URL has no such query-string item \(it has id, view\)/,
    );
  });

  it('strips user:password from the URL and reports it as dropped', () => {
    const imported = importRequest(`https://me:pw@acme.example.com/api/v1/topics/incident/execute?tileId=${TILE}\n${JSON.stringify(QUERY)}`, {
      source: 'stdin',
    });
    expect(imported.url).toBe(`https://acme.example.com/api/v1/topics/incident/execute?tileId=${TILE}`);
    expect(imported.baseUrl).toBe('https://acme.example.com');
    expect(imported.droppedCredentials).toContain('user:password in the URL');
  });

  const url = `${HOST}/api/v1/topics/incident/execute?tileId=${TILE}`;
  const body = JSON.stringify(QUERY);
  it.each([
    ['an empty input', '  \n', /the request is empty/],
    ['no URL (only a body)', body, /url: no URL/],
    ['no body (curl)', `curl -X POST '${url}' -H 'Authorization: Bearer ${TOKEN}'`, /body: no body/],
    ['no body (URL form)', `${url}\n`, /body: no body/],
    ['a body that is not JSON', `${url}\n{items: [}`, /body: not JSON \(a mistake at line 1 column 2 of the body; the body is not shown\)/],
    [
      'a body that is not an export query',
      `${url}\n{"items": [{"header": "x"}], "extra": 1}`,
      /body.items\[0\].formula: not an export query[\s\S]*body.extra: not an export query/,
    ],
    ['an empty items list', `${url}\n{"items": [], "options": {}}`, /body.items: not an export query \(items, options\): a query needs at least one item/],
    [
      'no tile id in the query string',
      `${HOST}/api/v1/topics/incident/execute\n${body}`,
      /url query string: no tile id in the query string \(it has no items\)/,
    ],
    ['only known non-tile items', `${HOST}/api/v1/topics/incident/execute?format=json\n${body}`, /no tile id in the query string \(it has format\)/],
    ['an empty tile id', `${HOST}/api/v1/topics/incident/execute?tileId=\n${body}`, /url query string tileId: the tile id is empty/],
    ['a placeholder tile id', `${HOST}/api/v1/topics/incident/execute?tileId=<TILE_ID>\n${body}`, /the tile id is a placeholder/],
    ['the wrong path', `${HOST}/api/v1/incidents?tileId=${TILE}\n${body}`, /url path = "\/api\/v1\/incidents": not the tile export endpoint/],
    ['the wrong method', `curl -X GET '${url}' -d ${shellQuote(body)}`, /method = "GET": the export endpoint takes POST/],
    ['a relative URL', `/api/v1/topics/incident/execute?tileId=${TILE}\n${body}`, /url: not an absolute URL/],
    [
      'a form content type',
      `curl '${url}' -H 'content-type: application/x-www-form-urlencoded' -d ${shellQuote(body)}`,
      /content-type header: the export endpoint takes application\/json \(the value is not shown\)/,
    ],
    ['an unterminated quote', `curl '${url}' -d '${body}`, /curl command: unterminated single quote/],
    ['a cut-off continuation', `curl '${url}' \\`, /was the paste cut off/],
  ])('refuses %s (exit 2, naming what is wrong)', (_, text, message) => {
    const problems = problemsOf(() => importRequest(text, { source: 'request.txt' }));
    expect(problems).toMatch(message);
    expect(problems).toMatch(/^request\.txt/);
    expect(problems).not.toContain(TOKEN);
  });

  it('reports the URL and the body problems together', () => {
    const problems = problemsOf(() => importRequest(`curl -X PUT 'https://h/api/v1/nope' -H 'Authorization: Bearer ${TOKEN}' -d 'nope'`, { source: 'stdin' }));
    expect(problems.split('\n')).toHaveLength(4); // path, tile id, method, body
    expect(problems).not.toContain(TOKEN);
  });
});

describe('redactCredentials', () => {
  it('removes bearer tokens, basic credentials, query-string tokens and URL passwords', () => {
    expect(redactCredentials(`Authorization: Bearer ${TOKEN}`)).toBe('Authorization: Bearer <redacted>');
    expect(redactCredentials('Basic dXNlcjpwdw==')).toBe('Basic <redacted>');
    expect(redactCredentials('https://h/x?a=1&access_token=abc&b=2')).toBe('https://h/x?a=1&access_token=<redacted>&b=2');
    expect(redactCredentials('https://me:pw@h/x')).toBe('https://<redacted>@h/x');
  });
});

describe('jobNameFrom and chooseJobName', () => {
  const imported = (items: Array<{ header: string; hidden?: boolean }>, tileId = TILE): ImportedRequest => {
    const query = { items: items.map((item) => ({ ...item, formula: '[incident.number]', dataType: 'number' })) };
    return { tileId, parsedQuery: exportQuerySchema.parse(query), query } as unknown as ImportedRequest;
  };

  it('turns text into a job name', () => {
    expect(jobNameFrom('Incident type')).toBe('incident_type');
    expect(jobNameFrom('Résolu — SEV0/1 %')).toBe('resolu_sev0_1');
    expect(jobNameFrom(TILE)).toBe(`tile_${TILE}`);
    expect(jobNameFrom('!!!')).toBeUndefined();
    expect(jobNameFrom('x'.repeat(80))).toHaveLength(42);
  });

  it('uses --name, else the first visible header, else the tile id', () => {
    expect(chooseJobName(imported([{ header: 'Created', hidden: true }, { header: 'Incident type' }]), undefined)).toBe('incident_type');
    expect(chooseJobName(imported([{ header: '!!!' }]), undefined)).toBe(`tile_${TILE}`);
    expect(chooseJobName(imported([{ header: 'x' }]), 'my_job')).toBe('my_job');
    expect(problemsOf(() => chooseJobName(imported([{ header: 'x' }]), 'My-Job'))).toMatch(/--name = "My-Job": lower-case letters/);
  });
});

describe('renderImportedJob', () => {
  it('writes a job that validates, with the query exactly as given', () => {
    const imported = importRequest(curlCommand(), { source: 'stdin' });
    const text = renderImportedJob(imported, 'incident_type');
    expect(text.split('\n')[0]).toBe('# yaml-language-server: $schema=../schema/job.schema.json');
    const job = parseYamlText(text, 'job.yaml', jobSchema);
    expect(job).toMatchObject({ name: 'incident_type', tile: TILE, sinks: [{ type: 'csv' }] });
    expect(job.schedule).toBeUndefined();
    expect(job.query).toEqual(exportQuerySchema.parse(QUERY));
    expect(text).toContain("'it''s'"); // the formula's quotes survived shell and YAML quoting
    expect(text).not.toContain(TOKEN);
  });

  it('keeps a numeric-looking tile id a string', () => {
    const imported = importRequest(`${HOST}/api/v1/topics/incident/execute?tileId=000123\n${JSON.stringify(QUERY)}`, { source: 'stdin' });
    expect(parseYamlText(renderImportedJob(imported, 'x'), 'job.yaml', jobSchema).tile).toBe('000123');
  });
});
