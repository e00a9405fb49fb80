import { afterEach, describe, expect, it } from 'vitest';
import { UsageError } from '../../src/cli/command.js';
import { registerSecret } from '../../src/secret-scrubber.js';
import { failureOf, NO_TELEMETRY, telemetry, useTelemetry, type Telemetry } from '../../src/telemetry/telemetry.js';

afterEach(() => {
  useTelemetry(NO_TELEMETRY);
});

describe('the no-op telemetry (off)', () => {
  it('is what the process has until a command opens OpenTelemetry', () => {
    expect(telemetry()).toBe(NO_TELEMETRY);
    expect(telemetry().enabled).toBe(false);
  });

  it('runs the work of a span as it is: its value, its error, no fields for a log line', async () => {
    await expect(
      NO_TELEMETRY.inSpan('tilehouse.page', { 'tilehouse.page.number': 3 }, async (span) => {
        span.setAttributes({ x: 1 });
        span.addEvent('e');
        span.fail({ code: 'c', message: 'm' });
        return 42;
      }),
    ).resolves.toBe(42);
    const boom = new Error('boom');
    await expect(NO_TELEMETRY.inSpan('tilehouse.tile', {}, () => Promise.reject(boom))).rejects.toBe(boom);
    expect(NO_TELEMETRY.logFields()).toEqual({});
    const run = NO_TELEMETRY.startRun({});
    await expect(run.within(async () => 'done')).resolves.toBe('done');
    run.end(0);
    await NO_TELEMETRY.shutdown();
  });

  it('is replaced process-wide by useTelemetry, which returns the previous one', () => {
    const fake = { ...NO_TELEMETRY, enabled: true } as Telemetry;
    expect(useTelemetry(fake)).toBe(NO_TELEMETRY);
    expect(telemetry()).toBe(fake);
  });
});

describe('failureOf', () => {
  it("takes a TilehouseError's stable code, anything else is internal_error", () => {
    expect(failureOf(UsageError.of('run: --window-end before --window-start'))).toEqual({
      code: 'usage_invalid',
      message: 'run: --window-end before --window-start',
    });
    expect(failureOf(new TypeError('x is undefined'))).toEqual({ code: 'internal_error', message: 'x is undefined' });
  });

  it("takes a summary's error as it is, and scrubs secrets from every message like the logs", () => {
    registerSecret('s3cr3t-value-for-the-span', { permanent: true });
    expect(failureOf({ code: 'auth_invalid_client', message: 'the issuer said: bad secret s3cr3t-value-for-the-span' })).toEqual({
      code: 'auth_invalid_client',
      message: 'the issuer said: bad secret [redacted]',
    });
    expect(failureOf(new Error('token s3cr3t-value-for-the-span refused')).message).toBe('token [redacted] refused');
  });
});
