import { describe, expect, it } from 'vitest';
import { parseCommandArgs } from '../../src/cli/command.js';
import { runCli } from '../support/cli-harness.js';

const job = { job: { type: 'string', short: 't', multiple: true } } as const;
const once = { job: { type: 'string', short: 't' } } as const;
/** A usage_invalid refusal whose message matches `message`. */
const usageError = (message: RegExp) => expect.objectContaining({ code: 'usage_invalid', message: expect.stringMatching(message) });

describe('--job', () => {
  it('selects jobs by name like its older spelling --tile, in any mix of forms', () => {
    expect(parseCommandArgs('run', ['--job', 'a', '--tile=b', '--job=c', '-t', 'd', '--tile', 'e'], job).values.job).toEqual(['a', 'b', 'c', 'd', 'e']);
  });

  it('is unknown to a command that selects no jobs', () => {
    expect(() => parseCommandArgs('k8s', ['--job', 'a'])).toThrow(usageError(/Unknown option '--job'/));
    expect(() => parseCommandArgs('k8s', ['--tile', 'a'])).toThrow(usageError(/Unknown option '--tile'/));
  });

  it('is named --job in the errors about it, whichever spelling was given (issue 25 item 5)', () => {
    expect(() => parseCommandArgs('run', ['--tile'], job)).toThrow(usageError(/'-t, --job <value>' argument missing/));
    expect(() => parseCommandArgs('backfill', ['--tile', 'a', '--job', 'b'], once)).toThrow(usageError(/--job is given 2 times \("a", "b"\)/));
    for (const error of [() => parseCommandArgs('run', ['--tile'], job), () => parseCommandArgs('backfill', ['--tile', 'a', '--tile', 'b'], once)]) {
      expect(error).toThrow(expect.objectContaining({ message: expect.not.stringContaining('--tile') as unknown }));
    }
  });

  it('is the spelling of the top-level help and of a backfill without one', async () => {
    const help = await runCli(['--help'], { env: {} });
    expect(help.stdout).toContain('(or --job NAME)');
    expect(help.stdout).not.toContain('--tile');
    const backfill = await runCli(['backfill', '--from', '2026-06-01', '--to', '2026-06-02'], { env: {} });
    expect(backfill).toMatchObject({ exitCode: 2, stderr: expect.stringContaining('backfill: --job is required') as unknown });
  });
});
