// The suite's own guards, on a small suite in a temp directory run with the repository's vitest
// settings: a test without an assertion fails, a skip without a reason fails, and under CI every
// skip fails, with or without one (test/support/skip-reporter.ts).
import { execFile } from 'node:child_process';
import { symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { underCi } from './support/ci.js';
import { tempDirEachTest } from './support/temp-dir-hooks.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const run = promisify(execFile);
const dir = tempDirEachTest('tilehouse-skips-');

/** `vitest run` over `tests` (file name to text) with the repository's config, but only those files. */
async function vitestOn(tests: Record<string, string>, ci: boolean): Promise<{ code: number; output: string }> {
  await symlink(path.join(ROOT, 'node_modules'), path.join(dir.path, 'node_modules'));
  const config = [
    `import base from ${JSON.stringify(path.join(ROOT, 'vitest.config.ts'))};`,
    // The main project's settings (requireAssertions, limits) at the top, without the projects.
    'const main = base.test.projects[0].test;',
    "export default { ...base, test: { ...base.test, ...main, projects: undefined, include: ['*.test.ts'], exclude: [], globalSetup: [] } };",
  ].join('\n');
  await writeFile(path.join(dir.path, 'vitest.config.ts'), config);
  for (const [name, text] of Object.entries(tests)) await writeFile(path.join(dir.path, name), text);
  const env = { ...process.env, CI: ci ? 'true' : '', NO_COLOR: '1' };
  try {
    const { stdout, stderr } = await run(path.join(ROOT, 'node_modules', '.bin', 'vitest'), ['run', '--root', dir.path], { cwd: dir.path, env });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof failed.code === 'number' ? failed.code : -1, output: `${failed.stdout ?? ''}${failed.stderr ?? ''}` };
  }
}

const SKIP = JSON.stringify(path.join(ROOT, 'test', 'support', 'skip.ts'));
const stated = [
  "import { expect, it } from 'vitest';",
  `import { itUnless } from ${SKIP};`,
  "it('runs', () => expect(1).toBe(1));",
  "itUnless('no widget here')('needs a widget', () => expect(1).toBe(1));",
  "it('finds out while running', (context) => context.skip('no gadget either'));",
  '',
].join('\n');

describe('the suite under its own guards', () => {
  it('passes a skip that says why outside CI, and lists it with its reason', { timeout: 60_000 }, async () => {
    const result = await vitestOn({ 'a.test.ts': stated }, false);
    expect(result.output).toContain('a.test.ts > needs a widget: no widget here');
    expect(result.output).toContain('a.test.ts > finds out while running: no gadget either');
    expect(result.code).toBe(0);
  });

  it('fails every skip under CI=true, naming it and its reason', { timeout: 60_000 }, async () => {
    const result = await vitestOn({ 'a.test.ts': stated }, true);
    expect(result.output).toContain('skipped under CI: a.test.ts > needs a widget: no widget here');
    expect(result.output).toContain('skipped under CI: a.test.ts > finds out while running: no gadget either');
    expect(result.code).toBe(1);
  });

  it('fails a skip without a reason, and a test without an assertion, outside CI too', { timeout: 60_000 }, async () => {
    const bare = [
      "import { describe, it } from 'vitest';",
      "it('asserts nothing', () => undefined);",
      "describe('a block', { skip: true }, () => { it('says not why', () => undefined); });",
      "it('is skipped while running', (context) => context.skip());",
      '',
    ].join('\n');
    const result = await vitestOn({ 'b.test.ts': bare }, false);
    expect(result.output).toMatch(/b\.test\.ts > asserts nothing\n.*expected any number of assertion, but got none/);
    expect(result.output).toContain('skipped without a reason (use describeUnless/itUnless or context.skip(reason)): b.test.ts > a block > says not why');
    expect(result.output).toContain('skipped without a reason (use describeUnless/itUnless or context.skip(reason)): b.test.ts > is skipped while running');
    expect(result.code).toBe(1);
  });
});

describe('underCi', () => {
  it('reads CI set to anything but empty, 0 or false as CI', () => {
    expect(['true', '1', 'yes', 'TRUE'].map((CI) => underCi({ CI }))).toEqual([true, true, true, true]);
    expect([undefined, '', '0', 'false', 'False'].map((CI) => underCi({ CI }))).toEqual([false, false, false, false, false]);
  });
});
