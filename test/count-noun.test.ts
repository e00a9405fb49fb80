import { describe, expect, it } from 'vitest';
import { countNoun } from '../src/count-noun.js';
import { ColumnCountMismatchError } from '../src/transform/transform-errors.js';

describe('countNoun', () => {
  it('says "1 row", "0 rows", "2 rows", and takes an irregular plural', () => {
    expect([0, 1, 2].map((count) => countNoun(count, 'row'))).toEqual(['0 rows', '1 row', '2 rows']);
    expect(countNoun(1, 'retry', 'retries')).toBe('1 retry');
    expect(countNoun(3, 'retry', 'retries')).toBe('3 retries');
  });

  it('is what the messages say a count of one with (issue 25 item 5: no "1 rows")', () => {
    expect(new ColumnCountMismatchError(1, 2).message).toBe('export result has 1 header but 2 dataTypes; every column needs exactly one of each');
  });
});
