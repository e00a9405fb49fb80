import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { resolveCredentials } from '../../src/config/secrets.js';
import type { SourceConfig } from '../../src/config/environment-schema.js';
import { transportOf } from '../../src/lineage/transport-of.js';
import { createLogger } from '../../src/log.js';
import { OutputStream } from '../../src/output-stream.js';
import { fetchToken } from '../../src/source/token-client.js';
import { type HostileAnswer, hostileServersEachTest, tokenRequest } from '../support/hostile-server.js';

// Issue 61: a `schedule` worker issues a token per tile run for weeks. Every one is registered
// with the scrubber, and the first secret it learned must still be masked after thousands.

const hostile = hostileServersEachTest();
const TOKENS = 3000;
const CLIENT_SECRET = `cs-"Ünïcødé" <&> +/= secret-Ω`;
const LINEAGE_KEY = 'lineage-key-α/β+γ=0042';

/** What a careless gateway might print of a value: every form the scrubber promises to catch. */
function echoesOf(value: string): string[] {
  const json = JSON.stringify(value).slice(1, -1);
  const go = json.replaceAll('<', '\\u003c').replaceAll('>', '\\u003e').replaceAll('&', '\\u0026');
  return [
    value,
    encodeURIComponent(value),
    encodeURIComponent(value).replace(/%[0-9A-F]{2}/g, (escape) => escape.toLowerCase()),
    new URLSearchParams({ v: value }).toString().slice(2),
    json,
    go,
    value.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;'),
    Buffer.from(value).toString('base64'),
    Buffer.from(value).toString('base64url'),
  ];
}

/** Needles that must not be in the output: each form, and the first characters of the value as written. */
function needlesOf(value: string): string[] {
  return [...new Set([...echoesOf(value).map((form) => form.slice(0, 12)), value.slice(0, 8)])];
}

describe('fetchToken in a long-running worker', () => {
  it(`still masks the first token, the client secret and the lineage API key after ${TOKENS} tokens`, async () => {
    const { clientSecret } = await resolveCredentials(
      { clientId: 'tilehouse-worker', clientSecret: '${WORKER_SECRET}' } as SourceConfig,
      'config/worker.yaml',
      { WORKER_SECRET: CLIENT_SECRET },
    );
    await transportOf(
      {
        type: 'http',
        url: 'http://127.0.0.1:9',
        endpoint: 'api/v1/lineage',
        timeout: 1,
        compression: 'none',
        auth: { type: 'api_key', apiKey: LINEAGE_KEY },
      } as never,
      {
        writeConsole: () => undefined,
        env: {},
      },
    );
    const issued: string[] = [];
    const echo = () => [CLIENT_SECRET, LINEAGE_KEY, issued[0]!].flatMap(echoesOf).join(' | ');
    const answers: Array<() => HostileAnswer> = [
      // An OAuth refusal whose description quotes everything, as Go's encoding/json writes it.
      () => ({ status: 401, body: `{"error":"invalid_client","error_description":"${echoesOf(echo())[5]}"}` }),
      // A gateway's HTML error page echoing the request.
      () => ({ status: 401, headers: { 'content-type': 'text/html' }, body: `<html><body><pre>\n${echo()}\n</pre></body></html>` }),
    ];
    const server = await hostile.start({
      token: (_request, index) => {
        if (index >= TOKENS) return answers[index - TOKENS]!();
        const token = `tok-${index}-${randomBytes(24).toString('base64url')}`;
        issued.push(token);
        return { json: { access_token: token, token_type: 'Bearer', expires_in: 3600 } };
      },
      page: () => ({ status: 500 }),
    });
    const request = tokenRequest(server, hostile.dispatcher, { clientSecret, jobName: 'worker' });
    const got: string[] = [];
    for (let batch = 0; batch < TOKENS / 30; batch++)
      got.push(...(await Promise.all(Array.from({ length: 30 }, () => fetchToken(request)))).map((token) => token.accessToken));
    expect(new Set(got).size).toBe(TOKENS);

    const captured: string[] = [];
    const stderr = new OutputStream({ write: (chunk: string) => captured.push(chunk) });
    const jsonLog = createLogger({ destination: stderr });
    const humanLog = createLogger({ destination: stderr, human: true });
    const failures: Error[] = [];
    for (let i = 0; i < answers.length; i++)
      failures.push(
        await fetchToken(request).then(
          () => new Error('expected a refusal'),
          (error: Error) => error,
        ),
      );
    for (const failure of failures) {
      jsonLog.error({ err: failure, reason: failure.message }, failure.message);
      humanLog.error({ reason: failure.message }, failure.message);
      stderr.write(`FAIL ${failure.message}\n`);
    }
    await new Promise<void>((resolve) => stderr.end(resolve));

    const output = captured.join('');
    // The echoes did arrive, and were printed: the output says so around the redactions.
    expect(failures.map((failure) => (failure as Error & { code?: string }).code)).toEqual(['auth_invalid_client', 'auth_response_invalid']);
    expect(output).toContain('[redacted]');
    expect(output).toContain('invalid_client');
    for (const secret of [issued[0]!, CLIENT_SECRET, LINEAGE_KEY]) for (const needle of needlesOf(secret)) expect(output, needle).not.toContain(needle);
  }, 120_000);
});
