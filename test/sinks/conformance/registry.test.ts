// Every registered sink kind runs the conformance scenarios on each of its backends: a kind added
// to src/sinks/registry.ts without a backend here fails this test (and `tsc`, through the Record).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { SinkConfig } from '../../../src/config/job-schema.js';
import { sinkKinds } from '../../../src/sinks/registry.js';

/** The conformance files that run each kind, one per backend family. */
const CONFORMANCE_FILES: Record<SinkConfig['type'], string[]> = {
  csv: ['local.conformance.test.ts', 'objects.conformance.test.ts'],
  parquet: ['local.conformance.test.ts', 'objects.conformance.test.ts'],
  bigquery: ['bigquery.conformance.test.ts'],
  postgres: ['postgres.conformance.test.ts'],
};

describe('the conformance suite', () => {
  it('runs every registered kind on at least one real backend', () => {
    for (const kind of sinkKinds) {
      const files = CONFORMANCE_FILES[kind.type] ?? [];
      expect(files, `${kind.type} has no conformance backend in test/sinks/conformance/`).not.toEqual([]);
      for (const file of files) {
        const text = readFileSync(path.join(import.meta.dirname, file), 'utf8');
        // The file runs the shared scenarios, for this kind.
        expect(text, file).toContain('conformanceScenarios(');
        expect(text.toLowerCase(), `${file} runs ${kind.type}`).toContain(kind.type);
      }
    }
  });
});
