import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SANDBOX_TILE, startSandbox, type Sandbox } from '../../sandbox/index.js';
import { startFakeMetadataServer, type FakeMetadataServer } from '../support/fake-metadata-server.js';
import { TokenBook } from '../support/google-token-book.js';
import { otelcolBinaryOrSkip, startCollector, type RunningCollector } from '../support/otel-collector.js';
import { detailQuery } from '../support/queries.js';
import { spawnCli, type ChildResult } from '../support/spawn-cli.js';
import { makeTempDir } from '../support/temp-dir.js';

/**
 * Issue 61, the echo-server matrix: servers that echo what they received, one way each, standing
 * in for the token endpoint (the request's JSON with its client_secret), the export endpoint (the
 * `Authorization: Bearer <token>` it was sent), an Iceberg REST catalog (its bearer token) and a
 * Google API (Cloud Storage, the access token a pod's metadata server issued); each
 * case a real `tilehouse run` (twice: `--summary-json FILE` with the lineage file transport, then
 * `--json` with the lineage HTTP transport and its API key), all of them traced to an OTLP
 * collector, and, afterwards, `tilehouse status` (text and --json) in a fresh process given no
 * secret at all. Every distinctive seeded secret must be in no byte of any channel, in any form:
 * raw, URL-encoded, form-encoded, JSON-escaped once and twice, Go-escaped, HTML-escaped, base64.
 */

const FORMS = ['status_line', 'json_body', 'header', 'redirect', 'html', 'go_json'] as const;
type Form = (typeof FORMS)[number];
const ROLES = ['token', 'export', 'iceberg', 'google'] as const;
type Role = (typeof ROLES)[number];

/** A secret with the characters every encoding changes (`& < > + / =`) around a distinctive core. */
function seeded(prefix: string): { value: string; core: string } {
  const core = randomBytes(10).toString('hex');
  return { value: `${prefix}&<${core}>+/=`, core };
}

const CLIENT_ID = `mx-client-${randomBytes(4).toString('hex')}`;
const CLIENT_SECRET = seeded('cs');
const ICEBERG_TOKEN = seeded('ib');
const LINEAGE_KEY = seeded('lk');
/** The access tokens the echo server issued (export role): each a secret of its own. */
const issued: Array<{ value: string; core: string }> = [];

const htmlEscape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const goEscape = (json: string) => json.replace(/&/g, '\\u0026').replace(/</g, '\\u003c').replace(/>/g, '\\u003e');

/** Every form in which a value could leave: a hit of any of them in any channel fails the case. */
function formsOf(value: string, core: string): Record<string, string> {
  const json = JSON.stringify(value).slice(1, -1);
  return {
    core,
    raw: value,
    url: encodeURIComponent(value),
    urlLower: encodeURIComponent(value).replace(/%[0-9A-F]{2}/g, (escape) => escape.toLowerCase()),
    form: new URLSearchParams({ v: value }).toString().slice(2),
    json,
    jsonTwice: JSON.stringify(json).slice(1, -1),
    go: goEscape(json),
    html: htmlEscape(value),
    base64: Buffer.from(value).toString('base64'),
    base64url: Buffer.from(value).toString('base64url'),
  };
}

// ---- the echo server: one role per path prefix, one form per path segment --------------------

async function bodyOf(request: IncomingMessage): Promise<string> {
  let text = '';
  for await (const chunk of request) text += String(chunk);
  return text;
}

/** The refusal of a role, with what it received in it: as that role's JSON error document. */
function errorDocument(role: Role, echoed: string): unknown {
  const said = `rejected; the request was: ${echoed}`;
  if (role === 'token') return { error: 'invalid_client', error_description: said };
  if (role === 'export') return { error: { status: 401, message: said } };
  if (role === 'google') return { error: { code: 401, message: said, errors: [{ message: said, domain: 'global', reason: 'authError' }] } };
  return { error: { message: said, type: 'NotAuthorizedException', code: 401 } };
}

function answerEchoing(response: ServerResponse, role: Role, form: Form, echoed: string, base: string): void {
  const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
    response.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
  switch (form) {
    case 'status_line':
      response.writeHead(401, `Unauthorized ${echoed}`, { 'content-type': 'application/json' }).end('{"error":"unauthorized"}');
      return;
    case 'json_body':
      json(401, errorDocument(role, echoed));
      return;
    case 'header':
      json(
        401,
        { error: 'unauthorized' },
        { 'www-authenticate': `Bearer error="invalid_token", error_description="${echoed.replace(/"/g, "'")}"`, 'x-echo': echoed },
      );
      return;
    case 'redirect':
      // To the JSON form of the same role, carrying the client secret in its query (a misconfigured gateway).
      response
        .writeHead(307, {
          location: `${base}/json_body/redirected?client_secret=${encodeURIComponent(CLIENT_SECRET.value)}&echo=${encodeURIComponent(echoed)}`,
        })
        .end();
      return;
    case 'html':
      response
        .writeHead(401, { 'content-type': 'text/html' })
        .end(`<html><head><title>401 Unauthorized</title></head><body><h1>Unauthorized</h1><pre>${htmlEscape(echoed)}</pre></body></html>`);
      return;
    case 'go_json':
      response.writeHead(401, { 'content-type': 'application/json' }).end(goEscape(JSON.stringify(errorDocument(role, echoed))));
      return;
  }
}

/** Cloud Storage's JSON API (`/storage/v1/b/<bucket>/…`, `/upload/storage/v1/b/<bucket>/…`): the form the bucket names. */
function googleForm(pathname: string): Form | undefined {
  const form = /\/b\/mx-echo-([a-z-]+)/.exec(pathname)?.[1]?.replace('-', '_') as Form | undefined;
  return form !== undefined && FORMS.includes(form) ? form : undefined;
}

interface EchoServer {
  url: string;
  close(): Promise<void>;
}

async function startEchoServer(): Promise<EchoServer> {
  const server: Server = createServer((request, response) => {
    void (async () => {
      const url = new URL(request.url ?? '/', 'http://localhost');
      const body = await bodyOf(request);
      const [prefix, form] = url.pathname.split('/').slice(1) as [string, Form];
      const origin = `http://${request.headers.host}`;
      // A token that works, for the roles that are not the token endpoint's.
      if (prefix === 'ok' && url.pathname.endsWith('/oauth/token')) {
        const token = seeded('at');
        issued.push(token);
        response
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ access_token: token.value, token_type: 'Bearer', expires_in: 3600 }));
        return;
      }
      // What a redirect lands on: the JSON echo of everything it was given, query included.
      if (form === 'json_body' && url.pathname.endsWith('/redirected')) {
        const role: Role = prefix === 't' ? 'token' : prefix === 'x' ? 'export' : prefix === 'g' ? 'google' : 'iceberg';
        answerEchoing(response, role, 'json_body', `${url.search} ${request.headers.authorization ?? ''} ${body}`, `${origin}/${prefix}`);
        return;
      }
      if (prefix === 't' && FORMS.includes(form)) answerEchoing(response, 'token', form, body, `${origin}/t`);
      else if (prefix === 'x' && FORMS.includes(form))
        answerEchoing(response, 'export', form, `Authorization: ${request.headers.authorization ?? ''}`, `${origin}/x`);
      else if (prefix === 'i' && FORMS.includes(form))
        answerEchoing(response, 'iceberg', form, `Authorization: ${request.headers.authorization ?? ''}`, `${origin}/i`);
      else if (googleForm(url.pathname) !== undefined)
        answerEchoing(response, 'google', googleForm(url.pathname)!, `Authorization: ${request.headers.authorization ?? ''}`, `${origin}/g`);
      else response.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found"}');
    })();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

/** An OpenLineage HTTP consumer that keeps every body as the bytes it received. */
async function startRawConsumer(): Promise<{ url: string; bodies: Buffer[]; close(): Promise<void> }> {
  const bodies: Buffer[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      bodies.push(Buffer.concat(chunks));
      response.writeHead(201).end();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    bodies,
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

/** The OTLP channel: the real collector (its file exporter's output) when installed; else a loopback receiver of the raw bodies. */
async function startOtlp(): Promise<{ endpoint: string; text(): Promise<string>; close(): Promise<void>; real: boolean }> {
  const binary = otelcolBinaryOrSkip();
  if (binary !== null) {
    const collector: RunningCollector = await startCollector(binary);
    return { endpoint: collector.endpoint, text: () => collector.raw(), close: () => collector.stop(), real: true };
  }
  const bodies: Buffer[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      bodies.push(Buffer.concat(chunks));
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    text: async () => Buffer.concat(bodies).toString('latin1'),
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
    real: false,
  };
}

async function filesUnder(directory: string): Promise<Array<{ file: string; text: string }>> {
  const entries = await readdir(directory, { recursive: true, withFileTypes: true }).catch(() => []);
  const files = entries.filter((entry) => entry.isFile()).map((entry) => path.join(entry.parentPath, entry.name));
  return Promise.all(files.map(async (file) => ({ file, text: await readFile(file, 'latin1') })));
}

// ---- the matrix ---------------------------------------------------------------------------------

let echo: EchoServer;
/** Google's credentials (the metadata server of a pod), for the Google API role: its tokens are secrets too. */
const book = new TokenBook();
let metadata: FakeMetadataServer;
let sandbox: Sandbox;
let consumer: Awaited<ReturnType<typeof startRawConsumer>>;
let otlp: Awaited<ReturnType<typeof startOtlp>>;
let root: string;
let history: string;
let allJobs: string;

beforeAll(async () => {
  [echo, sandbox, consumer, otlp, root, metadata] = await Promise.all([
    startEchoServer(),
    startSandbox({ incidents: 30 }),
    startRawConsumer(),
    startOtlp(),
    makeTempDir(),
    startFakeMetadataServer({ book }),
  ]);
  history = path.join(root, 'history');
  allJobs = path.join(root, 'all-jobs');
  await mkdir(allJobs, { recursive: true });
}, 60_000);
afterAll(async () => {
  await Promise.all([echo?.close(), sandbox?.close(), consumer?.close(), otlp?.close(), metadata?.close()]);
  if (root !== undefined) await rm(root, { recursive: true, force: true });
});

/** Every channel's bytes, by name. */
const channels = new Map<string, string>();
/** The cases run so far (a `-t` filter runs some): each left two records per job. */
let casesRun = 0;
/** The environment file of the last case: `status` reads the shared history through it (every case's has the same sinks). */
let lastConfig = '';

function secretsSeeded(): Array<{ name: string; value: string; core: string }> {
  return [
    { name: 'client secret', ...CLIENT_SECRET },
    { name: 'iceberg token', ...ICEBERG_TOKEN },
    { name: 'lineage API key', ...LINEAGE_KEY },
    ...issued.map((token, index) => ({ name: `access token ${index}`, ...token })),
    ...book.issued.map(({ token }, index) => ({ name: `Google access token ${index}`, value: token, core: token.replace(/^ya29\.test-/, '') })),
  ];
}

/** `channel: secret (form)` for every form of every secret found in the channel's bytes. */
function leaksIn(channel: string, bytes: string): string[] {
  return secretsSeeded().flatMap((secret) =>
    Object.entries(formsOf(secret.value, secret.core)).flatMap(([form, text]) => (bytes.includes(text) ? [`${channel}: ${secret.name} (${form})`] : [])),
  );
}

const sandboxSecretEnv = () => ({ MX_CLIENT_ID: sandbox.clientId, MX_CLIENT_SECRET: sandbox.clientSecret });

async function runCase(role: Role, form: Form): Promise<{ a: ChildResult; b: ChildResult; dir: string }> {
  const dir = path.join(root, `${role}-${form}`);
  const jobs = path.join(dir, 'jobs');
  const out = path.join(dir, 'out');
  const lineage = path.join(dir, 'lineage');
  await mkdir(jobs, { recursive: true });
  await mkdir(lineage, { recursive: true });
  const source =
    role === 'token'
      ? { baseUrl: `${echo.url}/x/json_body`, authUrl: `${echo.url}/t/${form}` }
      : role === 'export'
        ? { baseUrl: `${echo.url}/x/${form}`, authUrl: `${echo.url}/ok` }
        : { baseUrl: sandbox.url, authUrl: sandbox.url };
  // The Google API role: Cloud Storage at the echo server, the token from the pod's metadata server.
  const google = role === 'google';
  const config = path.join(dir, 'env.yaml');
  // A Google role's csv sink writes to gs://: status would need Google's credentials to look at it.
  if (role !== 'google') lastConfig = config;
  await writeFile(
    config,
    stringify({
      source: { ...source, clientId: '${MX_CLIENT_ID}', clientSecret: '${MX_CLIENT_SECRET}', requestTimeoutMs: 3000 },
      sinks: {
        // The bucket names the echo form (an endpoint is an origin only).
        csv: { directory: google ? `gs://mx-echo-${form.replace('_', '-')}/exports` : out },
        ...(google ? { gcs: { apiEndpoint: echo.url } } : {}),
        iceberg: {
          catalog: { type: 'rest', uri: `${echo.url}/i/${form}`, token: '${MX_ICEBERG_TOKEN}', requestTimeoutMs: 3000 },
          location: path.join(dir, 'warehouse'),
        },
      },
      history: { location: history },
    }),
  );
  const name = `mx_${role}_${form}`;
  const jobFiles = [
    { name, tile: SANDBOX_TILE, query: detailQuery, sinks: role === 'iceberg' ? [{ type: 'iceberg', table: `mx.${role}_${form}` }] : [{ type: 'csv' }] },
    // Beside it, a job that publishes (where the source answers): its manifest is a channel too.
    ...(role === 'iceberg' ? [{ name: `${name}_csv`, tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }] }] : []),
  ];
  for (const job of jobFiles) {
    await writeFile(path.join(jobs, `${job.name}.yaml`), stringify(job));
    await writeFile(path.join(allJobs, `${job.name}.yaml`), stringify(job));
  }
  const env = {
    ...(role === 'iceberg' || google ? sandboxSecretEnv() : { MX_CLIENT_ID: CLIENT_ID, MX_CLIENT_SECRET: CLIENT_SECRET.value }),
    ...(google ? { GCE_METADATA_HOST: metadata.host, CLOUDSDK_CONFIG: path.join(dir, 'gcloud'), GOOGLE_APPLICATION_CREDENTIALS: '' } : {}),
    MX_ICEBERG_TOKEN: ICEBERG_TOKEN.value,
    OTEL_EXPORTER_OTLP_ENDPOINT: otlp.endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_METRIC_EXPORT_INTERVAL: '500',
    TILEHOUSE_LOG_LEVEL: '',
  };
  const args = ['run', '--config', config, '--jobs', jobs, '--log-level', 'trace'];
  const summaryFile = path.join(dir, 'summary.json');
  const a = await spawnCli([...args, '--summary-json', summaryFile], {
    env: { ...env, OPENLINEAGE__TRANSPORT__TYPE: 'file', OPENLINEAGE__TRANSPORT__LOG_FILE_PATH: path.join(lineage, 'lineage.jsonl') },
    timeoutMs: 60_000,
  });
  const b = await spawnCli([...args, '--json'], { env: { ...env, OPENLINEAGE_URL: consumer.url, OPENLINEAGE_API_KEY: LINEAGE_KEY.value }, timeoutMs: 60_000 });
  channels.set(`${role}/${form} run 1 stdout`, a.stdout);
  channels.set(`${role}/${form} run 1 stderr`, a.stderr);
  channels.set(`${role}/${form} --summary-json file`, await readFile(summaryFile, 'utf8').catch(() => '(none)'));
  channels.set(`${role}/${form} run 2 stdout (--json)`, b.stdout);
  channels.set(`${role}/${form} run 2 stderr`, b.stderr);
  channels.set(`${role}/${form} lineage file`, await readFile(path.join(lineage, 'lineage.jsonl'), 'utf8').catch(() => '(none)'));
  for (const { file, text } of await filesUnder(out))
    if (file.endsWith('.manifest.json')) channels.set(`${role}/${form} manifest ${path.basename(file)}`, text);
  return { a, b, dir };
}

describe(`the echo-server matrix: ${ROLES.length} servers × ${FORMS.length} echo forms × every channel (issue 61)`, () => {
  for (const role of ROLES)
    for (const form of FORMS)
      it(`${role} endpoint echoing in the ${form.replace('_', ' ')}: no seeded secret in any channel of either run`, async () => {
        const before = channels.size;
        const { a, b } = await runCase(role, form);
        casesRun += 1;
        // The echo happened: the run failed where the server refused (a case that never reached it proves nothing).
        expect(a.code, a.stderr).toBe(1);
        expect(b.code, b.stderr).toBe(1);
        expect(JSON.parse(b.stdout).tiles.find((tile: { job: string }) => tile.job === `mx_${role}_${form}`).status).toBe('failed');
        const leaks = [...channels].slice(before).flatMap(([channel, bytes]) => leaksIn(channel, bytes));
        expect(leaks).toEqual([]);
        // The echo reached the words: where the form puts it in a body tilehouse quotes, the message holds it, redacted.
        // (Cloud Storage's client quotes no HTML page.)
        const quoted = form !== 'status_line' && form !== 'header' && !(role === 'google' && form === 'html');
        if (quoted) expect(channels.get(`${role}/${form} --summary-json file`)).toContain('[redacted]');
        if (role === 'google') expect(book.issued.length).toBeGreaterThan(0);
      }, 150_000);

  it('the run history on disk, status and status --json in a fresh process (no secret in its environment), the lineage HTTP bodies and the OTLP data hold none', async () => {
    const records = await filesUnder(history);
    expect(records.length).toBeGreaterThanOrEqual(casesRun);
    // No secret at all in status's environment: the references resolve to decoys it registers, not the seeded ones.
    const decoys = { MX_CLIENT_ID: 'decoy-client-id', MX_CLIENT_SECRET: 'decoy-client-secret', MX_ICEBERG_TOKEN: 'decoy-iceberg-token' };
    const status = await spawnCli(['status', '--config', lastConfig, '--jobs', allJobs], { env: decoys, timeoutMs: 90_000 });
    const statusJson = await spawnCli(['status', '--config', lastConfig, '--jobs', allJobs, '--json'], { env: decoys, timeoutMs: 90_000 });
    expect(status.stdout, status.stderr).toContain('mx_');
    const otlpText = await otlp.text();
    const everything: Array<[string, string]> = [
      ...records.map(({ file, text }): [string, string] => [`history ${path.relative(history, file)}`, text]),
      ['status stdout', status.stdout],
      ['status stderr', status.stderr],
      ['status --json stdout', statusJson.stdout],
      ['status --json stderr', statusJson.stderr],
      ...consumer.bodies.map((body, index): [string, string] => [`lineage HTTP body ${index}`, body.toString('latin1')]),
      [otlp.real ? 'the OpenTelemetry Collector file exporter' : 'the OTLP bodies received', otlpText],
    ];
    const leaks = everything.flatMap(([channel, bytes]) => leaksIn(channel, bytes));
    expect(leaks).toEqual([]);
    // Each channel carried this matrix's words: records of every job with the echoes redacted, events, spans with the failures.
    expect(consumer.bodies.length).toBeGreaterThan(0);
    expect(otlpText).toContain('mx_export_json_body');
    expect(otlpText).toContain('[redacted]');
    expect(records.map(({ text }) => text).join('')).toContain('the request was: Authorization: Bearer [redacted]');
  }, 200_000);
});
