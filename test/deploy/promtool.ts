import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { underCi } from '../support/ci.js';

const run = promisify(execFile);

/**
 * The rules checker (what `promtool check rules` runs, see scripts/install-promtool.sh), built into
 * .tools/bin (or $PROMTOOL_CHECK_RULES_BIN). Absent outside CI: the tests that need it are skipped,
 * and say so; absent under CI: they fail.
 */
export function promtoolBinaryOrSkip(): string | null {
  const binary = process.env.PROMTOOL_CHECK_RULES_BIN ?? path.resolve('.tools/bin/promtool-check-rules');
  if (existsSync(binary)) return binary;
  if (underCi()) throw new Error(`CI is set but no promtool is installed at ${binary}: run \`npm run setup:promtool\`.`);
  return null;
}

export interface PromtoolResult {
  exitCode: number;
  /** stdout and stderr together: like promtool, it reports success on stdout and failures on stderr. */
  output: string;
}

export async function promtool(binary: string, args: string[], cwd: string): Promise<PromtoolResult> {
  try {
    const { stdout, stderr } = await run(binary, args, { cwd, timeout: 30_000 });
    return { exitCode: 0, output: stdout + stderr };
  } catch (error) {
    const failed = error as { code?: number | string; stdout?: string; stderr?: string };
    if (typeof failed.code !== 'number') throw error;
    return { exitCode: failed.code, output: `${failed.stdout ?? ''}${failed.stderr ?? ''}` };
  }
}
