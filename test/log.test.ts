import { describe, expect, it } from 'vitest';
import { createLogger, humanLogLine } from '../src/log.js';
import { registerSecret } from '../src/secret-scrubber.js';
import { Capture } from './support/cli-harness.js';

describe('createLogger', () => {
  it('redacts credential fields wherever they are nested', async () => {
    const out = new Capture();
    const logger = await createLogger({ level: 'trace', destination: out });
    logger.info({ clientSecret: 'a1', token: 'a2', request: { headers: { authorization: 'Bearer a3' }, client_secret: 'a4', access_token: 'a5' } }, 'hello');
    expect(out.text).toContain('hello');
    for (const secret of ['a1', 'a2', 'a3', 'a4', 'a5']) expect(out.text).not.toContain(`"${secret}"`);
    expect(out.text).not.toContain('Bearer a3');
    expect(out.lines()[0]).toMatchObject({ clientSecret: '[redacted]', token: '[redacted]' });
  });

  it('writes JSON lines at the chosen level', async () => {
    const out = new Capture();
    const logger = await createLogger({ level: 'warn', destination: out });
    logger.info('hidden');
    logger.warn('shown');
    expect(out.lines().map((line) => line.msg)).toEqual(['shown']);
  });
});

describe('humanLogLine', () => {
  const at = new Date(2026, 0, 2, 3, 4, 5).getTime();

  it('cuts a long field before a secret, never through it (issue 61)', () => {
    registerSecret('field-secret-abcdef');
    const reason = `${'r'.repeat(75)}field-secret-abcdef and more`;
    const line = humanLogLine(JSON.stringify({ level: 40, time: at, msg: 'retrying', reason }));
    expect(line).toBe(`03:04:05 WARN  retrying reason=${'r'.repeat(75)}…\n`);
  });

  it('is one line: time, level, job, message, scalar fields; objects left to the JSON logs', () => {
    const json = JSON.stringify({
      level: 40,
      time: at,
      service: 'tilehouse',
      job: 'by_type',
      tile: 't',
      runId: 'r',
      page: 3,
      attempt: 2,
      reason: 'HTTP 503',
      summary: { rows: 1 },
      msg: 'page request failed; retrying',
    });
    expect(humanLogLine(json)).toBe('03:04:05 WARN  by_type: page request failed; retrying page=3 attempt=2 reason=HTTP 503\n');
  });

  it('leaves out the job prefix when the message names the job, and shows an error stack indented', () => {
    const json = JSON.stringify({ level: 20, time: at, job: 'by_type', err: { message: 'boom', stack: 'Error: boom\n    at x' }, msg: 'job by_type failed' });
    expect(humanLogLine(json)).toBe('03:04:05 DEBUG job by_type failed\n  Error: boom\n      at x\n');
  });

  it('is what createLogger writes in human mode, scrubbed and redacted like JSON lines', async () => {
    const out = new Capture();
    const logger = createLogger({ level: 'info', destination: out, human: true });
    logger.info({ token: 'abc', count: 2 }, 'hello');
    expect(out.text).toMatch(/^\d\d:\d\d:\d\d INFO {2}hello token=\[redacted\] count=2\n$/);
  });
});
