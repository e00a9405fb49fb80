import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { RestAuthorization } from '../../../src/sinks/iceberg/rest-auth.js';

/** An OAuth2 token endpoint that answers every request with `status` and `body`. */
async function endpoint(status: number, body: string): Promise<{ url: string; close: () => void }> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(status, { 'content-type': 'text/plain' }).end(body));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/oauth/tokens`, close: () => server.close() };
}

describe('RestAuthorization: the token endpoint’s answer in its errors (issue 61)', () => {
  it.each([500, 401])('cuts the answer (HTTP %i) at 300 characters before the client secret, never through it', async (status) => {
    const secret = `rest-client-secret-${status}-xyz`;
    const server = await endpoint(status, `${'p'.repeat(296)}${secret}&grant_type=client_credentials`);
    try {
      const auth = new RestAuthorization('http://catalog', { type: 'oauth2', clientId: 'loader', clientSecret: secret, serverUri: server.url }, 5_000);
      const message = await auth.headers({ method: 'GET', url: new URL('http://catalog/v1/config'), headers: {} }).then(
        () => 'no error',
        (error: Error) => error.message,
      );
      expect(message).toContain(`${'p'.repeat(296)}…`);
      expect(message).not.toContain(secret.slice(0, 3));
    } finally {
      server.close();
    }
  });
});
