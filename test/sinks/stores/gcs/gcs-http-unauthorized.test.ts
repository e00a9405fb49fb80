import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Storage } from '@google-cloud/storage';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../../src/log.js';
import { GcsHttp } from '../../../../src/sinks/stores/gcs/gcs-http.js';
import { GoogleCredentialsRejectedError } from '../../../../src/sinks/google/credential-errors.js';
import { sharedGoogleCredentials } from '../../../../src/sinks/google/google-credentials.js';
import { startBearerProxy, type BearerProxy } from '../../../support/bearer-proxy.js';
import { startFakeMetadataServer, type FakeMetadataServer } from '../../../support/fake-metadata-server.js';
import { TokenBook } from '../../../support/google-token-book.js';

/**
 * The gs:// write path's own requests (gcs-http.ts: uploads, rewrites, deletes) under the 401
 * rule: a token Cloud Storage refuses is dropped and the request sent once more with a fresh one;
 * a second 401 is google_credentials_rejected. Credentials from a fake metadata server, requests
 * through a bearer proxy in front of a server that answers 200.
 */
const saved = { host: process.env.GCE_METADATA_HOST, project: process.env.GOOGLE_CLOUD_PROJECT };
let metadata: FakeMetadataServer;
let upstream: Server;
let proxy: BearerProxy;
const book = new TokenBook();

beforeAll(async () => {
  metadata = await startFakeMetadataServer({ book });
  process.env.GCE_METADATA_HOST = metadata.host;
  process.env.GOOGLE_CLOUD_PROJECT = 'test-project';
  upstream = createServer((_request, response) => response.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  upstream.listen(0, '127.0.0.1');
  await once(upstream, 'listening');
  proxy = await startBearerProxy(`http://127.0.0.1:${(upstream.address() as AddressInfo).port}`, book);
});
afterAll(async () => {
  await proxy.close();
  upstream.close();
  await metadata.close();
  process.env.GCE_METADATA_HOST = saved.host;
  process.env.GOOGLE_CLOUD_PROJECT = saved.project;
  if (saved.host === undefined) delete process.env.GCE_METADATA_HOST;
  if (saved.project === undefined) delete process.env.GOOGLE_CLOUD_PROJECT;
});

function writePath(): GcsHttp {
  const credentials = sharedGoogleCredentials({ waitMs: 4_000 });
  // What GcsHttp reads of a client built for sinks.gcs.apiEndpoint (customEndpoint with auth).
  const storage = {
    apiEndpoint: proxy.origin,
    customEndpoint: true,
    useAuthWithCustomEndpoint: true,
    authClient: credentials.libraryClient,
  } as unknown as Storage;
  return new GcsHttp({ storage, logger: createLogger({ level: 'silent' }), limits: { maxAttempts: 4, baseDelayMs: 1, maxDelayMs: 1 } });
}

async function deleteObject(http: GcsHttp): Promise<number> {
  const url = http.objectUrl('bucket', 'a.csv');
  return http.retrying('deleting a temp object', async () => {
    const answer = await http.send('DELETE', url);
    if (answer.status >= 400) throw http.failure('DELETE', url, answer);
    return answer.status;
  });
}

describe('GcsHttp under the 401 rule', () => {
  it('sends a request Cloud Storage answered 401 once more with a fresh token', async () => {
    let refused: string | undefined;
    proxy.setFault(({ token }, response) => {
      refused ??= token;
      if (token !== refused) return false;
      response.writeHead(401, { 'content-type': 'application/json' }).end('{"error":{"code":401,"message":"Invalid Credentials"}}');
      return true;
    });
    const before = proxy.requests.length;
    expect(await deleteObject(writePath())).toBe(200);
    const sent = proxy.requests.slice(before);
    expect(sent.map((request) => request.status)).toEqual([401, 200]);
    expect(sent[1]!.token).not.toBe(sent[0]!.token);
    expect(sent.every((request) => request.verdict === 'valid')).toBe(true);
  });

  it("calls a second 401 the identity's problem: google_credentials_rejected, after two tries only", async () => {
    proxy.setFault((_request, response) => {
      response.writeHead(401, { 'content-type': 'application/json' }).end('{"error":{"code":401,"message":"Invalid Credentials"}}');
      return true;
    });
    const before = proxy.requests.length;
    const error = await deleteObject(writePath()).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(GoogleCredentialsRejectedError);
    expect((error as Error).message).toMatch(/Cloud Storage deleting a temp object: Google answered 401 \(unauthenticated\) twice/);
    expect(proxy.requests.length - before).toBe(2);
  });
});
