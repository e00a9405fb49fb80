import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { excerpt, isTransientNetworkError, postJson, RequestDeadlineError } from '../../src/source/http.js';
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
      const started = Date.now();
      const error = await postJson({ url: `${hostile.url}/x`, body: {}, dispatcher, timeouts: { headersMs: 5000, bodyMs: 5000, totalMs: 400 } }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RequestDeadlineError);
      expect((error as Error).message).toBe('no complete answer within 400 ms');
      expect(isTransientNetworkError(error)).toBe(true);
      expect(Date.now() - started).toBeLessThan(1500);
    } finally {
      await hostile.close();
    }
  });

  it("lets the caller's abort through as it is, not as a missed deadline", async () => {
    const hostile = await trickling();
    try {
      const controller = new AbortController();
      setTimeout(() => controller.abort(new Error('SIGTERM')), 150);
      const error = await postJson({ url: `${hostile.url}/x`, body: {}, dispatcher, timeouts: { headersMs: 5000, bodyMs: 5000, totalMs: 2000 }, signal: controller.signal }).catch((e: unknown) => e);
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
});

