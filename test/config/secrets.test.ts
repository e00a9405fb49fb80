import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/config-error.js';
import type { SourceConfig } from '../../src/config/environment-schema.js';
import { loadEnvironment } from '../../src/config/load-config.js';
import { audienceOf, resolveCredentials } from '../../src/config/secrets.js';
import { REDACTED, scrubSecrets } from '../../src/secret-scrubber.js';
import { tempDirEachTest } from '../support/temp-dir-hooks.js';

const base: SourceConfig = {
  baseUrl: 'https://acme.incidents.example.com/',
  authUrl: 'https://auth.example.com',
  clientId: '${CLIENT_ID}',
  clientSecret: '${CLIENT_SECRET}',
  tileParam: 'tileId',
  itemsPerPage: 50,
  requestTimeoutMs: 1000,
  requestDeadlineMs: 120_000,
  tokenScope: 'run',
  clock: 'source',
  concurrency: 4,
  allowInsecureHttp: false,
};

const dir = tempDirEachTest();

describe('resolveCredentials', () => {
  it('reads ${ENV} references from the environment', async () => {
    await expect(resolveCredentials(base, 'env.yaml', { CLIENT_ID: 'id-1', CLIENT_SECRET: 's3cret' })).resolves.toEqual({
      clientId: 'id-1',
      clientSecret: 's3cret',
    });
  });

  it('accepts a literal client id (ids are not secret)', async () => {
    const creds = await resolveCredentials({ ...base, clientId: 'literal-id' }, 'env.yaml', { CLIENT_SECRET: 'x' });
    expect(creds.clientId).toBe('literal-id');
  });

  it('reads a mounted secret file and drops its trailing newline', async () => {
    const file = path.join(dir.path, 'secret');
    await writeFile(file, 'from-file\n');
    const { clientSecret: _omit, ...rest } = base;
    const creds = await resolveCredentials({ ...rest, clientSecretFile: file }, 'env.yaml', { CLIENT_ID: 'id' });
    expect(creds.clientSecret).toBe('from-file');
  });

  it('names the missing variable and field, never a value', async () => {
    const error = await resolveCredentials(base, 'env.yaml', { CLIENT_ID: 'id' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect(error).toMatchObject({ code: 'config_invalid' });
    expect((error as ConfigError).message).toBe('env.yaml: source.clientSecret = "${CLIENT_SECRET}": environment variable CLIENT_SECRET is not set');
  });

  it('names an unreadable secret file', async () => {
    const { clientSecret: _omit, ...rest } = base;
    const missing = path.join(dir.path, 'nope');
    const error = await resolveCredentials({ ...rest, clientSecretFile: missing }, 'env.yaml', { CLIENT_ID: 'id' }).catch((e: unknown) => e);
    expect((error as ConfigError).message).toContain(`source.clientSecretFile = ${JSON.stringify(missing)}: cannot read the secret file (ENOENT)`);
  });

  it('registers the secret and a client id from the environment with the scrubber', async () => {
    await resolveCredentials(base, 'env.yaml', { CLIENT_ID: 'env-client-id-77', CLIENT_SECRET: 'env-secret-value-77' });
    expect(scrubSecrets('id env-client-id-77, secret env-secret-value-77')).toBe(`id ${REDACTED}, secret ${REDACTED}`);
  });

  it('registers values read from files with the scrubber', async () => {
    const idFile = path.join(dir.path, 'id');
    const secretFile = path.join(dir.path, 'secret');
    await writeFile(idFile, 'file-client-id-78\n');
    await writeFile(secretFile, 'file-secret-value-78\n');
    const { clientId: _id, clientSecret: _secret, ...rest } = base;
    await resolveCredentials({ ...rest, clientIdFile: idFile, clientSecretFile: secretFile }, 'env.yaml', {});
    expect(scrubSecrets('file-client-id-78 file-secret-value-78')).toBe(`${REDACTED} ${REDACTED}`);
  });

  it('does not register a literal client id (it is in the YAML; redacting it would only mangle output)', async () => {
    await resolveCredentials({ ...base, clientId: 'literal-client-id-79' }, 'env.yaml', { CLIENT_SECRET: 'some-secret-79' });
    expect(scrubSecrets('literal-client-id-79')).toBe('literal-client-id-79');
  });

  it('refuses a literal client secret without printing it back', async () => {
    const error = await resolveCredentials({ ...base, clientSecret: 'hunter2-literal' }, 'env.yaml', { CLIENT_ID: 'id' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect(error).toMatchObject({ code: 'config_invalid' });
    expect((error as ConfigError).message).toBe(
      'env.yaml: source.clientSecret: a literal secret is refused (the value is not shown); use ${ENV_NAME} or source.clientSecretFile',
    );
  });
});

describe('a configuration problem on source.clientSecret', () => {
  const yaml = (secret: string) => `source:
  baseUrl: https://acme.incidents.example.com
  authUrl: https://auth.example.com
  clientId: \${CLIENT_ID}
  clientSecret: ${secret}
`;

  it('names file, line and field of a literal secret in YAML, never its value', async () => {
    const file = path.join(dir.path, 'env.yaml');
    await writeFile(file, yaml('hunter2-in-yaml'));
    const error = await loadEnvironment(file).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect(error).toMatchObject({ code: 'config_invalid' });
    expect((error as ConfigError).problems).toEqual([
      { file, field: 'source.clientSecret', line: 5, message: expect.stringMatching(/literal secrets are refused/) },
    ]);
    expect((error as ConfigError).message).toBe(`${file}:5: source.clientSecret: ${(error as ConfigError).problems[0]!.message}`);
    expect((error as ConfigError).message).not.toContain('hunter2');
  });

  it('hides a value of the wrong type too (it may still be the secret)', async () => {
    const file = path.join(dir.path, 'env.yaml');
    await writeFile(file, yaml('12345678'));
    const error = (await loadEnvironment(file).catch((e: unknown) => e)) as ConfigError;
    expect(error.problems.map((problem) => problem.field)).toEqual(['source.clientSecret']);
    expect(error.message).not.toContain('12345678');
  });

  it('still shows an ${ENV} reference, which is no secret', async () => {
    const error = ConfigError.single({
      file: 'env.yaml',
      field: 'source.clientSecret',
      value: '"${MISSING}"',
      message: 'environment variable MISSING is not set',
    });
    expect(error.message).toBe('env.yaml: source.clientSecret = "${MISSING}": environment variable MISSING is not set');
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
