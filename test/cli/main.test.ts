import { readFile } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli.js';
import { registerSecret } from '../../src/secret-scrubber.js';
import { sinkKinds } from '../../src/sinks/registry.js';
import { Capture } from '../support/cli-harness.js';

async function cli(args: string[], stdin?: Readable): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = new Capture();
  const stderr = new Capture();
  const code = await main(args, { env: {}, stdout, stderr, ...(stdin ? { stdin } : {}) });
  return { code, stdout: stdout.text, stderr: stderr.text };
}

/** Standard input that fails when read: an error tilehouse did not raise on purpose. */
function brokenStdin(message: string): Readable {
  return new Readable({
    read() {
      this.destroy(new Error(message));
    },
  });
}

describe('main', () => {
  it('--version prints the version from package.json', async () => {
    const { version } = JSON.parse(await readFile('package.json', 'utf8')) as { version: string };
    expect(await cli(['--version'])).toEqual({ code: 0, stdout: `tilehouse ${version}\n`, stderr: '' });
  });

  it('--help names every registered sink kind in its first line (it said "CSV or BigQuery" after Parquet and PostgreSQL arrived)', async () => {
    const { code, stdout } = await cli(['--help']);
    expect(code).toBe(0);
    const first = stdout.split('\n')[0]!;
    for (const kind of sinkKinds) expect(first).toContain(kind.label);
    expect(first).toBe('tilehouse — export incident-report tiles to CSV, BigQuery, Parquet, PostgreSQL or Iceberg');
  });

  it('an unknown command is usage_invalid, exit 2', async () => {
    const result = await cli(['export']);
    expect(result).toMatchObject({ code: 2, stdout: '' });
    expect(result.stderr).toBe(
      'tilehouse: usage_invalid:\n  unknown command "export"; commands: run, schedule, backfill, plan, status, probe, check, validate, init, k8s\n',
    );
  });

  it('a bad option is usage_invalid, exit 2', async () => {
    const result = await cli(['run', '--no-such-option']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^tilehouse: usage_invalid:\n {2}run: .*--no-such-option.* \(see tilehouse run --help\)\n$/);
  });

  it('an error tilehouse did not raise is one line, internal_error, exit 1, without the stack', async () => {
    const result = await cli(['init', '--from-request', '-'], brokenStdin('stdin broke\n  on a second line'));
    expect(result).toEqual({
      code: 1,
      stdout: '',
      stderr: 'tilehouse: internal_error: stdin broke on a second line (a bug in tilehouse; run with --log-level debug for the stack)\n',
    });
  });

  it.each(['--log-level debug', '--log-level=trace'])('prints the stack of an internal error with %s', async (level) => {
    const result = await cli(['init', '--from-request', '-', ...level.split(' ')], brokenStdin('stdin broke'));
    expect(result.code).toBe(1);
    const [first, ...stack] = result.stderr.split('\n');
    expect(first).toBe('tilehouse: internal_error: stdin broke (a bug in tilehouse; run with --log-level debug for the stack)');
    expect(stack[0]).toBe('  Error: stdin broke');
    expect(stack[1]).toMatch(/^ {6}at /);
    expect(stack.at(-1)).toBe('');
  });

  it('scrubs registered secrets from what commands and errors print', async () => {
    registerSecret('main-test-secret-5150');
    const result = await cli(['no-such-command-main-test-secret-5150']);
    expect(result.stderr).toContain('unknown command "no-such-command-[redacted]"');
    expect(result.stderr).not.toContain('main-test-secret-5150');
  });
});
