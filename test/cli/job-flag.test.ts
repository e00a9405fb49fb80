import { describe, expect, it } from 'vitest';
import { parseCommandArgs } from '../../src/cli/command.js';

const tile = { tile: { type: 'string', short: 't', multiple: true } } as const;

describe('--job', () => {
  it('selects jobs by name like its older spelling --tile, in any mix of forms', () => {
    expect(parseCommandArgs('run', ['--job', 'a', '--tile=b', '--job=c', '-t', 'd'], tile).values.tile).toEqual(['a', 'b', 'c', 'd']);
  });

  it('is unknown to a command that selects no jobs', () => {
    expect(() => parseCommandArgs('k8s', ['--job', 'a'])).toThrow(/Unknown option '--job'/);
  });
});
