import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { excerpt, isTransientNetworkError, postJson, RequestDeadlineError } from '../../src/source/http.js';
import { parseJsonBody } from '../../src/source/json-body.js';
import { registerSecret } from '../../src/secret-scrubber.js';
import { ExactNumber } from '../../src/value-types/exact-number.js';
import { startHostileServer } from '../support/hostile-server.js';

// Answers /slow-headers after 3 s; /slow-body sends headers and half a body, then stalls 3 s.
let server: Server;
let base: string;
const dispatcher = new Agent();

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    if (req.url === '/slow-headers') {
      setTimeout(() => res.end('{}'), 3000).unref();
    } else if (req.url === '/slow-body') {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '20' });
      res.write('{"ok":tr');
      setTimeout(() => res.end('ue, "x": 1}'), 3000).unref();
    } else {
      res.end('{"ok":true}');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await dispatcher.close();
});

const post = (path: string, timeouts: { headersMs: number; bodyMs: number }) => postJson({ url: `${base}${path}`, body: {}, dispatcher, timeouts });

describe('postJson timeouts', () => {
  it('gives up on slow response headers after headersMs, as a transient network error', async () => {
    const error = await post('/slow-headers', { headersMs: 200, bodyMs: 10_000 }).catch((e: unknown) => e);
    expect((error as { code: string }).code).toBe('UND_ERR_HEADERS_TIMEOUT');
    expect(isTransientNetworkError(error)).toBe(true);
  });

  it('gives up on a body that stalls for bodyMs, although the headers came in time', async () => {
    const error = await post('/slow-body', { headersMs: 10_000, bodyMs: 200 }).catch((e: unknown) => e);
    expect((error as { code: string }).code).toBe('UND_ERR_BODY_TIMEOUT');
    expect(isTransientNetworkError(error)).toBe(true);
  });

  it('reads a prompt answer whole', async () => {
    await expect(post('/fast', { headersMs: 200, bodyMs: 200 })).resolves.toMatchObject({ status: 200, text: '{"ok":true}' });
  });
});

describe('postJson deadline', () => {
  const trickling = () => startHostileServer({ page: () => ({ body: '{"ok":true,"padding":"................"}', trickle: { bytes: 1, everyMs: 100 } }) });

  it('ends a request whose body trickles past the deadline with a transient RequestDeadlineError', async () => {
    const hostile = await trickling();
    try {
      const error = await postJson({ url: `${hostile.url}/x`, body: {}, dispatcher, timeouts: { headersMs: 5000, bodyMs: 5000, totalMs: 400 } }).catch(
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(RequestDeadlineError);
      expect((error as Error).message).toBe('no complete answer within 400 ms');
      // The 400 ms deadline ended it (the body takes 4 s; bodyMs would have said otherwise).
      expect(isTransientNetworkError(error)).toBe(true);
    } finally {
      await hostile.close();
    }
  });

  it("lets the caller's abort through as it is, not as a missed deadline", async () => {
    const hostile = await trickling();
    try {
      const controller = new AbortController();
      setTimeout(() => controller.abort(new Error('SIGTERM')), 150);
      const error = await postJson({
        url: `${hostile.url}/x`,
        body: {},
        dispatcher,
        timeouts: { headersMs: 5000, bodyMs: 5000, totalMs: 2000 },
        signal: controller.signal,
      }).catch((e: unknown) => e);
      expect(error).not.toBeInstanceOf(RequestDeadlineError);
      expect(isTransientNetworkError(error)).toBe(false);
    } finally {
      await hostile.close();
    }
  });
});

describe('excerpt', () => {
  it('keeps printable text on one line and marks runs of anything else', () => {
    expect(excerpt('<h1>Bad\r\n\tGateway</h1>')).toBe('<h1>Bad Gateway</h1>');
    expect(excerpt('ok\u0000\u0001\u001b[31m\uFFFD\uFFFDend')).toBe('ok·[31m·end');
    expect(excerpt('x'.repeat(200))).toBe(`${'x'.repeat(160)}…`);
  });

  // Issue 61: the excerpt is scrubbed before it is cut or collapsed.
  const secret = 'http-excerpt-secret 1234';
  registerSecret(secret);

  it('never shows the first characters of a secret the cut at 160 would split', () => {
    const shown = excerpt(`${'x'.repeat(155)}${secret} tail`);
    expect(shown).toBe(`${'x'.repeat(155)}…`);
  });

  it('scrubs a secret spread over lines before joining them into one', () => {
    registerSecret('multi\n  line\r\n\tsecret');
    expect(excerpt('<pre>\nmulti\n  line\r\n\tsecret\n</pre>')).toBe('<pre> [redacted] </pre>');
  });

  it('redacts the start of a secret at the end of a body the server cut short', () => {
    expect(excerpt(`{"error":"no such client: ${secret.slice(0, 10)}`)).toBe('{"error":"no such client: [redacted]');
  });
});

describe('postJson body bytes', () => {
  // An export page of ~600 KB: rows with multi-byte text, "],[" inside strings, one long literal.
  const page = JSON.stringify({
    ok: true,
    result: { navigation: { totalRows: 4000 }, rows: Array.from({ length: 4000 }, (_, i) => [`INC-${i}`, 'ü],["漢 '.repeat(i % 20), i === 3999 ? 'LONG' : i]) },
  }).replace('"LONG"', '12345678901234567890');
  // 12 MB of JSON in 64 KB writes: undici hands it over in many chunks, which are concatenated.
  const bigBody = JSON.stringify({ rows: Array.from({ length: 12 * 1024 }, (_, i) => `${String(i).padStart(8, '0')}${'é'.repeat(504)}`) });
  let bodies: Server;
  let bodiesUrl: string;
  beforeAll(async () => {
    bodies = createServer((req, res) => {
      req.resume();
      if (req.url === '/one-write') {
        res.end('{"ok":"one chunk, not ours to free"}');
        return;
      }
      if (req.url === '/page' || req.url === '/page-cut') {
        const bytes = Buffer.from(req.url === '/page' ? page : page.slice(0, -3));
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(bytes.length) });
        for (let at = 0; at < bytes.length; at += 10_000) res.write(bytes.subarray(at, at + 10_000));
        res.end();
        return;
      }
      const bytes = Buffer.from(bigBody);
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(bytes.length) });
      for (let at = 0; at < bytes.length; at += 65536) res.write(bytes.subarray(at, at + 65536));
      res.end();
    });
    await new Promise<void>((resolve) => bodies.listen(0, '127.0.0.1', resolve));
    bodiesUrl = `http://127.0.0.1:${(bodies.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    bodies.closeAllConnections();
    await new Promise((resolve) => bodies.close(resolve));
  });

  it("gives a decoded body's bytes back at once, not at the next garbage collection, and keeps the text", async () => {
    const answer = await postJson({ url: `${bodiesUrl}/big`, body: {}, dispatcher, timeouts: { headersMs: 5000, bodyMs: 5000 } });
    const bodyMb = Buffer.byteLength(bigBody) / 2 ** 20;
    const before = process.memoryUsage().arrayBuffers / 2 ** 20;
    expect(answer.text).toBe(bigBody);
    const after = process.memoryUsage().arrayBuffers / 2 ** 20;
    // No collection ran in between (nothing allocated enough); only the release can explain it.
    expect(before - after).toBeGreaterThan(bodyMb * 0.9);
    // Read again: the same text, from the cache, not from the freed bytes.
    expect(answer.text).toBe(bigBody);
    expect(JSON.parse(answer.text).rows[12 * 1024 - 1]).toMatch(/^00012287é/);
  });

  it('parses a page from its bytes in slices (json), exact numbers kept, and gives the bytes back', async () => {
    const answer = await postJson({ url: `${bodiesUrl}/page`, body: {}, dispatcher, timeouts: { headersMs: 5000, bodyMs: 5000 } });
    const parsed = answer.json!({ slicedArray: ['result', 'rows'] });
    expect(parsed).toEqual(parseJsonBody(page));
    expect((parsed as { value: { result: { rows: unknown[][] } } }).value.result.rows[3999]![2]).toEqual(new ExactNumber('12345678901234567890'));
    // Read once: the bytes were given back.
    expect(answer.text).toBe('');
  });

  it('keeps a page that is not JSON readable as text, for the error', async () => {
    const answer = await postJson({ url: `${bodiesUrl}/page-cut`, body: {}, dispatcher, timeouts: { headersMs: 5000, bodyMs: 5000 } });
    const parsed = answer.json!({ slicedArray: ['result', 'rows'] });
    expect(parsed).toEqual(parseJsonBody(page.slice(0, -3)));
    expect(parsed.ok).toBe(false);
    expect(answer.text).toBe(page.slice(0, -3));
  });

  it("leaves a body that arrived in one chunk (undici's buffer) as it is, and decodes it", async () => {
    const answer = await postJson({ url: `${bodiesUrl}/one-write`, body: {}, dispatcher, timeouts: { headersMs: 5000, bodyMs: 5000 } });
    expect(answer.text).toBe('{"ok":"one chunk, not ours to free"}');
    expect(answer.text).toBe('{"ok":"one chunk, not ours to free"}');
  });
});
