import { generateKeyPairSync, randomBytes, verify, type KeyObject } from 'node:crypto';
import { once } from 'node:events';
import { writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TokenBook } from './google-token-book.js';

/**
 * A service account as a key file (`GOOGLE_APPLICATION_CREDENTIALS`) and the OAuth token endpoint
 * its `token_uri` names, on loopback: the endpoint takes the JWT-bearer grant, verifies the
 * assertion's RS256 signature with the key pair's public key (as Google does with the key it
 * holds), its issuer, scope and expiry, and issues a token into the test's TokenBook. An assertion
 * signed by another key is refused as Google refuses it (400 invalid_grant, "Invalid JWT Signature.").
 */
export interface ServiceAccountKey {
  email: string;
  privateKeyPem: string;
  publicKey: KeyObject;
}

export function makeServiceAccountKey(email = 'tilehouse-key@test-project.iam.gserviceaccount.com'): ServiceAccountKey {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { email, privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), publicKey };
}

/** The key file Google would hand out, with `token_uri` pointing where the test says. */
export async function writeKeyFile(file: string, key: ServiceAccountKey, tokenUri: string, projectId = 'test-project'): Promise<void> {
  await writeFile(
    file,
    JSON.stringify({
      type: 'service_account',
      project_id: projectId,
      private_key_id: randomBytes(20).toString('hex'),
      private_key: key.privateKeyPem,
      client_email: key.email,
      client_id: '123456789012345678901',
      auth_uri: 'https://accounts.google.com/o/oauth2/auth',
      token_uri: tokenUri,
      universe_domain: 'googleapis.com',
    }),
    { mode: 0o600 },
  );
}

export interface FakeOAuthServer {
  /** `http://127.0.0.1:PORT/token`, a key file's token_uri. */
  tokenUri: string;
  /** Every grant asked for, with what the server made of it. */
  grants: Array<{ issuer: string | undefined; verified: boolean; status: number }>;
  close(): Promise<void>;
}

export async function startFakeOAuthServer(options: {
  book: TokenBook;
  publicKey: KeyObject;
  email: string;
  tokenLifetimeSeconds?: number;
}): Promise<FakeOAuthServer> {
  const grants: FakeOAuthServer['grants'] = [];
  const lifetime = options.tokenLifetimeSeconds ?? 3600;
  const server: Server = createServer((incoming, response) => {
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () => {
      const answer = (status: number, body: Record<string, unknown>, issuer?: string, verified = false) => {
        grants.push({ issuer, verified, status });
        response.writeHead(status, { 'content-type': 'application/json' });
        response.end(JSON.stringify(body));
      };
      if (incoming.method !== 'POST' || !incoming.url?.startsWith('/token')) return answer(404, { error: 'not_found' });
      const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
      if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer') return answer(400, { error: 'unsupported_grant_type' });
      const [header, payload, signature] = (form.get('assertion') ?? '').split('.');
      if (header === undefined || payload === undefined || signature === undefined)
        return answer(400, { error: 'invalid_grant', error_description: 'Invalid JWT.' });
      let claims: { iss?: string; scope?: string; exp?: number; aud?: string };
      let alg: string | undefined;
      try {
        alg = (JSON.parse(Buffer.from(header, 'base64url').toString('utf8')) as { alg?: string }).alg;
        claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as typeof claims;
      } catch {
        return answer(400, { error: 'invalid_grant', error_description: 'Invalid JWT.' });
      }
      const verified = alg === 'RS256' && verify('RSA-SHA256', Buffer.from(`${header}.${payload}`), options.publicKey, Buffer.from(signature, 'base64url'));
      if (!verified) return answer(400, { error: 'invalid_grant', error_description: 'Invalid JWT Signature.' }, claims.iss);
      if (claims.iss !== options.email) return answer(400, { error: 'invalid_grant', error_description: 'Invalid issuer.' }, claims.iss, true);
      if (!claims.scope?.split(' ').includes('https://www.googleapis.com/auth/cloud-platform'))
        return answer(400, { error: 'invalid_scope' }, claims.iss, true);
      if (typeof claims.exp !== 'number' || claims.exp * 1000 < Date.now())
        return answer(400, { error: 'invalid_grant', error_description: 'Invalid JWT: Token must be a short-lived token.' }, claims.iss, true);
      const issued = options.book.issue('oauth', lifetime);
      answer(200, { access_token: issued.token, expires_in: lifetime, token_type: 'Bearer' }, claims.iss, true);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    tokenUri: `http://127.0.0.1:${(server.address() as AddressInfo).port}/token`,
    grants,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
