import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { agent, postJson } from '../../src/lineage/lineage-transport.js';
import { registerSecret } from '../../src/secret-scrubber.js';

const dispatcher = agent(5_000);
afterAll(() => dispatcher.close());

/** A consumer that refuses every event with the body given. */
async function refusing(body: string): Promise<{ url: string; close: () => void }> {
  const server = createServer((_req, res) => {
    _req.resume();
    _req.on('end', () => res.writeHead(500, { 'content-type': 'text/plain' }).end(body));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1/lineage`, close: () => server.close() };
}

async function failureOf(body: string): Promise<string> {
  const consumer = await refusing(body);
  try {
    await postJson(dispatcher, consumer.url, Buffer.from('{}'), {}, AbortSignal.timeout(5_000));
    throw new Error('expected a refusal');
  } catch (error) {
    return (error as Error).message;
  } finally {
    consumer.close();
  }
}

describe('postJson (lineage HTTP transport)', () => {
  it('names the status and an excerpt of the answer, cut before a secret the cut at 200 would split (issue 61)', async () => {
    registerSecret('lineage-echo-key-0042');
    const message = await failureOf(`${'e'.repeat(195)}lineage-echo-key-0042 was not accepted`);
    expect(message).toBe(`HTTP 500: ${'e'.repeat(195)}…`);
  });

  it('scrubs a secret holding newlines before collapsing the answer onto one line', async () => {
    registerSecret('key with\n  newlines\tinside');
    expect(await failureOf('refused:\n  key with\n  newlines\tinside\n')).toBe('HTTP 500: refused: [redacted]');
  });
});
