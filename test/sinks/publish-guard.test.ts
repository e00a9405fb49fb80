import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { DEFAULT_GUARD_SETTINGS, guardSettingsOf } from '../../src/config/publish-guard-schema.js';
import { countCsvRecords } from '../../src/sinks/csv/count-records.js';
import { judgeGuard, type TargetHolding } from '../../src/sinks/publish-guard.js';

const settings = DEFAULT_GUARD_SETTINGS;
const replacing = (rows: number | undefined): TargetHolding => ({ target: 't', effect: 'replace', rows, readFrom: 'test' });
const adding = (recentRuns: number[]): TargetHolding => ({ target: 't', effect: 'add', rows: undefined, readFrom: 'test', recentRuns });

describe('judgeGuard', () => {
  it('refuses no rows over rows, and passes it over nothing, over an empty target, or with allowEmpty', () => {
    expect(judgeGuard(settings, replacing(10), 0)).toMatchObject({ verdict: 'trip', rule: 'empty', held: 10, setting: 'guard.allowEmpty' });
    expect(judgeGuard(settings, replacing(undefined), 0).verdict).toBe('pass');
    expect(judgeGuard(settings, replacing(0), 0).verdict).toBe('pass');
    expect(judgeGuard({ ...settings, allowEmpty: true }, replacing(10), 0).verdict).toBe('pass');
  });

  it('refuses a shrink beyond maxShrink and passes one within it (the boundary passes)', () => {
    expect(judgeGuard(settings, replacing(100), 49)).toMatchObject({ verdict: 'trip', rule: 'shrink', held: 100, exported: 49, setting: 'guard.maxShrink' });
    expect(judgeGuard(settings, replacing(100), 50).verdict).toBe('pass');
    expect(judgeGuard(settings, replacing(100), 500).verdict).toBe('pass');
    expect(judgeGuard({ ...settings, maxShrink: 1 }, replacing(100), 1).verdict).toBe('pass');
    expect(judgeGuard({ ...settings, maxShrink: 0 }, replacing(100), 99).verdict).toBe('trip');
  });

  it('holds a run far below the median of the recent runs, needs 3 of them, and skips open windows', () => {
    expect(judgeGuard(settings, adding([100, 90, 1000, 110, 95]), 9)).toMatchObject({
      verdict: 'trip',
      rule: 'recent',
      held: 100,
      setting: 'guard.minOfRecent',
    });
    expect(judgeGuard(settings, adding([100, 90, 1000, 110, 95]), 10).verdict).toBe('pass');
    expect(judgeGuard(settings, adding([100, 90]), 1).verdict).toBe('pass');
    expect(judgeGuard(settings, adding([100, 90, 80]), 0)).toMatchObject({ verdict: 'trip', rule: 'empty', held: 90 });
    expect(judgeGuard(settings, adding([100, 90, 80]), 1, { openWindow: true }).verdict).toBe('pass');
    expect(judgeGuard({ ...settings, minOfRecent: 0 }, adding([100, 90, 80]), 1).verdict).toBe('pass');
    // Only the latest recentRuns count: older big runs do not.
    expect(judgeGuard({ ...settings, recentRuns: 3 }, adding([10, 10, 10, 1000, 1000, 1000]), 2).verdict).toBe('pass');
  });

  it('says off without settings and unknown when the target could not be read', () => {
    expect(judgeGuard(undefined, replacing(10), 0).verdict).toBe('off');
    expect(judgeGuard(settings, { ...replacing(undefined), unreadable: 'EACCES' }, 0).verdict).toBe('unknown');
  });
});

describe('guardSettingsOf', () => {
  it('takes the sink over the environment over the defaults; false on either side turns it off', () => {
    expect(guardSettingsOf(undefined, undefined)).toEqual(DEFAULT_GUARD_SETTINGS);
    expect(guardSettingsOf({ maxShrink: 0.9 }, { maxShrink: 0.2, allowEmpty: true })).toEqual({ ...DEFAULT_GUARD_SETTINGS, maxShrink: 0.9, allowEmpty: true });
    expect(guardSettingsOf(false, { maxShrink: 0.2 })).toBeUndefined();
    expect(guardSettingsOf(undefined, false)).toBeUndefined();
    expect(guardSettingsOf({ maxShrink: 0.3 }, false)).toEqual({ ...DEFAULT_GUARD_SETTINGS, maxShrink: 0.3 });
  });
});

describe('countCsvRecords', () => {
  const count = (text: string, gzip = false) => countCsvRecords(Readable.from([gzip ? gzipSync(text) : Buffer.from(text)]), gzip);
  it('counts data records, not line breaks inside quoted fields, nor the header', async () => {
    expect(await count('a,b\r\n1,"x\r\ny"\r\n2,"say ""hi""\n"\r\n')).toBe(2);
    expect(await count('a,b\r\n1,2')).toBe(1);
    expect(await count('a,b\r\n')).toBe(0);
    expect(await count('')).toBe(0);
    expect(await count('a\r\n1\r\n2\r\n3\r\n', true)).toBe(3);
  });
});

describe('judgeGuard reasons', () => {
  it('says why the history rule did not apply', () => {
    expect(
      judgeGuard(DEFAULT_GUARD_SETTINGS, { target: 't', effect: 'add', rows: undefined, readFrom: 'x', recentRuns: [5, 5, 5] }, 1, { openWindow: true }).reason,
    ).toContain('an open window: no history rule');
    expect(judgeGuard(DEFAULT_GUARD_SETTINGS, { target: 't', effect: 'add', rows: undefined, readFrom: 'x', recentRuns: [5] }, 1).reason).toContain(
      '1 recent run, fewer than 3',
    );
  });
});

describe('judgeGuard against the definition that wrote the target', () => {
  const definition = (filters: string) => ({
    fingerprint: filters === 'a' ? 'aaaaaaaaaaaa' : 'bbbbbbbbbbbb',
    parts: { 'query.item:Number': 'same', 'query.filters:Number': filters },
  });
  const writtenBy = (filters: string): TargetHolding => ({ ...replacing(10), writtenBy: { runId: 'R1', definition: definition(filters) } });

  it("says in a refusal's reason what changed since the run that wrote the target", () => {
    const verdict = judgeGuard(settings, writtenBy('a'), 0, { definition: definition('b') });
    expect(verdict).toMatchObject({
      verdict: 'trip',
      rule: 'empty',
      changedSince: { runId: 'R1', changes: [{ part: 'query', details: ['filters on Number'] }] },
    });
    expect(verdict.reason).toBe("this export has no rows and it holds 10 rows (test); the job's query changed since run R1: filters on Number");
  });

  it('says nothing of the definition when it is the same, or when the target does not record one', () => {
    expect(judgeGuard(settings, writtenBy('a'), 0, { definition: definition('a') }).changedSince).toBeUndefined();
    expect(judgeGuard(settings, replacing(10), 0, { definition: definition('b') }).reason).toBe('this export has no rows and it holds 10 rows (test)');
  });

  it('records a change on a passing verdict without changing its reason', () => {
    const verdict = judgeGuard(settings, writtenBy('a'), 10, { definition: definition('b') });
    expect(verdict).toMatchObject({ verdict: 'pass', changedSince: { runId: 'R1' } });
    expect(verdict.reason).not.toContain('changed');
  });
});
