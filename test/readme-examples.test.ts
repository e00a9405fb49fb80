import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { COMMANDS } from '../src/cli/commands.js';

/**
 * Issue 25 item 5: README commands named config/production.yaml, and jobs incidents_by_type and
 * daily_severity, none of which exist, so they failed as written. Every command line of the README
 * (a line that starts with `tilehouse` or `npm run demo`) must name files and jobs that exist; so
 * must every command's help example.
 */

const README = readFileSync('README.md', 'utf8');

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

const commandLines = README.split('\n')
  .map((line) => line.trim().replace(/^(\w+=\S+\s+)+/, ''))
  .filter((line) => /^(tilehouse|npm run demo) /.test(line));

describe('the README command lines', () => {
  it('are found (the test reads what it thinks it reads)', () => {
    expect(commandLines.some((line) => line.startsWith('tilehouse probe '))).toBe(true);
    expect(commandLines.some((line) => line.startsWith('tilehouse backfill '))).toBe(true);
  });

  it('name jobs that exist in jobs/ or examples/*/jobs', () => {
    const known = jobNames();
    const named = commandLines.flatMap((line) => [...line.matchAll(/--(?:job|tile)[ =]([a-z][a-z0-9_]*)/g)].map((match) => ({ line, job: match[1]! })));
    expect(named.length).toBeGreaterThan(0);
    expect(named.filter(({ job }) => !known.has(job))).toEqual([]);
  });

  it('name config files and job directories that exist', () => {
    const paths = commandLines.flatMap((line) => [...line.matchAll(/--(?:config|jobs) ([^\s`]+)/g)].map((match) => ({ line, path: match[1]! })));
    expect(paths.length).toBeGreaterThan(0);
    expect(paths.filter(({ path: file }) => !/^[A-Z]+$/.test(file) && !existsSync(file))).toEqual([]);
  });
});

describe("the commands' help examples", () => {
  it('name jobs and config files that exist', async () => {
    const known = jobNames();
    const lines: string[] = [];
    for (const entry of COMMANDS) {
      const { help } = await entry.load();
      lines.push(...help.split('\n').map((line) => line.trim()).filter((line) => line.startsWith('tilehouse ')));
    }
    expect(lines.length).toBeGreaterThanOrEqual(COMMANDS.length - 1);
    const jobs = lines.flatMap((line) => [...line.matchAll(/--(?:job|tile|backfill)[ =]([a-z][a-z0-9_]*)/g)].map((match) => ({ line, job: match[1]! })));
    expect(jobs.filter(({ job }) => !known.has(job))).toEqual([]);
    const files = lines.flatMap((line) => [...line.matchAll(/--(?:config|jobs) ([^\s`]+)/g)].map((match) => ({ line, path: match[1]! })));
    expect(files.filter(({ path: file }) => !existsSync(file))).toEqual([]);
  });
});
