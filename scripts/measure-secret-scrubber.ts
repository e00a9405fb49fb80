// `npx tsx --expose-gc scripts/measure-secret-scrubber.ts [opaque|jwt]`: what the secret scrubber
// costs a `schedule` worker that has registered thousands of access tokens (issue 61). Scrubs a
// 2 KB log line (no secret in it, and one with an echoed token) with 10 and then 10,000 tokens
// registered, and reports the ratio, the cost of one registration and the heap the registry
// holds. `opaque`: 43-character random tokens; `jwt`: ~900-character JWTs of one issuer, whose
// first ~60 characters are the same in every token (the hard case for an index by prefix).
import { randomBytes } from 'node:crypto';
import { registerSecret, registrySize, scrubSecrets } from '../src/secret-scrubber.js';

const kind = process.argv[2] === 'jwt' ? 'jwt' : 'opaque';
const header = Buffer.from('{"alg":"RS256","typ":"JWT","kid":"k-2026-12"}').toString('base64url');

function token(): string {
  if (kind === 'opaque') return randomBytes(32).toString('base64url');
  const payload = Buffer.from(
    JSON.stringify({ iss: 'https://auth.example.com/', sub: 'tilehouse', aud: 'incident-api', iat: Date.now(), jti: randomBytes(300).toString('hex') }),
  ).toString('base64url');
  return `${header}.${payload}.${randomBytes(256).toString('base64url')}`;
}

const gc = (globalThis as { gc?: () => void }).gc;
function heapUsed(): number {
  gc?.();
  gc?.();
  return process.memoryUsage().heapUsed;
}

const words = 'INFO incidents_by_type: page 3 of 17 read rows=50 columns=Type,Incidents,Opened_At runId=20261207T210501Z ';
const line = words.repeat(Math.ceil(2048 / words.length)).slice(0, 2048);

/** Microseconds per scrub of `text`, the median of several rounds. */
function perScrub(text: string): number {
  const rounds: number[] = [];
  for (let round = 0; round < 7; round++) {
    const started = process.hrtime.bigint();
    for (let i = 0; i < 2000; i++) scrubSecrets(text);
    rounds.push(Number(process.hrtime.bigint() - started) / 1000 / 2000);
  }
  return rounds.sort((a, b) => a - b)[3]!;
}

const before = heapUsed();
const first: string[] = [];
for (let i = 0; i < 10; i++) first.push(token());
for (const value of first) registerSecret(value);
const echo = `${line.slice(0, 1024)} echoed Authorization: Bearer ${first[0]} ${line.slice(0, 1024 - 40)}`;
const clean10 = perScrub(line);
const echo10 = perScrub(echo);

const tokens: string[] = [];
for (let i = 0; i < 9990; i++) tokens.push(token());
const started = process.hrtime.bigint();
for (const value of tokens) registerSecret(value);
const registerUs = Number(process.hrtime.bigint() - started) / 1000 / tokens.length;
const tokenChars = [...first, ...tokens].reduce((sum, value) => sum + value.length, 0);
tokens.length = 0;
const held = heapUsed() - before;
const clean10k = perScrub(line);
const echo10k = perScrub(echo);
if (scrubSecrets(echo).includes(first[0]!)) throw new Error('the echoed token was not redacted');

const size = registrySize();
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;
process.stdout.write(
  [
    `${kind} tokens, ${(tokenChars / size.values).toFixed(0)} characters each; ${size.forms} forms (${size.formChars} characters) for ${size.values} values`,
    `2 KB line, no secret:   ${clean10.toFixed(1)} µs with 10 tokens, ${clean10k.toFixed(1)} µs with 10,000: ratio ${(clean10k / clean10).toFixed(2)}`,
    `2 KB line with an echo: ${echo10.toFixed(1)} µs with 10 tokens, ${echo10k.toFixed(1)} µs with 10,000: ratio ${(echo10k / echo10).toFixed(2)}`,
    `one registration: ${registerUs.toFixed(0)} µs; heap held by 10,000 tokens (their own strings included): ${gc === undefined ? '(run with --expose-gc)' : mb(held)}, tokens themselves ${mb(tokenChars)}`,
    '',
  ].join('\n'),
);
