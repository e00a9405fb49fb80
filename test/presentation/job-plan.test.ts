import { describe, expect, it } from 'vitest';
import { guardLine } from '../../src/presentation/job-plan.js';
import { DEFAULT_GUARD_SETTINGS } from '../../src/config/publish-guard-schema.js';
import { judgeGuard } from '../../src/sinks/publish-guard.js';

describe("plan's and check's guard line", () => {
  it('says "not judged" once for a target whose holding cannot be read, with the reason the guard gave', () => {
    const verdict = judgeGuard(
      DEFAULT_GUARD_SETTINGS,
      { target: 'ns.t', effect: 'replace', rows: undefined, readFrom: 'days', unreadable: 'the days a run replaces are known only from its rows' },
      3,
    );
    expect(verdict.reason).toBe('what it holds could not be read (the days a run replaces are known only from its rows); not judged');
    expect(guardLine(verdict)).toBe('guard: not judged: what it holds could not be read (the days a run replaces are known only from its rows)');
  });
});
