import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { REDACTED, scrubSecrets } from '../../src/secret-scrubber.js';
import { OtelTelemetry } from '../../src/telemetry/otel-telemetry.js';
import { otelSettingsOf } from '../../src/telemetry/otel-settings.js';

describe('OtelTelemetry: OTLP header values (issue 61)', () => {
  it('registers the token of `Authorization=Bearer <token>` itself, and a bare api-key, so an echo of either is masked', async () => {
    const env = {
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9',
      OTEL_EXPORTER_OTLP_HEADERS: 'Authorization=Bearer%20otlp-bare-token-77,api-key=otlp-api-key-88',
    };
    const otel = new OtelTelemetry({ settings: otelSettingsOf(env), env, logger: createLogger({ level: 'silent' }), version: 'test', resource: {} });
    try {
      expect(scrubSecrets('collector said: token otlp-bare-token-77 and key otlp-api-key-88 refused')).toBe(
        `collector said: token ${REDACTED} and key ${REDACTED} refused`,
      );
    } finally {
      await otel.shutdown();
    }
  });
});
