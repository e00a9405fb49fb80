import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from './index.js';
import { exportPage, item, postJson, tokenBody } from './test-client.js';

describe('token endpoint', () => {
  let sandbox: Sandbox;
  beforeAll(async () => {
    sandbox = await startSandbox({ incidents: 20 });
  });
  afterAll(() => sandbox.close());
  const tokenUrl = () => `${sandbox.url}/oauth/token`;

  it('issues a Bearer token with its lifetime for valid client credentials', async () => {
    const answer = await postJson(tokenUrl(), tokenBody(sandbox));
    expect(answer.status).toBe(200);
    expect(answer.json).toMatchObject({ token_type: 'Bearer', expires_in: 3600 });
    expect(answer.json.access_token).toMatch(/^[A-Za-z0-9_-]{40,}$/);
    expect(answer.headers.get('cache-control')).toBe('no-store');
  });

  it('issues a different token on every request', async () => {
    const a = await postJson(tokenUrl(), tokenBody(sandbox));
    const b = await postJson(tokenUrl(), tokenBody(sandbox));
    expect(a.json.access_token).not.toBe(b.json.access_token);
  });

  it('defaults the audience to the host name of its URL', () => {
    expect(sandbox.audience).toBe(new URL(sandbox.url).hostname);
    expect(sandbox.audience).toBe('127.0.0.1');
  });

  it('takes the audience from the host it listens on', async () => {
    const local = await startSandbox({ incidents: 1, host: 'localhost' });
    try {
      expect(local.audience).toBe('localhost');
      expect(local.url).toMatch(/^http:\/\/localhost:\d+$/);
      expect((await postJson(`${local.url}/oauth/token`, tokenBody(local))).status).toBe(200);
    } finally {
      await local.close();
    }
  });

  it('accepts a charset parameter on the content type', async () => {
    const answer = await postJson(tokenUrl(), tokenBody(sandbox), { 'content-type': 'application/json; charset=utf-8' });
    expect(answer.status).toBe(200);
  });

  it.each([
    ['a wrong client secret', { client_secret: 'nope' }],
    ['an unknown client id', { client_id: 'someone-else' }],
    ['a missing client secret', { client_secret: undefined }],
  ])('returns 401 invalid_client for %s', async (_case, overrides) => {
    const answer = await postJson(tokenUrl(), tokenBody(sandbox, overrides));
    expect(answer.status).toBe(401);
    expect(answer.json).toEqual({ error: 'invalid_client', error_description: expect.any(String) });
  });

  it('authenticates the client before judging the grant (an unknown client learns nothing else)', async () => {
    const answer = await postJson(tokenUrl(), tokenBody(sandbox, { client_secret: 'nope', grant_type: 'password' }));
    expect(answer.status).toBe(401);
    expect(answer.json.error).toBe('invalid_client');
  });

  it.each([
    ['a wrong grant type', { grant_type: 'password' }],
    ['a missing grant type', { grant_type: undefined }],
  ])('returns 400 unsupported_grant_type for %s', async (_case, overrides) => {
    const answer = await postJson(tokenUrl(), tokenBody(sandbox, overrides));
    expect(answer.status).toBe(400);
    expect(answer.json).toEqual({ error: 'unsupported_grant_type', error_description: expect.any(String) });
  });

  it('returns 400 invalid_grant for a refresh request (no refresh tokens are issued)', async () => {
    const answer = await postJson(tokenUrl(), tokenBody(sandbox, { grant_type: 'refresh_token', refresh_token: 'abc' }));
    expect(answer.status).toBe(400);
    expect(answer.json).toEqual({ error: 'invalid_grant', error_description: expect.stringContaining('client_credentials') });
  });

  it('returns 403 access_denied for a wrong audience', async () => {
    const answer = await postJson(tokenUrl(), tokenBody(sandbox, { audience: 'other-tenant.example.com' }));
    expect(answer.status).toBe(403);
    expect(answer.json).toEqual({ error: 'access_denied', error_description: expect.stringContaining('other-tenant.example.com') });
  });

  it('returns 400 invalid_request for a missing audience', async () => {
    const answer = await postJson(tokenUrl(), tokenBody(sandbox, { audience: undefined }));
    expect(answer.status).toBe(400);
    expect(answer.json.error).toBe('invalid_request');
  });

  it.each([
    ['a body that is not JSON', '{"client_id": ', {}],
    ['a JSON array', '[]', {}],
    ['a form-encoded body', 'client_id=a&client_secret=b', { 'content-type': 'application/x-www-form-urlencoded' }],
  ])('returns 400 invalid_request for %s', async (_case, body, headers) => {
    const answer = await postJson(tokenUrl(), body, headers);
    expect(answer.status).toBe(400);
    expect(answer.json).toEqual({ error: 'invalid_request', error_description: expect.any(String) });
  });

  it('returns 405 for a GET', async () => {
    const response = await fetch(tokenUrl());
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('POST');
  });

  it('accepts a custom client id, secret and audience', async () => {
    const custom = await startSandbox({ incidents: 1, clientId: 'acme', clientSecret: 's3cret', audience: 'acme.incidents.example.com' });
    try {
      const ok = await postJson(`${custom.url}/oauth/token`, tokenBody(custom));
      expect(ok.status).toBe(200);
      expect(custom).toMatchObject({ clientId: 'acme', clientSecret: 's3cret', audience: 'acme.incidents.example.com' });
      const wrong = await postJson(`${custom.url}/oauth/token`, tokenBody(custom, { audience: '127.0.0.1' }));
      expect(wrong.status).toBe(403);
    } finally {
      await custom.close();
    }
  });
});

describe('token lifetime', () => {
  it('makes the export endpoint answer 401 once the token has expired', async () => {
    const sandbox = await startSandbox({ incidents: 5, tokenLifetimeSeconds: 0.3 });
    try {
      const answer = await postJson(`${sandbox.url}/oauth/token`, tokenBody(sandbox));
      expect(answer.json.expires_in).toBe(0.3);
      const token = answer.json.access_token as string;
      const query = { items: [item('Number', '[incident.number]', 'number')] };
      expect((await exportPage(sandbox, token, query)).status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 400));
      const expired = await exportPage(sandbox, token, query);
      expect(expired.status).toBe(401);
      expect(expired.json).toEqual({ error: { status: 401, message: 'token expired' } });
    } finally {
      await sandbox.close();
    }
  });
});
