import { readdir, readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import * as undici from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent, DecoratorHandler, request } from '../../src/source/undici-parts.js';

let server: Server;
let base: string;
const seen: Array<{ method?: string; url?: string; body: string; host?: string }> = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      seen.push({ method: req.method, url: req.url, body, host: req.headers.host });
      res.writeHead(201, { 'content-type': 'text/plain', 'x-answer': 'yes' }).end('answered');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe('undici-parts', () => {
  it('request sends method, path, query and body through the given dispatcher, and returns the answer', async () => {
    const dispatcher = new Agent();
    try {
      const answer = await request(`${base}/api/v1/export?tile=a%20b&page=2`, {
        method: 'POST',
        dispatcher,
        body: '{"x":1}',
        headers: { 'content-type': 'application/json' },
      });
      expect(answer.statusCode).toBe(201);
      expect(answer.headers['x-answer']).toBe('yes');
      expect(await answer.body.text()).toBe('answered');
      expect(seen.at(-1)).toEqual({ method: 'POST', url: '/api/v1/export?tile=a%20b&page=2', body: '{"x":1}', host: new URL(base).host });
    } finally {
      await dispatcher.close();
    }
  });

  it("request takes a URL object and a root path; it never falls back to undici's global dispatcher", async () => {
    let dispatched = 0;
    const dispatcher = new Agent().compose((dispatch) => (options, handler) => {
      dispatched += 1;
      return dispatch(options, handler);
    });
    const answer = await request(new URL(base), { method: 'GET', dispatcher });
    await answer.body.dump();
    expect(seen.at(-1)?.url).toBe('/');
    expect(dispatched).toBe(1);
    await dispatcher.close();
  });

  it('are the classes undici\'s index exports, so an Agent a test makes from "undici" is one of ours', () => {
    expect(Agent).toBe(undici.Agent);
    expect(DecoratorHandler).toBe(undici.DecoratorHandler);
    expect(new undici.Agent()).toBeInstanceOf(Agent);
  });

  it('is the only way src/ loads undici at run time outside the gs:// writer (its index costs ~12 MB more RSS)', async () => {
    const offenders: string[] = [];
    for (const entry of await readdir('src', { recursive: true, withFileTypes: true })) {
      if (!entry.isFile() || !entry.name.endsWith('.ts') || entry.name.endsWith('.d.ts')) continue;
      const file = path.join(entry.parentPath, entry.name);
      const text = await readFile(file, 'utf8');
      // A value import (not `import type`) of the index; the Cloud Storage path loads on demand.
      if (/^import (?!type )[^;]*from 'undici';/m.test(text) && !file.startsWith(path.join('src', 'sinks', 'stores', 'gcs'))) offenders.push(file);
    }
    expect(offenders).toEqual([]);
  });
});
