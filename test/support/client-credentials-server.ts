import { once } from 'node:events';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TokenBook } from './google-token-book.js';

/**
 * The OAuth2 client-credentials token endpoint of an Iceberg REST catalog as Apache Polaris serves
 * it (`POST /v1/oauth/tokens`, form-encoded `grant_type=client_credentials`, `client_id`,
 * `client_secret`, `scope`; answers `access_token`, `token_type`, `expires_in`, or 401
 * `invalid_client`), in front of the bearer proxy (bearer-proxy.ts) that lets through only the
 * tokens it gave out (the shared TokenBook); every other request is forwarded to `upstream`.
 */
export interface ClientCredentialsServer {
  origin: string;
  /** Every token request: its form fields (the secret replaced by whether it matched), its content type, the answer's status. */
  grants: Array<{ fields: Record<string, string>; contentType: string | undefined; status: number }>;
  /** Answers the next token requests with this lifetime (`expires_in`, seconds). */
  lifetimeSeconds: number;
  close(): Promise<void>;
}

export async function startClientCredentialsServer(options: {
  upstream: string;
  book: TokenBook;
  clientId: string;
  clientSecret: string;
}): Promise<ClientCredentialsServer> {
  const target = new URL(options.upstream);
  const state = { lifetimeSeconds: 3600 };
  const grants: ClientCredentialsServer['grants'] = [];
  const server: Server = createServer((incoming, response) => {
    if (incoming.method === 'POST' && incoming.url === '/v1/oauth/tokens') {
      const chunks: Buffer[] = [];
      incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
      incoming.on('end', () => {
        const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
        const fields = Object.fromEntries(form.entries());
        const matched = form.get('client_id') === options.clientId && form.get('client_secret') === options.clientSecret;
        const valid = form.get('grant_type') === 'client_credentials' && matched;
        const status = valid ? 200 : 401;
        grants.push({ fields: { ...fields, client_secret: matched ? '(matched)' : '(wrong)' }, contentType: incoming.headers['content-type'], status });
        response.writeHead(status, { 'content-type': 'application/json' });
        if (!valid) {
          response.end(JSON.stringify({ error: 'invalid_client', error_description: 'The client is not authorized' }));
          return;
        }
        const issued = options.book.issue('iceberg-oauth', state.lifetimeSeconds);
        response.end(
          JSON.stringify({
            access_token: issued.token,
            token_type: 'bearer',
            expires_in: state.lifetimeSeconds,
            issued_token_type: 'urn:ietf:params:oauth:token-type:access_token',
          }),
        );
      });
      return;
    }
    const forwarded = request(
      { host: target.hostname, port: target.port, method: incoming.method, path: incoming.url, headers: incoming.headers },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      },
    );
    forwarded.on('error', () => response.destroy());
    incoming.pipe(forwarded);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    grants,
    get lifetimeSeconds() {
      return state.lifetimeSeconds;
    },
    set lifetimeSeconds(value: number) {
      state.lifetimeSeconds = value;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
