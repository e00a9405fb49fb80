import { describe, expect, it } from 'vitest';
import { rerunCommands } from '../../src/presentation/window-lines.js';

describe('rerunCommands', () => {
  it('merges contiguous failed windows into one command each', () => {
    const failed = [
      { from: '2026-03-01', to: '2026-03-02' },
      { from: '2026-03-02', to: '2026-03-03' },
      { from: '2026-03-05', to: '2026-03-06' },
    ];
    expect(rerunCommands(failed, 'daily', 'day', ['--config', 'c.yaml'])).toEqual([
      'tilehouse backfill --job daily --from 2026-03-01 --to 2026-03-03 --step day --config c.yaml',
      'tilehouse backfill --job daily --from 2026-03-05 --to 2026-03-06 --step day --config c.yaml',
    ]);
  });
});
