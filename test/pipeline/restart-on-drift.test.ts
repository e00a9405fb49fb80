import { describe, expect, it } from 'vitest';
import { withOneRestart } from '../../src/pipeline/restart-on-drift.js';
import { ExportInconsistentError, ExportPageMismatchError } from '../../src/source/export-endpoint/index.js';
import { silentLogger } from '../support/fake-sinks.js';

const drift = (page: number) => new ExportPageMismatchError('weekly', page, 'totalRows', `totalRows changed on page ${page}`, true);

/** A read that fails with each of `failures` in turn, then succeeds with 'rows'. */
function scriptedRead(failures: unknown[]): { read: () => Promise<string>; calls: () => number } {
  let calls = 0;
  return {
    read: async () => {
      const failure = failures[calls];
      calls += 1;
      if (failure !== undefined) throw failure;
      return 'rows';
    },
    calls: () => calls,
  };
}

function run(failures: unknown[]) {
  const script = scriptedRead(failures);
  let restarts = 0;
  const result = withOneRestart(script.read, { jobName: 'weekly', logger: silentLogger, onRestart: () => (restarts += 1) });
  return { result, calls: script.calls, restarts: () => restarts };
}

describe('withOneRestart', () => {
  it('reads once when nothing drifts', async () => {
    const { result, calls, restarts } = run([]);
    expect(await result).toBe('rows');
    expect([calls(), restarts()]).toEqual([1, 0]);
  });

  it('re-reads once after one drift, and succeeds', async () => {
    const { result, calls, restarts } = run([drift(3)]);
    expect(await result).toBe('rows');
    expect([calls(), restarts()]).toEqual([2, 1]);
  });

  it('fails with export_inconsistent after a second drift, and reads no third time', async () => {
    const { result, calls, restarts } = run([drift(3), drift(5), drift(7)]);
    await expect(result).rejects.toBeInstanceOf(ExportInconsistentError);
    await expect(result).rejects.toMatchObject({ code: 'export_inconsistent' });
    expect([calls(), restarts()]).toEqual([2, 1]);
  });

  it('does not re-read after a non-drift error', async () => {
    const notDrift = new ExportPageMismatchError('weekly', 2, 'headers', 'columns do not match', false);
    for (const error of [new Error('disk full'), notDrift]) {
      const { result, calls, restarts } = run([error]);
      await expect(result).rejects.toBe(error);
      expect([calls(), restarts()]).toEqual([1, 0]);
    }
  });

  it('rethrows a non-drift error of the re-read as it is', async () => {
    const second = new Error('connection refused');
    const { result, calls } = run([drift(1), second]);
    await expect(result).rejects.toBe(second);
    expect(calls()).toBe(2);
  });
});
