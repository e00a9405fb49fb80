import { describe, expect, it } from 'vitest';
import { graceSeconds } from '../../src/deploy/pod-template.js';

describe('graceSeconds', () => {
  it("keeps Kubernetes' default 30 s for the default stopDeadlineMs (20 s) and anything up to 25 s", () => {
    expect(graceSeconds(undefined)).toBe(30);
    expect(graceSeconds(20_000)).toBe(30);
    expect(graceSeconds(25_000)).toBe(30);
  });

  it('gives a longer stop deadline 5 s more, so SIGKILL never comes before the summary', () => {
    expect(graceSeconds(25_001)).toBe(31);
    expect(graceSeconds(60_000)).toBe(65);
  });
});
