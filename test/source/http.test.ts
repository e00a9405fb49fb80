import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isTransientNetworkError, postJson } from '../../src/source/http.js';

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
