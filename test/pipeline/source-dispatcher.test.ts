/**
 * createSourceDispatcher speaks HTTP/1.1 to the source even when a TLS server offers HTTP/2:
 * undici 8 negotiates HTTP/2 by default, and every page-concurrency, timeout and dropped-connection
 * guarantee the fault tests prove was proved over HTTP/1.1.
 */
import { spawnSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createSecureServer, type Http2SecureServer } from 'node:http2';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { rootCertificates, setDefaultCACertificates } from 'node:tls';
import { Agent, request, type Dispatcher } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSourceDispatcher } from '../../src/pipeline/source-session.js';
import { tempDirForAll } from '../support/temp-dir-hooks.js';

let server: Http2SecureServer;
let origin: string;
const dir = tempDirForAll('tilehouse-h2-');

beforeAll(async () => {
  // A throwaway self-signed certificate for 127.0.0.1, made now so that it never expires in the repository.
  const made = spawnSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
      '-keyout',
      path.join(dir.path, 'key.pem'),
      '-out',
      path.join(dir.path, 'cert.pem'),
    ],
    { encoding: 'utf8' },
  );
  if (made.status !== 0) throw new Error(`openssl could not make a test certificate: ${made.stderr}`);
  const cert = await readFile(path.join(dir.path, 'cert.pem'), 'utf8');
  // Trusted the way a real source's certificate is: through the default CA list, which is what the
  // production dispatcher uses (it takes no connect options).
  setDefaultCACertificates([...rootCertificates, cert]);
  // Offers h2 first in ALPN and still answers HTTP/1.1, as a modern API gateway does.
  server = createSecureServer({ key: await readFile(path.join(dir.path, 'key.pem')), cert, allowHTTP1: true }, (req, res) => {
    res.end(req.httpVersion);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server?.close(() => resolve()));
});

async function httpVersionVia(dispatcher: Dispatcher): Promise<string> {
  try {
    const response = await request(`${origin}/v1/export`, { dispatcher });
    return await response.body.text();
  } finally {
    await dispatcher.close();
  }
}

describe('createSourceDispatcher', () => {
  it('speaks HTTP/1.1 to a TLS source that offers HTTP/2', async () => {
    expect(await httpVersionVia(createSourceDispatcher())).toBe('1.1');
  });

  it('is needed: undici 8 left at its defaults negotiates HTTP/2 with the same server', async () => {
    expect(await httpVersionVia(new Agent())).toBe('2.0');
  });
});
