import { randomInt } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { stringify } from 'yaml';
import { refusalCode, runCli, type CliResult } from '../support/cli-harness.js';
import { detailCsvJob } from '../support/queries.js';
import { tempDirEachTest } from '../support/temp-dir-hooks.js';

/**
 * Issue 61: a refusal names the file, the line and the field, never the value. Each case seeds a
 * distinctive secret into a secret-bearing field (or a URL field, or a YAML mistake next to one),
 * given wrongly in one way, runs the real commands (`main`, the CLI's entry, as the process runs
 * it), and asserts that neither the secret nor any 6-character piece of it is in any byte of
 * stdout or stderr, and that the refusal is config_invalid with exit 2.
 */

const COMMANDS = ['validate', 'check', 'plan', 'run'] as const;
// Letters no hex digest, run id or timestamp holds, so that a 6-character piece found in the output is the secret's.
const LETTERS = 'ghjkmnpqrstvwxyzGHJKMNPQRSTVWXYZ';

function distinctiveSecret(): string {
  let middle = '';
  for (let i = 0; i < 12; i++) middle += LETTERS[randomInt(LETTERS.length)];
  return `S3cr3t-${middle}-Zq9`;
}

/** Every 6-character piece of `secret` (the secret itself included) that is in `text`. */
function piecesIn(text: string, secret: string): string[] {
  const found = new Set<string>();
  for (let i = 0; i + 6 <= secret.length; i++) if (text.includes(secret.slice(i, i + 6))) found.add(secret.slice(i, i + 6));
  return [...found];
}

function expectNoSecret(result: CliResult, secret: string): void {
  const output = `${result.stdout}\n${result.stderr}\n${JSON.stringify(result.logs)}`;
  expect(piecesIn(output, secret), output).toEqual([]);
}

const ENV = { TEST_CLIENT_ID: 'refusal-client', TEST_CLIENT_SECRET: 'refusal-client-secret-value' };
const temp = tempDirEachTest();
let configFile: string;
let jobsDir: string;

beforeEach(async () => {
  configFile = path.join(temp.path, 'env.yaml');
  jobsDir = path.join(temp.path, 'jobs');
  await mkdir(jobsDir);
  await writeFile(path.join(jobsDir, 'incident_detail.yaml'), stringify(detailCsvJob));
});

/** A second job, into PostgreSQL: the sink kind whose settings a DATABASE_URL gives. */
function writePostgresJob(): Promise<void> {
  return writeFile(path.join(jobsDir, 'incident_rows.yaml'), stringify({ ...detailCsvJob, name: 'incident_rows', sinks: [{ type: 'postgres' }] }));
}

afterEach(() => {
  vi.unstubAllEnvs();
});

/** The environment file: a loopback source (`clientSecret` as given), CSV files, then `extra` lines. */
function environmentText(extra: readonly string[], clientSecret = '${TEST_CLIENT_SECRET}'): string {
  return [
    'source:',
    '  baseUrl: http://127.0.0.1:9',
    '  authUrl: http://127.0.0.1:9',
    '  clientId: ${TEST_CLIENT_ID}',
    `  clientSecret: ${clientSecret}`,
    'sinks:',
    '  csv:',
    `    directory: ${path.join(temp.path, 'out')}`,
    ...extra,
    '',
  ].join('\n');
}

function command(name: (typeof COMMANDS)[number], env: Record<string, string> = {}): Promise<CliResult> {
  return runCli([name, '--config', configFile, '--jobs', jobsDir], { env: { ...ENV, ...env } });
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

/** The 1-based line of the first line of `text` that sets `key:` at `indent` spaces. */
function lineOfKey(text: string, key: string): number {
  const index = text.split('\n').findIndex((line) => line.trimStart().startsWith(`${key}:`));
  if (index < 0) throw new Error(`no ${key}: in the file`);
  return index + 1;
}

interface SecretField {
  /** The field as the refusal names it. */
  field: string;
  /** Its key in the file, to find its line. */
  key: string;
  /** The environment file with `value` (YAML text) in the field. */
  text(value: string): string;
}

const SECRET_FIELDS: SecretField[] = [
  { field: 'source.clientSecret', key: 'clientSecret', text: (value) => environmentText([], value) },
  {
    field: 'sinks.postgres.password',
    key: 'password',
    text: (value) => environmentText(['  postgres:', '    host: db.internal', '    database: analytics', '    user: loader', `    password: ${value}`]),
  },
  { field: 'sinks.postgres.url', key: 'url', text: (value) => environmentText(['  postgres:', `    url: ${value}`]) },
  {
    field: 'sinks.iceberg.catalog.password',
    key: 'password',
    text: (value) =>
      environmentText([
        '  iceberg:',
        `    location: ${path.join(temp.path, 'warehouse')}`,
        '    catalog:',
        '      type: jdbc',
        '      catalogName: tiles',
        '      host: db.internal',
        '      database: analytics',
        '      user: loader',
        `      password: ${value}`,
      ]),
  },
  {
    field: 'sinks.iceberg.catalog.url',
    key: 'url',
    text: (value) =>
      environmentText([
        '  iceberg:',
        `    location: ${path.join(temp.path, 'warehouse')}`,
        '    catalog:',
        '      type: jdbc',
        '      catalogName: tiles',
        `      url: ${value}`,
      ]),
  },
  {
    field: 'sinks.iceberg.catalog.token',
    key: 'token',
    text: (value) =>
      environmentText([
        '  iceberg:',
        `    location: ${path.join(temp.path, 'warehouse')}`,
        '    catalog:',
        '      type: rest',
        '      uri: https://catalog.example.internal/api/catalog',
        `      token: ${value}`,
      ]),
  },
  {
    field: 'sinks.iceberg.catalog.auth.clientSecret',
    key: 'clientSecret',
    text: (value) =>
      environmentText(
        [
          '  iceberg:',
          `    location: ${path.join(temp.path, 'warehouse')}`,
          '    catalog:',
          '      type: rest',
          '      uri: https://catalog.example.internal/api/catalog',
          '      auth:',
          '        type: oauth2',
          '        clientId: tilehouse',
          `        clientSecret: ${value}`,
        ],
        '${TEST_CLIENT_SECRET}',
      ).replace('  clientSecret: ${TEST_CLIENT_SECRET}', '  clientSecretFile: /nowhere/client-secret'),
  },
  {
    // The lineage section refuses any key; the refusal is on the auth section.
    field: 'lineage.transport.auth',
    key: 'auth',
    text: (value) =>
      environmentText([
        'lineage:',
        '  transport:',
        '    type: http',
        '    url: http://marquez.internal:5000',
        '    auth:',
        '      type: api_key',
        `      apiKey: ${value}`,
      ]),
  },
];

/** Every wrong way to give a secret in YAML: a literal (bare or quoted), a wrong type, inside a URL. */
const WRONG_WAYS: Array<{ way: string; yaml(secret: string): string }> = [
  { way: 'a literal', yaml: (secret) => secret },
  { way: 'a quoted literal', yaml: (secret) => `"${secret}"` },
  { way: 'a list', yaml: (secret) => `[${secret}]` },
  { way: 'a map', yaml: (secret) => `{value: ${secret}}` },
  { way: "a URL's user info", yaml: (secret) => `postgresql://loader:${secret}@db.internal/analytics` },
  { way: "a URL's ?password=", yaml: (secret) => `postgresql://db.internal/analytics?password=${secret}` },
];

describe('a secret given wrongly is refused by field and line, its value never shown', () => {
  for (const secretField of SECRET_FIELDS) {
    describe(secretField.field, () => {
      it.each(WRONG_WAYS.map((way) => [way.way, way] as const))('as %s: config_invalid, exit 2, on every command', async (_, way) => {
        const secret = distinctiveSecret();
        const text = secretField.text(way.yaml(secret));
        await writeFile(configFile, text);
        for (const name of COMMANDS) {
          const result = await command(name);
          expectNoSecret(result, secret);
          expect([name, result.exitCode, refusalCode(result)]).toEqual([name, 2, 'config_invalid']);
          // Named at the line of the field the refusal names (the field itself, or the key below it that holds the wrong type).
          const named = new RegExp(`^  ${escapeRegExp(configFile)}:(\\d+): (${escapeRegExp(secretField.field)}(\\.\\w+)?): `, 'm').exec(result.stderr);
          expect(named, result.stderr).not.toBeNull();
          expect(Number(named![1])).toBe(lineOfKey(text, named![2]!.split('.').at(-1)!));
        }
      });
    });
  }
});

/**
 * What can start a YAML value and make the parser stop there (or read something else than a
 * string): each before a secret in a password and in a url field, and none of it is printed.
 */
const YAML_INDICATORS = ['|', '>', '*', '&', '!', '%', '@', '`', '{', '[', '"', "'", '#', '-', '?', ':'];

describe('a YAML mistake at a secret is told by its place, never by its text', () => {
  for (const field of SECRET_FIELDS.filter((candidate) => ['sinks.postgres.password', 'sinks.postgres.url'].includes(candidate.field))) {
    it.each(YAML_INDICATORS)(`${field.field} starting with %s: config_invalid, exit 2, on every command`, async (indicator) => {
      const secret = distinctiveSecret();
      await writeFile(configFile, field.text(`${indicator}${secret}`));
      for (const name of COMMANDS) {
        const result = await command(name);
        expectNoSecret(result, secret);
        expect([name, result.exitCode, refusalCode(result)]).toEqual([name, 2, 'config_invalid']);
        expect(result.stderr).toMatch(new RegExp(`^  ${escapeRegExp(configFile)}:\\d+: `, 'm'));
      }
    });
  }

  it("an unquoted ${VAR} in a flow map before a URL's password: each line named once, nothing quoted", async () => {
    const secret = distinctiveSecret();
    await writeFile(configFile, environmentText([`  postgres: {host: db, password: \${PG}, url: postgresql://loader:${secret}@db/analytics}`]));
    for (const name of COMMANDS) {
      const result = await command(name);
      expectNoSecret(result, secret);
      expect([name, result.exitCode, refusalCode(result)]).toEqual([name, 2, 'config_invalid']);
      expect(result.stderr).toBe(
        `tilehouse: config_invalid:\n  ${configFile}:9: YAML syntax: unexpected text (an unquoted value starting with {, [, |, >, *, &, !, %, @, \` or # needs quotes) (column 35; the text is not shown)\n`,
      );
    }
  });

  it('a password starting with * is an alias without its anchor: config_invalid at its line and column, not internal_error', async () => {
    const secret = distinctiveSecret();
    const text = SECRET_FIELDS[1]!.text(`*${secret}`);
    await writeFile(configFile, text);
    const result = await command('validate');
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toBe(
      `tilehouse: config_invalid:\n  ${configFile}:13: YAML syntax: an alias (*name) whose anchor (&name) is not set before it; a value starting with * needs quotes (column 15; the text is not shown)\n`,
    );
  });

  it('a job file with a YAML mistake before a line holding a secret-looking URL names the place only', async () => {
    const secret = distinctiveSecret();
    await writeFile(configFile, environmentText([]));
    await writeFile(
      path.join(jobsDir, 'incident_detail.yaml'),
      `name: incident_detail\ntile: {id: t, note: https://loader:${secret}@db/x}}\nquery: {}\nsinks: [{type: csv}]\n`,
    );
    for (const name of COMMANDS) {
      const result = await command(name);
      expectNoSecret(result, secret);
      expect([name, result.exitCode, refusalCode(result)]).toEqual([name, 2, 'config_invalid']);
      expect(result.stderr).toContain(`${path.join(jobsDir, 'incident_detail.yaml')}:2: YAML syntax:`);
    }
  });
});

describe('an OPENLINEAGE_CONFIG file with a mistake at its API key', () => {
  // The file is a Secret's (an API key may be in it): a value that is still a string is taken, a mistake is refused by place.
  const PARSE_FAILS = new Set(['|', '>', '*', '@', '`', '{', '[', '"', "'"]);
  const ways = [
    ...YAML_INDICATORS.map((indicator) => ({
      way: `starting with ${indicator}`,
      refused: PARSE_FAILS.has(indicator),
      yaml: (secret: string) => `${indicator}${secret}`,
    })),
    ...WRONG_WAYS.slice(2, 4).map((way) => ({ ...way, refused: true })),
  ];
  it.each(ways.map((way) => [way.way, way] as const))('apiKey %s: validate and run name the file, never quote it', async (_, way) => {
    const secret = distinctiveSecret();
    await writeFile(configFile, environmentText([]));
    const lineageFile = path.join(temp.path, 'openlineage.yml');
    await writeFile(
      lineageFile,
      `transport:\n  type: http\n  url: http://marquez.internal:5000\n  auth:\n    type: api_key\n    apiKey: ${way.yaml(secret)}\n`,
    );
    const validate = await command('validate', { OPENLINEAGE_CONFIG: lineageFile });
    expectNoSecret(validate, secret);
    const run = await command('run', { OPENLINEAGE_CONFIG: lineageFile });
    expectNoSecret(run, secret);
    if (way.refused) {
      expect([validate.exitCode, refusalCode(validate)]).toEqual([2, 'config_invalid']);
      expect(validate.stderr).toContain(`lineage: OPENLINEAGE_CONFIG ${lineageFile}`);
      expect([run.exitCode, refusalCode(run)]).toEqual([2, 'lineage_config_invalid']);
    } else if (validate.exitCode !== 0) {
      expect([validate.exitCode, refusalCode(validate)]).toEqual([2, 'config_invalid']);
    }
  });
});

/** Every URL setting that is not a secret field, with the place a credential goes instead. */
const URL_FIELDS: Array<{ field: string; text(url: string): string; pointsTo: string }> = [
  {
    field: 'source.baseUrl',
    text: (url) => environmentText([]).replace('  baseUrl: http://127.0.0.1:9', `  baseUrl: ${url}`),
    pointsTo: 'source.clientSecret',
  },
  {
    field: 'source.authUrl',
    text: (url) => environmentText([]).replace('  authUrl: http://127.0.0.1:9', `  authUrl: ${url}`),
    pointsTo: 'source.clientSecret',
  },
  { field: 'sinks.s3.endpoint', text: (url) => environmentText(['  s3:', `    endpoint: ${url}`]), pointsTo: 'AWS_SECRET_ACCESS_KEY' },
  {
    field: 'sinks.iceberg.catalog.uri',
    text: (url) =>
      environmentText([
        '  iceberg:',
        `    location: ${path.join(temp.path, 'warehouse')}`,
        '    catalog:',
        '      type: rest',
        `      uri: ${url}`,
        '      token: ${ICEBERG_TOKEN}',
      ]),
    pointsTo: 'sinks.iceberg.catalog.token',
  },
  {
    field: 'sinks.iceberg.catalog.auth.serverUri',
    text: (url) =>
      environmentText([
        '  iceberg:',
        `    location: ${path.join(temp.path, 'warehouse')}`,
        '    catalog:',
        '      type: rest',
        '      uri: https://catalog.example.internal/api/catalog',
        '      auth:',
        '        type: oauth2',
        '        clientId: tilehouse',
        '        clientSecret: ${ICEBERG_CLIENT_SECRET}',
        `        serverUri: ${url}`,
      ]),
    pointsTo: 'auth.clientSecret',
  },
  { field: 'metrics.pushgatewayUrl', text: (url) => environmentText(['metrics:', `  pushgatewayUrl: ${url}`]), pointsTo: 'proxy or sidecar' },
  {
    field: 'lineage.transport.url',
    text: (url) => environmentText(['lineage:', '  transport:', '    type: http', `    url: ${url}`]),
    pointsTo: 'OPENLINEAGE_API_KEY',
  },
  {
    field: 'sinks.bigquery.apiEndpoint',
    text: (url) => environmentText(['  bigquery:', '    dataset: tiles', `    apiEndpoint: ${url}`]),
    pointsTo: '',
  },
  { field: 'sinks.gcs.apiEndpoint', text: (url) => environmentText(['  gcs:', `    apiEndpoint: ${url}`]), pointsTo: '' },
];

describe('a password in the user info of a URL setting that is not a secret', () => {
  it.each(URL_FIELDS.map((field) => [field.field, field] as const))('%s: refused by every command, naming the field, never the URL', async (_, field) => {
    const secret = distinctiveSecret();
    const text = field.text(`https://loader:${secret}@host.example.internal`);
    await writeFile(configFile, text);
    for (const name of COMMANDS) {
      const result = await command(name);
      expectNoSecret(result, secret);
      expect([name, result.exitCode, refusalCode(result)]).toEqual([name, 2, 'config_invalid']);
      expect(result.stderr).toContain(`${field.field}: `);
      expect(result.stderr).toMatch(/user or password|password in the URL/);
      expect(result.stderr).toContain(field.pointsTo);
    }
  });

  it('a user without a password stays allowed (the Pushgateway, the S3 endpoint, the catalog URI)', async () => {
    await writeFile(
      configFile,
      environmentText([
        '  s3:',
        '    endpoint: https://loader@minio.example.internal:9000',
        'metrics:',
        '  pushgatewayUrl: https://loader@push.example.internal:9091',
      ]),
    );
    const result = await command('validate');
    expect(result.stderr).toBe('');
    expect(result.exitCode).toBe(0);
  });

  it.each(['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'OTEL_EXPORTER_OTLP_METRICS_ENDPOINT'])(
    '%s with a password: validate refuses it (config_invalid, exit 2), a run warns and exports nothing there; neither prints it',
    async (variable) => {
      const secret = distinctiveSecret();
      await writeFile(configFile, environmentText([]));
      const env = { [variable]: `http://collector:${secret}@127.0.0.1:4318` };
      const validate = await command('validate', env);
      expectNoSecret(validate, secret);
      expect([validate.exitCode, refusalCode(validate)]).toEqual([2, 'config_invalid']);
      expect(validate.stderr).toContain(`(environment): telemetry: ${variable}: a password in the URL (user:password@host) is refused`);
      expect(validate.stderr).toContain('OTEL_EXPORTER_OTLP_HEADERS');
      const run = await command('run', env);
      expectNoSecret(run, secret);
      expect(run.logs.some((line) => String(line.msg).startsWith(`telemetry: ${variable}: a password in the URL`))).toBe(true);
    },
  );

  it('an OTLP endpoint that is not a URL is warned about by variable, not quoted', async () => {
    const secret = distinctiveSecret();
    await writeFile(configFile, environmentText([]));
    const result = await command('validate', { OTEL_EXPORTER_OTLP_ENDPOINT: `collector ${secret}` });
    expectNoSecret(result, secret);
    expect(result.exitCode).toBe(0);
    expect(result.stderr).toContain('(OTEL_EXPORTER_OTLP_ENDPOINT) is not a URL (the value is not shown)');
  });
});

const BAD_URLS_FOR_FILES: Array<[string, (secret: string) => string]> = [
  ['a port out of range', (secret) => `postgresql://loader:${secret}@db.internal:99999999/analytics`],
  ['no scheme', (secret) => `loader:${secret} db.internal/analytics`],
];

describe('a DATABASE_URL that does not parse', () => {
  const BAD_URLS: Array<[string, (secret: string) => string]> = [
    ['a port out of range', (secret) => `postgresql://loader:${secret}@db.internal:99999999/analytics`],
    ['no scheme', (secret) => `loader:${secret} db.internal/analytics`],
    ['a query parameter tilehouse does not read', (secret) => `postgresql://loader:${secret}@db.internal/analytics?passfile=${secret}`],
  ];
  it.each(BAD_URLS)('%s: config_invalid with exit 2 on every command, before any job starts, the url never shown', async (_, url) => {
    const secret = distinctiveSecret();
    const text = environmentText(['  postgres:', '    url: ${DATABASE_URL}']);
    await writeFile(configFile, text);
    await writePostgresJob();
    // The sinks' checks read the process's environment, as `validate` and a run in a pod do.
    vi.stubEnv('DATABASE_URL', url(secret));
    for (const name of COMMANDS) {
      const result = await command(name, { DATABASE_URL: url(secret) });
      expectNoSecret(result, secret);
      expect([name, result.exitCode, refusalCode(result)]).toEqual([name, 2, 'config_invalid']);
      expect(result.stderr).toContain(`${configFile}:${lineOfKey(text, 'url')}: sinks.postgres.url = "\${DATABASE_URL}": the url in DATABASE_URL `);
      expect(result.logs.filter((line) => line.job !== undefined)).toEqual([]);
    }
  });
});

describe('a url file whose URL does not parse', () => {
  it.each(BAD_URLS_FOR_FILES)('%s: config_invalid with exit 2 on check, plan and run, before any job starts; validate reads no secret file', async (_, url) => {
    const secret = distinctiveSecret();
    const urlFile = path.join(temp.path, 'database-url');
    await writeFile(urlFile, `${url(secret)}\n`);
    const text = environmentText(['  postgres:', `    urlFile: ${urlFile}`]);
    await writeFile(configFile, text);
    await writePostgresJob();
    for (const name of COMMANDS) {
      const result = await command(name);
      expectNoSecret(result, secret);
      if (name === 'validate') {
        // validate runs where the secrets are not, and never holds one: a readable file passes.
        expect([name, result.exitCode]).toEqual([name, 0]);
        continue;
      }
      expect([name, result.exitCode, refusalCode(result)]).toEqual([name, 2, 'config_invalid']);
      expect(result.stderr).toContain(
        `${configFile}:${lineOfKey(text, 'urlFile')}: sinks.postgres.urlFile = ${JSON.stringify(urlFile)}: the url in this file `,
      );
      expect(result.logs.filter((line) => line.job !== undefined)).toEqual([]);
    }
  });
});

describe('init: a pasted request it cannot read is refused by part and place, never by a header value or the body', () => {
  const URL = 'https://acme.incidents.example.com/api/v1/topics/incident/execute?tileId=65f0a1c2d3e4f5a6b7c8d9aa';
  const BODY = JSON.stringify({ items: [{ header: 'Severity', formula: '[incident.severity_label]', dataType: 'text' }], options: { itemsPerPage: 50 } });
  const REQUESTS: Array<[string, (secret: string) => string, RegExp]> = [
    ['a header line where the URL goes', (secret) => `X-Api-Key: ${secret}\n${BODY}\n`, /request\.txt: url: /],
    [
      'a body that is not JSON, a key in it',
      (secret) => `${URL}\n{"apiKey": "${secret}", "items": [}\n`,
      /request\.txt: body: not JSON \(.*; the body is not shown\)/,
    ],
    ['a body cut short after a key', (secret) => `${URL}\n{"apiKey": "${secret}"\n`, /request\.txt: body: not JSON \(.*; the body is not shown\)/],
    [
      'a header given to -X',
      (secret) => `curl -X 'X-Api-Key: ${secret}' '${URL}' --data-raw '${BODY}'\n`,
      /request\.txt: method: the export endpoint takes POST/,
    ],
    [
      'an option glued to its header',
      (secret) => `curl '--headerX-Api-Key: ${secret}' '${URL}' --data-raw '${BODY}'\n`,
      /unknown curl option --headerX-Api-Key…/,
    ],
    [
      'a content type that is a key',
      (secret) => `curl -H 'content-type: ${secret}' '${URL}' --data-raw '${BODY}'\n`,
      /content-type header: the export endpoint takes application\/json \(the value is not shown\)/,
    ],
    ['a header without a colon', (secret) => `curl -H 'X-Api-Key ${secret}' '${URL}' --data-raw '${BODY}'\n`, /curl option -H needs "Name: value"/],
  ];
  it.each(REQUESTS)('%s: config_invalid, exit 2, nothing of it printed', async (_, request, message) => {
    const secret = distinctiveSecret();
    const file = path.join(temp.path, 'request.txt');
    await writeFile(file, request(secret));
    await writeFile(configFile, environmentText([]));
    const result = await runCli(['init', '--from-request', file, '--config', configFile, '--jobs', jobsDir], { env: {} });
    expectNoSecret(result, secret);
    expect([result.exitCode, refusalCode(result)]).toEqual([2, 'config_invalid']);
    expect(result.stderr).toMatch(message);
  });
});
