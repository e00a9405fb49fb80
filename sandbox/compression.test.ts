import { gunzipSync } from 'node:zlib';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acceptsGzip, startSandbox, type Sandbox } from './sandbox.js';
import { exportUrl, fetchToken, item } from './test-client.js';

const QUERY = { items: [item('Number', '[incident.number]', 'number'), item('Name', '[incident.name]', 'text')], options: { pageNumber: 0, itemsPerPage: 20 } };

async function exportAnswer(sandbox: Sandbox, token: string, acceptEncoding?: string) {
  const response = await request(exportUrl(sandbox), {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, ...(acceptEncoding ? { 'accept-encoding': acceptEncoding } : {}) },
    body: JSON.stringify(QUERY),
  });
  return { headers: response.headers, bytes: Buffer.from(await response.body.arrayBuffer()) };
}

describe('sandbox compress option', () => {
  let plain: Sandbox;
  let compressing: Sandbox;
  beforeAll(async () => {
    plain = await startSandbox({ incidents: 40 });
    compressing = await startSandbox({ incidents: 40, compress: true });
  });
  afterAll(async () => {
    await plain.close();
    await compressing.close();
  });

  it('gzips an answer when the request accepts gzip, to the same JSON', async () => {
    const expected = await exportAnswer(plain, await fetchToken(plain), 'gzip, br');
    const answer = await exportAnswer(compressing, await fetchToken(compressing), 'gzip, br');
    expect(answer.headers['content-encoding']).toBe('gzip');
    expect(answer.headers.vary).toBe('accept-encoding');
    expect(Number(answer.headers['content-length'])).toBe(answer.bytes.length);
    expect(answer.bytes.length).toBeLessThan(expected.bytes.length);
    expect(JSON.parse(gunzipSync(answer.bytes).toString('utf8'))).toEqual(JSON.parse(expected.bytes.toString('utf8')));
  });

  it('answers in identity when the request does not accept gzip', async () => {
    const token = await fetchToken(compressing);
    for (const acceptEncoding of [undefined, 'br', 'gzip;q=0', 'identity']) {
      const answer = await exportAnswer(compressing, token, acceptEncoding);
      expect(answer.headers['content-encoding']).toBeUndefined();
      expect((JSON.parse(answer.bytes.toString('utf8')) as { ok: boolean }).ok).toBe(true);
    }
  });

  it('reads Accept-Encoding as RFC 9110 does: listed or *, unless q=0', () => {
    expect(acceptsGzip('gzip, br')).toBe(true);
    expect(acceptsGzip('br;q=1.0, GZIP;q=0.5')).toBe(true);
    expect(acceptsGzip('*')).toBe(true);
    expect(acceptsGzip('x-gzip')).toBe(true);
    expect(acceptsGzip(undefined)).toBe(false);
    expect(acceptsGzip('br')).toBe(false);
    expect(acceptsGzip('gzip;q=0')).toBe(false);
    expect(acceptsGzip('gzip;q=0.000, *')).toBe(false);
    expect(acceptsGzip('*;q=0')).toBe(false);
  });
});
