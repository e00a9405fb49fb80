import { describe, expect, it } from 'vitest';
import { ExactNumber } from '../../src/value-types/exact-number.js';

describe('ExactNumber', () => {
  it('shows its literal as text and as JSON (a string: JSON.stringify cannot write raw number text in Node 20)', () => {
    const exact = new ExactNumber('-12345678901234567.5');
    expect(`${exact}`).toBe('-12345678901234567.5');
    expect(JSON.stringify({ a: exact })).toBe('{"a":"-12345678901234567.5"}');
    expect(Object.isFrozen(exact)).toBe(true);
  });
});
