import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { GoogleCredentialsRejectedError, GoogleCredentialsUnavailableError, googleCredentialsFailureIn } from '../../../src/sinks/google/credential-errors.js';
import { GoogleCredentials } from '../../../src/sinks/google/google-credentials.js';
import { startFakeMetadataServer, TEST_SERVICE_ACCOUNT, type FakeMetadataServer } from '../../support/fake-metadata-server.js';
import { makeServiceAccountKey, startFakeOAuthServer, writeKeyFile, type FakeOAuthServer } from '../../support/fake-oauth-server.js';
import { TokenBook } from '../../support/google-token-book.js';
import { tempDirForAll } from '../../support/temp-dir-hooks.js';

/**
 * GoogleCredentials against a fake metadata server in this process: gcp-metadata reads
 * GCE_METADATA_HOST from process.env itself, so it is set for each test and restored after.
 */
const NAMES = [
  'GCE_METADATA_HOST',
  'GCE_METADATA_IP',
  'METADATA_SERVER_DETECTION',
  'GOOGLE_APPLICATION_CREDENTIALS',
  'CLOUDSDK_CONFIG',
  'GOOGLE_CLOUD_PROJECT',
] as const;
const saved = Object.fromEntries(NAMES.map((name) => [name, process.env[name]]));
const temp = tempDirForAll();
let metadata: FakeMetadataServer | undefined;
let oauth: FakeOAuthServer | undefined;

beforeAll(async () => {
  await mkdir(path.join(temp.path, 'gcloud'));
});
afterEach(async () => {
  await metadata?.close();
  await oauth?.close();
  metadata = undefined;
  oauth = undefined;
  for (const name of NAMES) {
    if (saved[name] === undefined) delete process.env[name];
    else process.env[name] = saved[name];
  }
  // The library remembers "no metadata server" for the process; each test starts from nothing.
  const { gcpMetadata } = await import('google-auth-library');
  gcpMetadata.resetIsAvailableCache();
});

function useMetadata(server: FakeMetadataServer): GoogleCredentials {
  for (const name of NAMES) delete process.env[name];
  process.env.GCE_METADATA_HOST = server.host;
  process.env.CLOUDSDK_CONFIG = path.join(temp.path, 'gcloud');
  // Without a project the library asks `gcloud config config-helper` (a child process, seconds on
  // a busy machine) before the metadata server: the CLI tests keep that, these need not.
  process.env.GOOGLE_CLOUD_PROJECT = 'test-project';
  return new GoogleCredentials({ waitMs: 4_000 });
}

describe('GoogleCredentials with a metadata server (Workload Identity)', () => {
  it('sends the token the metadata server issued, and says which service account it is', async () => {
    const book = new TokenBook();
    metadata = await startFakeMetadataServer({ book });
    const credentials = useMetadata(metadata);
    const headers = await credentials.requestHeaders('https://bigquery.googleapis.com/bigquery/v2/projects/p/datasets');
    expect(book.verdict(headers.get('authorization') ?? undefined).verdict).toBe('valid');
    expect(await credentials.identity()).toBe(TEST_SERVICE_ACCOUNT);
    expect(await credentials.principal()).toBe(`service account ${TEST_SERVICE_ACCOUNT}`);
    expect(metadata.requests.every((request) => request.flavored)).toBe(true);
  });

  it('waits out 503s on the token path and a refused start, within the wait', async () => {
    const book = new TokenBook();
    metadata = await startFakeMetadataServer({ book, refuseForMs: 700, tokenUnavailableForMs: 1_500 });
    const credentials = useMetadata(metadata);
    const started = Date.now();
    const headers = await credentials.requestHeaders();
    expect(book.verdict(headers.get('authorization') ?? undefined).verdict).toBe('valid');
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_400);
    expect(metadata.requests.some((request) => request.status === 503)).toBe(true);
  });

  it('gives up after the wait with google_credentials_unavailable, naming the server and the wait, never the library phrase that makes clients go anonymous', async () => {
    metadata = await startFakeMetadataServer({ book: new TokenBook(), unavailableForMs: 60_000 });
    const credentials = useMetadata(metadata);
    const started = Date.now();
    const error = await credentials.requestHeaders().catch((caught: unknown) => caught);
    const elapsed = Date.now() - started;
    expect(error).toBeInstanceOf(GoogleCredentialsUnavailableError);
    expect(error).toMatchObject({ code: 'google_credentials_unavailable' });
    expect((error as Error).message).toContain(metadata.host);
    expect((error as Error).message).toMatch(/within 4000 ms \(googleCredentialsWaitMs/);
    expect((error as Error).message).not.toMatch(/Could not load the default credentials/);
    expect(elapsed).toBeGreaterThanOrEqual(2_000);
    expect((error as Error).message).toMatch(/\(googleCredentialsWaitMs; [2-9]\d* tries\)/);
    // The run's next request (the ledger's record of the failure) tries once instead of waiting again.
    await expect(credentials.requestHeaders()).rejects.toMatchObject({
      code: 'google_credentials_unavailable',
      message: expect.stringContaining('(googleCredentialsWaitMs; 1 try)'),
    });
  });

  it('takes a fresh token after invalidate (a 401), and the old one is not sent again', async () => {
    const book = new TokenBook();
    metadata = await startFakeMetadataServer({ book });
    const credentials = useMetadata(metadata);
    const first = (await credentials.requestHeaders()).get('authorization');
    expect((await credentials.requestHeaders()).get('authorization')).toBe(first);
    credentials.invalidate();
    await new Promise((resolve) => setImmediate(resolve));
    const second = (await credentials.requestHeaders()).get('authorization');
    expect(second).not.toBe(first);
    expect(book.verdict(second ?? undefined).verdict).toBe('valid');
  });
});

describe('GoogleCredentials without any credentials', () => {
  it('fails at once with google_credentials_unavailable when no metadata server is expected and no key file is set', async () => {
    for (const name of NAMES) delete process.env[name];
    process.env.CLOUDSDK_CONFIG = path.join(temp.path, 'gcloud');
    // Off GCP, with nothing named: the library probes 169.254.169.254 (a 3 s timeout at most) and finds nothing.
    process.env.METADATA_SERVER_DETECTION = 'none';
    const credentials = new GoogleCredentials({ waitMs: 10_000, env: { CLOUDSDK_CONFIG: path.join(temp.path, 'gcloud') } });
    const error = await credentials.requestHeaders().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(GoogleCredentialsUnavailableError);
    expect(error).toMatchObject({ code: 'google_credentials_unavailable' });
    expect((error as Error).message).toMatch(/no Application Default Credentials were found/);
    // At once: refused on the first try, not after the 10 s wait (that message says "within 10000 ms (...; N tries)").
    expect((error as Error).message).not.toMatch(/googleCredentialsWaitMs/);
  });

  it('reports an unreadable key file at once, naming it', async () => {
    for (const name of NAMES) delete process.env[name];
    const file = path.join(temp.path, 'missing-key.json');
    process.env.GOOGLE_APPLICATION_CREDENTIALS = file;
    const credentials = new GoogleCredentials({ waitMs: 10_000 });
    const error = await credentials.requestHeaders().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(GoogleCredentialsUnavailableError);
    expect(error).toMatchObject({ code: 'google_credentials_unavailable' });
    expect((error as Error).message).toContain(file);
    // At once: not after the 10 s wait, which would say "within 10000 ms (googleCredentialsWaitMs; N tries)".
    expect((error as Error).message).not.toMatch(/googleCredentialsWaitMs/);
  });
  it('reports a key file that is not JSON by its place, never quoting its text (issue 61: the parser quotes the private key)', async () => {
    for (const name of NAMES) delete process.env[name];
    const privateKey = 'MIIEvQIBADANBgkqhkiG9w0BAQEFAASC-PrivKeyZq9Xw7';
    const file = path.join(temp.path, 'broken-key.json');
    // The key's quotes lost: Node's JSON.parse quotes the text around where it stopped (`..."ate_key": MIIEvQIBAD"...`).
    await writeFile(file, `{\n  "type": "service_account",\n  "private_key": ${privateKey},\n  "client_email": "x@y.iam.gserviceaccount.com"\n}\n`);
    process.env.GOOGLE_APPLICATION_CREDENTIALS = file;
    const credentials = new GoogleCredentials({ waitMs: 10_000 });
    const error = await credentials.requestHeaders().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(GoogleCredentialsUnavailableError);
    const message = (error as Error).message;
    expect(message).toContain(file);
    expect(message).toMatch(/: the file is not valid JSON$/);
    for (let start = 0; start + 6 <= privateKey.length; start += 1) expect(message).not.toContain(privateKey.slice(start, start + 6));
    expect(message).not.toContain('client_email');
  });
});

describe('GoogleCredentials with a service-account key file', () => {
  function useKeyFile(file: string): GoogleCredentials {
    for (const name of NAMES) delete process.env[name];
    process.env.GOOGLE_APPLICATION_CREDENTIALS = file;
    return new GoogleCredentials({ waitMs: 4_000 });
  }

  it('sends the token its token_uri issued for an assertion signed with the key, and says which service account it is', async () => {
    const book = new TokenBook();
    const key = makeServiceAccountKey();
    oauth = await startFakeOAuthServer({ book, publicKey: key.publicKey, email: key.email });
    const file = path.join(temp.path, 'key.json');
    await writeKeyFile(file, key, oauth.tokenUri);
    const credentials = useKeyFile(file);
    const headers = await credentials.requestHeaders('https://storage.googleapis.com/storage/v1/b/x/o');
    const { verdict, token } = book.verdict(headers.get('authorization') ?? undefined);
    expect(verdict).toBe('valid');
    expect(book.issued.find((issued) => issued.token === token)?.issuer).toBe('oauth');
    expect(oauth.grants).toEqual([{ issuer: key.email, verified: true, status: 200 }]);
    expect(await credentials.identity()).toBe(key.email);
  });

  it('fails with google_credentials_rejected, without waiting, when the token endpoint refuses the assertion (a key Google no longer has)', async () => {
    const book = new TokenBook();
    const key = makeServiceAccountKey();
    const other = makeServiceAccountKey(key.email);
    oauth = await startFakeOAuthServer({ book, publicKey: other.publicKey, email: key.email });
    const file = path.join(temp.path, 'revoked-key.json');
    await writeKeyFile(file, key, oauth.tokenUri);
    const credentials = useKeyFile(file);
    const error = await credentials.requestHeaders().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(GoogleCredentialsRejectedError);
    expect(error).toMatchObject({ code: 'google_credentials_rejected' });
    expect((error as Error).message).toContain(file);
    expect((error as Error).message).toMatch(/invalid_grant|Invalid JWT Signature/);
    // Without waiting: the token endpoint was asked once, not again until the wait ran out.
    expect(oauth.grants).toHaveLength(1);
    expect(oauth.grants.every((grant) => !grant.verified)).toBe(true);
  });

  it('refuses a token_uri on plain http to another host (the assertion is a credential)', async () => {
    const key = makeServiceAccountKey();
    const file = path.join(temp.path, 'http-key.json');
    await writeKeyFile(file, key, 'http://oauth.example.com/token');
    const error = await useKeyFile(file)
      .requestHeaders()
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(GoogleCredentialsUnavailableError);
    expect(error).toMatchObject({ code: 'google_credentials_unavailable' });
    expect((error as Error).message).toMatch(/only https:\/\//);
  });
});

describe('googleCredentialsFailureIn', () => {
  it('finds a credentials failure through wrappers, and nothing in an ordinary error', () => {
    const rejected = new GoogleCredentialsRejectedError('refused');
    expect(googleCredentialsFailureIn(new Error('outer', { cause: new Error('middle', { cause: rejected }) }))).toBe(rejected);
    expect(googleCredentialsFailureIn(new Error('plain'))).toBeUndefined();
  });
});
