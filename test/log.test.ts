import { describe, expect, it } from 'vitest';
import { createLogger } from '../src/log.js';
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
