import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { COMMANDS } from '../../src/cli/commands.js';

/**
 * Issue 25 item 5: examples named config files and jobs that do not exist, so they failed as
 * written. Every command's help example must name files and jobs that exist. (The documents'
 * commands are run as written by test/docs/readme-commands.test.ts.)
 */

function jobNames(): Set<string> {
  const names = new Set<string>();
  for (const directory of ['jobs', ...readdirSync('examples').map((example) => path.join('examples', example, 'jobs'))]) {
    if (!existsSync(directory)) continue;
    for (const file of readdirSync(directory)) {
      const name = /^name: (\S+)$/m.exec(readFileSync(path.join(directory, file), 'utf8'))?.[1];
      if (name !== undefined) names.add(name);
    }
  }
  return names;
}

describe("the commands' help examples", () => {
  it('name jobs and config files that exist', async () => {
    const known = jobNames();
    const lines: string[] = [];
    for (const entry of COMMANDS) {
      const { help } = await entry.load();
      lines.push(
        ...help
          .split('\n')
          .map((line) => line.trim())
          .filter((line) => line.startsWith('tilehouse ')),
      );
    }
    expect(lines.length).toBeGreaterThanOrEqual(COMMANDS.length - 1);
    const jobs = lines.flatMap((line) => [...line.matchAll(/--(?:job|tile|backfill)[ =]([a-z][a-z0-9_]*)/g)].map((match) => ({ line, job: match[1]! })));
    expect(jobs.filter(({ job }) => !known.has(job))).toEqual([]);
    const files = lines.flatMap((line) => [...line.matchAll(/--(?:config|jobs) ([^\s`]+)/g)].map((match) => ({ line, path: match[1]! })));
    expect(files.filter(({ path: file }) => !existsSync(file))).toEqual([]);
  });
});
