import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { sandboxEnv } from '../support/cli-harness.js';
import { CLI_ENTRY, exitWithin, textOf } from '../support/child-process.js';
import { shellQuote } from '../support/shell-quote.js';
import { detailQuery } from '../support/queries.js';
import { sandboxWorkspaceForAll } from '../support/sandbox-fixture.js';

/**
 * Issue 11: `tilehouse run` as a person sees it on a terminal. The CLI runs on a pseudo-terminal
 * (util-linux `script`), and its output is replayed through a tiny terminal model (`\r`, `\n`,
 * erase-line, cursor-up) to get the final screen.
 */

const TILES = ['alpha', 'bravo', 'charlie'];
const INCIDENTS = 400;
// 20 pages of 20 rows per tile at 25 ms each, one at a time: ~0.5 s per tile, several redraws.
const fixture = sandboxWorkspaceForAll(
  { incidents: INCIDENTS, latencyMs: 25 },
  TILES.map((name) => ({ name, tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }] })),
  { itemsPerPage: 20, concurrency: 1 },
);

/** The screen after `output`: what a terminal shows once every `\r`, erase and cursor move is applied. */
export function finalScreen(output: string): string[] {
  const lines: string[] = [''];
  let row = 0;
  let column = 0;
  // eslint-disable-next-line no-control-regex
  for (const token of output.match(/\x1b\[[0-9;]*[A-Za-z]|\r|\n|[^\x1b\r\n]+/g) ?? []) {
    if (token === '\r') column = 0;
    else if (token === '\n') {
      row += 1;
      column = 0;
      if (lines[row] === undefined) lines[row] = '';
    } else if (token === '\x1b[K') lines[row] = lines[row]!.slice(0, column);
    else if (/^\x1b\[\d*A$/.test(token)) row = Math.max(0, row - Number(token.slice(2, -1) || 1));
    else if (token.startsWith('\x1b['))
      continue; // colours: none are expected, but harmless
    else {
      const line = lines[row]!.padEnd(column);
      lines[row] = line.slice(0, column) + token + line.slice(column + token.length);
      column += token.length;
    }
  }
  while (lines.length > 0 && lines.at(-1) === '') lines.pop();
  return lines;
}

describe('tilehouse run on a terminal', () => {
  it('shows one line per event, a live progress line per tile, and the summary last; no JSON', async () => {
    const command = [process.execPath, '--import', 'tsx', CLI_ENTRY, 'run', '--config', fixture.workspace.configFile, '--jobs', fixture.workspace.jobsDir]
      .map(shellQuote)
      .join(' ');
    const child = spawn('script', ['-qfec', `stty cols 120 rows 40; ${command}`, '/dev/null'], {
      env: { ...process.env, ...sandboxEnv(fixture.sandbox), CI: '', TILEHOUSE_LOG_LEVEL: '', COLUMNS: '120', LINES: '40', TERM: 'xterm' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const [raw, errors, exit] = await Promise.all([textOf(child.stdout), textOf(child.stderr), exitWithin(child, 60_000)]);
    expect(errors).toBe('');
    expect(exit.code).toBe(0);

    // A pty turns \n into \r\n; the model treats both the same way a terminal does.
    const redraws = raw.split('\r\x1b[K').length - 1;
    expect(redraws).toBeGreaterThanOrEqual(TILES.length * 2);
    const frames = raw.split('\r\x1b[K').map((frame) => frame.split('\r')[0]!.split('\n')[0]!);
    for (const tile of TILES) {
      const progress = frames.filter((frame) => frame.startsWith(`${tile}  `));
      expect(progress.length, `${tile} progress frames`).toBeGreaterThanOrEqual(2);
      for (const frame of progress)
        expect(frame).toMatch(new RegExp(`^${tile} {2}(connecting…|\\d+/20 pages {2}\\d+/400 rows {2}[\\d.]+k? rows/s( {2}ETA \\d+s)?)$`));
    }

    const screen = finalScreen(raw);
    expect(screen.length).toBeLessThan(TILES.length * 8);
    const time = '\\d\\d:\\d\\d:\\d\\d';
    expect(screen).toEqual([
      expect.stringMatching(new RegExp(`^${time} INFO  run starting jobs=alpha,bravo,charlie config=.*env\\.yaml$`)),
      ...TILES.map((tile) => expect.stringMatching(new RegExp(`^${time} INFO  job ${tile} succeeded: 400 rows in 20 pages$`))),
      expect.stringMatching(new RegExp(`^${time} INFO  run finished$`)),
      expect.stringMatching(/^run \S+: 3 succeeded, 0 failed in [\d.]+ s$/),
      ...TILES.flatMap((tile) => [
        expect.stringMatching(new RegExp(`^ {2}ok {3}${tile} \\([\\d.]+ s\\): 400 rows, 20 pages → .*${tile}\\.csv$`)),
        expect.stringMatching(/^ {7}time: source [\d.]+ s, reading [\d.]+ s, prepare csv [\d.]+ s, publish csv [\d.]+ s$/),
      ]),
    ]);
  }, 70_000);
});
