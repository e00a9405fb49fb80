import { PassThrough, Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { OutputStream } from '../src/output-stream.js';
import { REDACTED, registerSecret } from '../src/secret-scrubber.js';
import { Capture } from './support/cli-harness.js';

const SECRET = 'output-stream-secret-31337';
registerSecret(SECRET);

describe('OutputStream', () => {
  it('scrubs each write and passes everything else through unchanged, in order', () => {
    const target = new Capture();
    const out = new OutputStream(target);
    out.write('first line\n');
    out.write(`echo: ${SECRET}\n`);
    out.write('\r\x1b[K3/10 windows');
    expect(target.text).toBe(`first line\necho: ${REDACTED}\n\r\x1b[K3/10 windows`);
  });

  it('decodes buffers, including a character split across two writes', () => {
    const target = new Capture();
    const out = new OutputStream(target);
    const bytes = Buffer.from(`é ${SECRET}\n`, 'utf8');
    out.write(bytes.subarray(0, 1));
    out.write(bytes.subarray(1));
    expect(target.text).toBe(`é ${REDACTED}\n`);
  });

  // Documented limit: writes are not joined (that would hold back progress lines). Every writer in
  // tilehouse hands over whole lines or messages, so a secret never straddles two writes.
  it('does not join writes: a secret split across two writes is not recognised', () => {
    const target = new Capture();
    const out = new OutputStream(target);
    out.write(SECRET.slice(0, 10));
    out.write(`${SECRET.slice(10)}\n`);
    expect(target.text).toBe(`${SECRET}\n`);
  });

  it('reports the target as a terminal when it is one', () => {
    expect(new OutputStream(Object.assign(new PassThrough(), { isTTY: true })).isTTY).toBe(true);
    expect(new OutputStream(new Capture()).isTTY).toBe(false);
  });

  it('drops writes, without an error or an exception, once the target failed (EPIPE)', async () => {
    let writes = 0;
    const target = new Writable({
      write(_chunk, _encoding, done) {
        writes++;
        done(Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }));
      },
    });
    const out = new OutputStream(target);
    const errors: unknown[] = [];
    out.on('error', (error) => errors.push(error));
    out.write('one\n');
    await new Promise((resolve) => setImmediate(resolve));
    expect(target.destroyed).toBe(true);
    expect(out.dropping).toBe(true);
    out.write('two\n');
    out.write('three\n');
    await new Promise((resolve) => setImmediate(resolve));
    expect(writes).toBe(1);
    expect(errors).toEqual([]);
  });
});
