import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { LineageTileEnd, LineageTileStart } from '../../src/lineage/lineage.js';
import { lineage } from '../../src/lineage/lineage.js';
import { closeLineage, openLineage } from '../../src/lineage/open-lineage.js';
import { createLogger } from '../../src/log.js';
import { Capture } from '../support/cli-harness.js';
import { refusingUrl, startLineageConsumer, type LineageConsumer } from '../support/lineage-consumer.js';
import { runCycleProblems, type LineageEvent } from '../support/lineage-events.js';
import { openLineageProblems } from '../support/openlineage-schemas.js';

const START: LineageTileStart = {
  job: 'incidents_daily',
  tile: 'tile-42',
  runId: '20261121T213005Z-9f2c1a',
  sourceUrl: 'http://127.0.0.1:1',
  startedAt: new Date('2026-11-21T21:30:05Z'),
  timezone: 'UTC',
};
const END: LineageTileEnd = {
  status: 'succeeded',
  rows: 2,
  columns: [{ name: 'id', header: 'ID', type: 'INT64' }],
  outputs: [{ sink: 'csv', target: '/data/out.csv', rows: 2, details: { bytes: 12 } }],
  opened: [{ sink: 'csv', target: '/data/out.csv' }],
  bigqueryJobIds: [],
};

let consumer: LineageConsumer | undefined;
afterEach(async () => {
  await consumer?.close();
  consumer = undefined;
});

/** Opens lineage from `env`, runs one tile through it, closes it; what the log and the console got. */
async function oneTile(env: NodeJS.ProcessEnv, section?: Parameters<typeof openLineage>[0]['section']) {
  const logs = new Capture();
  const consoleLines: string[] = [];
  const logger = createLogger({ destination: logs, level: 'info' });
  const opened = await openLineage({ env, section, logger, writeConsole: (line) => consoleLines.push(line) });
  expect(lineage()).toBe(opened);
  lineage().startTile(START).end(END, false);
  await closeLineage(opened);
  const warnings = logs.lines().filter((line) => line.level === 40);
  return { opened, warnings, consoleLines };
}

describe('OpenLineage over HTTP', () => {
  it('posts START then COMPLETE to <url>/api/v1/lineage with the API key as a bearer token', async () => {
    consumer = await startLineageConsumer({ answer: 'ok', apiKey: 'ol-key-1' });
    const { warnings } = await oneTile({ OPENLINEAGE_URL: consumer.url, OPENLINEAGE_API_KEY: 'ol-key-1' });
    expect(warnings).toEqual([]);
    expect(consumer.received.map((request) => [request.path, request.event.eventType])).toEqual([
      ['/api/v1/lineage', 'START'],
      ['/api/v1/lineage', 'COMPLETE'],
    ]);
    for (const { event } of consumer.received) expect(openLineageProblems(event)).toEqual([]);
  });

  it('takes the endpoint, and gzips the body when the YAML file says compression: gzip', async () => {
    consumer = await startLineageConsumer({ answer: 'ok' });
    const dir = await mkdtemp(path.join(tmpdir(), 'ol-config-'));
    const file = path.join(dir, 'openlineage.yml');
    await import('node:fs/promises').then(({ writeFile }) =>
      writeFile(file, `transport:\n  type: http\n  url: ${consumer!.url}\n  endpoint: /custom/lineage\n  compression: gzip\n`),
    );
    await oneTile({ OPENLINEAGE_CONFIG: file });
    await rm(dir, { recursive: true });
    expect(consumer.received.map((request) => [request.path, request.headers['content-encoding'], request.event.eventType])).toEqual([
      ['/custom/lineage', 'gzip', 'START'],
      ['/custom/lineage', 'gzip', 'COMPLETE'],
    ]);
  });

  it('warns once when the consumer refuses the API key, and says nothing of the key', async () => {
    consumer = await startLineageConsumer({ answer: 'ok', apiKey: 'right-key' });
    const { warnings } = await oneTile({ OPENLINEAGE_URL: consumer.url, OPENLINEAGE_API_KEY: 'wrong-key-value' });
    expect(consumer.received).toEqual([]);
    expect(warnings).toHaveLength(1);
    expect(String(warnings[0]?.msg)).toMatch(/^lineage: an event could not be sent to http:\/\/127\.0\.0\.1:\d+\/api\/v1\/lineage \(HTTP 401\)/);
    expect(JSON.stringify(warnings)).not.toContain('wrong-key-value');
  });

  it.each([
    ['answers 503', { answer: 'status', status: 503 } as const, /HTTP 503/],
    ['answers 413', { answer: 'status', status: 413 } as const, /HTTP 413/],
    ['never answers', { answer: 'never' } as const, /events to http:\/\/127\.0\.0\.1:\d+\/api\/v1\/lineage still unsent after 1 s were dropped at exit/],
  ])('a consumer that %s costs one warning, and closing returns with the request still unanswered', async (_name, mode, reason) => {
    consumer = await startLineageConsumer(mode);
    const { warnings } = await oneTile({ OPENLINEAGE_URL: consumer.url, OPENLINEAGE__TRANSPORT__TIMEOUT: '1' });
    expect(warnings).toHaveLength(1);
    expect(String(warnings[0]?.msg)).toMatch(reason);
    // Closing returned though the consumer never answered the one event it got.
    expect(consumer.hanging()).toBe(mode.answer === 'never' ? 1 : 0);
  });

  it('keeps the run cycle: one terminal event per tile run however often it is ended, and a second start of the same tile run is another run', async () => {
    consumer = await startLineageConsumer({ answer: 'ok' });
    const logger = createLogger({ destination: new Capture(), level: 'info' });
    const opened = await openLineage({ env: { OPENLINEAGE_URL: consumer.url }, section: undefined, logger, writeConsole: () => undefined });
    const first = lineage().startTile(START);
    first.end({ ...END, status: 'failed', error: { code: 'publish_guard_tripped', message: 'refused' } }, false);
    first.end(END, false);
    first.end(END, true);
    const retry = lineage().startTile(START);
    retry.end(END, false);
    await closeLineage(opened);
    const events = consumer.received.map((request) => request.event as unknown as LineageEvent);
    expect(events.map((event) => event.eventType)).toEqual(['START', 'FAIL', 'START', 'COMPLETE']);
    expect(runCycleProblems(events)).toEqual([]);
    expect(events[2]?.run.runId).not.toBe(events[0]?.run.runId);
  });

  it('a consumer that refuses connections costs one warning', async () => {
    const { warnings } = await oneTile({ OPENLINEAGE_URL: await refusingUrl(), OPENLINEAGE__TRANSPORT__TIMEOUT: '1' });
    expect(warnings).toHaveLength(1);
    expect(String(warnings[0]?.msg)).toMatch(/could not be sent to .* \(.*ECONNREFUSED|connect/);
  });
});

describe('OpenLineage to a file and the console', () => {
  it('appends one JSON event a line to the file transport, read back valid', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'ol-file-'));
    const file = path.join(dir, 'events.jsonl');
    await oneTile({}, { namespace: 'analytics', disabled: false, transport: { type: 'file', log_file_path: file, append: true } });
    const events = (await readFile(file, 'utf8'))
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as { eventType: string; job: { namespace: string } });
    await rm(dir, { recursive: true });
    expect(events.map((event) => [event.eventType, event.job.namespace])).toEqual([
      ['START', 'analytics'],
      ['COMPLETE', 'analytics'],
    ]);
    for (const event of events) expect(openLineageProblems(event)).toEqual([]);
  });

  it("writes the console transport's events where it is told (the command's stderr), one a line", async () => {
    const { consoleLines } = await oneTile({ OPENLINEAGE__TRANSPORT__TYPE: 'console' });
    expect(consoleLines.map((line) => [line.endsWith('\n'), (JSON.parse(line) as { eventType: string }).eventType])).toEqual([
      [true, 'START'],
      [true, 'COMPLETE'],
    ]);
  });

  it('is the no-op, nothing sent, when OPENLINEAGE_DISABLED=true whatever else is set', async () => {
    consumer = await startLineageConsumer({ answer: 'ok' });
    const { opened } = await oneTile({ OPENLINEAGE_URL: consumer.url, OPENLINEAGE_DISABLED: 'true' });
    expect(opened.enabled).toBe(false);
    expect(consumer.received).toEqual([]);
  });
});

describe("a transport's error", () => {
  it("prints no user or password of a URL the consumer's answer quotes, on any line, at any level", async () => {
    // A proxy in front of the consumer that answers a redirect naming where it would send the event, credentials included.
    consumer = await startLineageConsumer({
      answer: 'status',
      status: 307,
      body: '{"error":"moved","location":"https://svc-user:proxy-pass-93@lineage.internal/api/v1/lineage"}',
    });
    const logs = new Capture();
    const logger = createLogger({ destination: logs, level: 'debug' });
    const opened = await openLineage({ env: { OPENLINEAGE_URL: consumer.url }, section: undefined, logger, writeConsole: () => undefined });
    lineage().startTile(START).end(END, false);
    await closeLineage(opened);
    const lines = logs.lines().map((line) => JSON.stringify(line));
    expect(lines.filter((line) => line.includes('HTTP 307'))).toHaveLength(4);
    for (const line of lines) {
      expect(line).not.toContain('proxy-pass-93');
      expect(line).not.toContain('svc-user');
    }
    expect(lines.join('\n')).toContain('https://[redacted]@lineage.internal');
  });
});
