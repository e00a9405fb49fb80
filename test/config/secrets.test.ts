import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/config-error.js';
import type { SourceConfig } from '../../src/config/environment-schema.js';
import { audienceOf, resolveCredentials } from '../../src/config/secrets.js';
import { makeTempDir } from '../support/temp-dir.js';

const base: SourceConfig = {
  baseUrl: 'https://acme.incidents.example.com/',
  authUrl: 'https://auth.example.com',
  clientId: '${CLIENT_ID}',
  clientSecret: '${CLIENT_SECRET}',
  tileParam: 'tileId',
  itemsPerPage: 50,
  requestTimeoutMs: 1000,
  concurrency: 4,
  allowInsecureHttp: false,
};

let dir: string;
beforeEach(async () => {
  dir = await makeTempDir();
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('resolveCredentials', () => {
  it('reads ${ENV} references from the environment', async () => {
    await expect(resolveCredentials(base, 'env.yaml', { CLIENT_ID: 'id-1', CLIENT_SECRET: 's3cret' })).resolves.toEqual({ clientId: 'id-1', clientSecret: 's3cret' });
  });

  it('accepts a literal client id (ids are not secret)', async () => {
    const creds = await resolveCredentials({ ...base, clientId: 'literal-id' }, 'env.yaml', { CLIENT_SECRET: 'x' });
    expect(creds.clientId).toBe('literal-id');
  });

  it('reads a mounted secret file and drops its trailing newline', async () => {
    const file = path.join(dir, 'secret');
    await writeFile(file, 'from-file\n');
    const { clientSecret: _omit, ...rest } = base;
    const creds = await resolveCredentials({ ...rest, clientSecretFile: file }, 'env.yaml', { CLIENT_ID: 'id' });
    expect(creds.clientSecret).toBe('from-file');
  });

  it('names the missing variable and field, never a value', async () => {
    const error = await resolveCredentials(base, 'env.yaml', { CLIENT_ID: 'id' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toBe('env.yaml: source.clientSecret = "${CLIENT_SECRET}": environment variable CLIENT_SECRET is not set');
  });

  it('names an unreadable secret file', async () => {
    const { clientSecret: _omit, ...rest } = base;
    const missing = path.join(dir, 'nope');
    const error = await resolveCredentials({ ...rest, clientSecretFile: missing }, 'env.yaml', { CLIENT_ID: 'id' }).catch((e: unknown) => e);
    expect((error as ConfigError).message).toContain(`source.clientSecretFile = ${JSON.stringify(missing)}: cannot read the secret file (ENOENT)`);
  });
});

describe('audienceOf', () => {
  it('defaults to the host name of baseUrl', () => {
    expect(audienceOf(base)).toBe('acme.incidents.example.com');
    expect(audienceOf({ ...base, baseUrl: 'http://127.0.0.1:8787' })).toBe('127.0.0.1');
  });
  it('uses the configured audience when set', () => {
    expect(audienceOf({ ...base, audience: 'tenant.example.com' })).toBe('tenant.example.com');
  });
});
