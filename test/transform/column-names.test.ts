import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_COLUMN_NAME_LENGTH, toColumnNames } from '../../src/transform/column-names.js';

const BIGQUERY_SAFE = /^[a-z][a-z0-9_]*$/;

describe('toColumnNames', () => {
  it.each([
    ['Incident Count', 'incident_count'],
    ['  MTTR (hours) ', 'mttr_hours'],
    ['createdAt', 'created_at'],
    ['MTTRHours', 'mttr_hours'],
    ['Severity-Label', 'severity_label'],
    ['a  --  b', 'a_b'],
    ['__already_snake__', 'already_snake'],
    ['Größe', 'grosse'],
    ['Ærø Straße', 'aero_strasse'],
    ['Café à la crème', 'cafe_a_la_creme'],
    ['Łódź', 'lodz'],
    ['ﬁle №1', 'file_no1'],
    ['2024 total', 'c_2024_total'],
    ['95th percentile', 'c_95th_percentile'],
  ])('turns %j into %j', (header, name) => {
    expect(toColumnNames([header])).toEqual([name]);
  });

  it('names a header with nothing usable left after its 1-based position', () => {
    expect(toColumnNames(['Incident', '', '日本語', '🔥🔥', '%'])).toEqual(['incident', 'column_2', 'column_3', 'column_4', 'column_5']);
  });

  it('suffixes repeated names with _2, _3 in header order', () => {
    expect(toColumnNames(['Count', 'count', 'COUNT', 'Count!'])).toEqual(['count', 'count_2', 'count_3', 'count_4']);
  });

  it('never gives a duplicate a suffix that is another header’s own name', () => {
    expect(toColumnNames(['a', 'a', 'a_2'])).toEqual(['a', 'a_3', 'a_2']);
    expect(toColumnNames(['a_2', 'a', 'a', 'a_3'])).toEqual(['a_2', 'a', 'a_4', 'a_3']);
  });

  it('lets a real header keep a name that collides with a positional fallback only if it comes first', () => {
    expect(toColumnNames(['column_2', '?'])).toEqual(['column_2', 'column_2_2']);
    expect(toColumnNames(['?', 'column_1'])).toEqual(['column_1', 'column_1_2']);
  });

  it('avoids the prefixes BigQuery reserves and the lineage columns', () => {
    const names = toColumnNames(['_TABLE_SUFFIX', '_FILE_NAME', '_PARTITIONTIME', '_ROW_TIMESTAMP', '__ROOT__', '_COLON_x', '_run_id', '_extracted_at']);
    expect(names).toEqual(['table_suffix', 'file_name', 'partitiontime', 'row_timestamp', 'root', 'colon_x', 'run_id', 'extracted_at']);
    for (const name of names) expect(name).toMatch(BIGQUERY_SAFE);
  });

  it('cuts names to 300 characters, also when a suffix is added', () => {
    const long = 'x'.repeat(400);
    const [first, second] = toColumnNames([long, long]);
    expect(first).toBe('x'.repeat(MAX_COLUMN_NAME_LENGTH));
    expect(second).toBe(`${'x'.repeat(MAX_COLUMN_NAME_LENGTH - 2)}_2`);
  });

  it('does not leave a trailing underscore where the cut falls on a word boundary', () => {
    const header = `${'a'.repeat(299)} tail`;
    expect(toColumnNames([header])).toEqual(['a'.repeat(299)]);
  });

  it('gives the same names for the same headers', () => {
    const headers = ['Count', 'count', '', 'Ünïcödé', '1st'];
    expect(toColumnNames(headers)).toEqual(toColumnNames([...headers]));
  });

  it('always returns unique, BigQuery-safe names of at most 300 characters (property)', () => {
    const header = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 40 }),
      fc.constantFrom('a', 'a_2', 'A', '', '_', '1', 'column_1', 'column_2', '_TABLE_x', 'x'.repeat(310)),
    );
    fc.assert(
      fc.property(fc.array(header, { maxLength: 30 }), (headers) => {
        const names = toColumnNames(headers);
        expect(names).toHaveLength(headers.length);
        expect(new Set(names).size).toBe(names.length);
        for (const name of names) {
          expect(name).toMatch(BIGQUERY_SAFE);
          expect(name.length).toBeLessThanOrEqual(MAX_COLUMN_NAME_LENGTH);
        }
        expect(toColumnNames(headers)).toEqual(names);
      }),
    );
  });
});
