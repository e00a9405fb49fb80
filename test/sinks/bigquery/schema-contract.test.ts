import { describe, expect, it } from 'vitest';
import { checkSchemaContract, describeSchemaDiff } from '../../../src/sinks/bigquery/schema-contract.js';

const tile = [
  { name: 'incident', type: 'STRING' },
  { name: 'count', type: 'INT64' },
];

describe('checkSchemaContract', () => {
  it('lets the load create a table that does not exist yet', () => {
    expect(checkSchemaContract(undefined, tile, 'freeze')).toEqual({ action: 'created' });
  });

  it('accepts a table with the same columns in another order', () => {
    const existing = [
      { name: 'count', type: 'INT64', mode: 'NULLABLE' },
      { name: 'incident', type: 'STRING', mode: 'NULLABLE' },
    ];
    expect(checkSchemaContract(existing, tile, 'freeze')).toEqual({ action: 'unchanged' });
  });

  it('reads legacy type names as their standard SQL names', () => {
    const existing = [
      { name: 'incident', type: 'STRING' },
      { name: 'count', type: 'INTEGER' },
      { name: 'rate', type: 'FLOAT' },
    ];
    expect(checkSchemaContract(existing, [...tile, { name: 'rate', type: 'FLOAT64' }], 'freeze')).toEqual({ action: 'unchanged' });
  });

  it('compares column names case-insensitively, as BigQuery does', () => {
    const existing = [
      { name: 'Incident', type: 'STRING' },
      { name: 'COUNT', type: 'INT64' },
    ];
    expect(checkSchemaContract(existing, tile, 'freeze')).toEqual({ action: 'unchanged' });
  });

  it('under freeze, fails on an added column and says how to accept it', () => {
    const decision = checkSchemaContract([{ name: 'incident', type: 'STRING' }], tile, 'freeze');
    expect(decision).toMatchObject({ action: 'mismatch', diff: { added: [{ name: 'count', type: 'INT64' }], removed: [], retyped: [] } });
    expect(decision.action === 'mismatch' && decision.hint).toMatch(/schema: add/);
  });

  it('under add, accepts added columns and lists them', () => {
    expect(checkSchemaContract([{ name: 'incident', type: 'STRING' }], tile, 'add')).toEqual({
      action: 'added',
      columns: [{ name: 'count', type: 'INT64' }],
    });
  });

  it('under add, still fails on removed and retyped columns', () => {
    const existing = [
      { name: 'incident', type: 'STRING' },
      { name: 'count', type: 'FLOAT64' },
      { name: 'team', type: 'STRING' },
    ];
    expect(checkSchemaContract(existing, tile, 'add')).toMatchObject({
      action: 'mismatch',
      diff: { added: [], removed: [{ name: 'team', type: 'STRING' }], retyped: [{ name: 'count', from: 'FLOAT64', to: 'INT64' }] },
    });
  });

  it('ignores lineage columns of the table when the write mode does not write them', () => {
    const existing = [...tile, { name: '_run_id', type: 'STRING' }, { name: '_extracted_at', type: 'TIMESTAMP' }];
    expect(checkSchemaContract(existing, tile, 'freeze')).toEqual({ action: 'unchanged' });
  });

  it('compares lineage columns when the write mode writes them', () => {
    const lineage = [
      { name: '_run_id', type: 'STRING' },
      { name: '_extracted_at', type: 'TIMESTAMP' },
    ];
    expect(checkSchemaContract(tile, [...tile, ...lineage], 'freeze')).toMatchObject({ action: 'mismatch', diff: { added: lineage } });
  });

  it('shows a repeated field as an array type', () => {
    const existing = [...tile.slice(0, 1), { name: 'count', type: 'INT64', mode: 'REPEATED' }];
    expect(checkSchemaContract(existing, tile, 'freeze')).toMatchObject({ diff: { retyped: [{ name: 'count', from: 'ARRAY<INT64>', to: 'INT64' }] } });
  });
});

describe('describeSchemaDiff', () => {
  it('names every added, removed and retyped column with its types', () => {
    expect(
      describeSchemaDiff({
        added: [{ name: 'region', type: 'STRING' }],
        removed: [{ name: 'team', type: 'STRING' }],
        retyped: [{ name: 'count', from: 'INT64', to: 'FLOAT64' }],
      }),
    ).toBe('added: region (STRING); removed: team (STRING); retyped: count INT64 -> FLOAT64');
  });
});
