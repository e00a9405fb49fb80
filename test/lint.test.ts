// The formatter and the linters that `npm test` runs (npm run lint: Biome, then knip), against
// small projects in a temp directory: with the repository's settings, a badly formatted file, a
// floating promise, an unused import and an unused export each fail, and their fixed forms pass.
import { execFile } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { tempDirEachTest } from './support/temp-dir-hooks.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const BIN = path.join(ROOT, 'node_modules', '.bin');
const run = promisify(execFile);

async function exitOf(command: string, args: string[], cwd: string): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await run(path.join(BIN, command), args, { cwd, env: { ...process.env, NO_COLOR: '1' } });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof failed.code === 'number' ? failed.code : -1, output: `${failed.stdout ?? ''}${failed.stderr ?? ''}` };
  }
}

/** The repository's biome.jsonc, as settings for every file of `dir` (its file lists are the repository's own). */
async function biomeSettingsIn(dir: string): Promise<void> {
  const text = await readFile(path.join(ROOT, 'biome.jsonc'), 'utf8');
  const settings = JSON.parse(text.replace(/^\s*\/\/.*$/gm, '')) as {
    $schema?: string;
    vcs?: unknown;
    files?: unknown;
    formatter: { includes?: unknown };
    overrides?: unknown;
    plugins?: string[];
  };
  delete settings.$schema;
  delete settings.vcs;
  delete settings.files;
  delete settings.overrides;
  delete settings.formatter.includes;
  // The plugins are named relative to the repository.
  settings.plugins = settings.plugins?.map((plugin) => path.resolve(ROOT, plugin));
  await writeFile(path.join(dir, 'biome.json'), JSON.stringify(settings));
}

describe('npm test', () => {
  it('runs the formatter check and both linters before the tests', async () => {
    const { scripts } = JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(scripts.test).toMatch(/npm run -s lint && vitest run$/);
    expect(scripts.lint).toMatch(/^biome ci .* && knip /);
  });
});

describe('Biome with the repository settings', () => {
  const dir = tempDirEachTest('tilehouse-lint-');

  it('refuses a badly formatted file and passes it formatted', async () => {
    await biomeSettingsIn(dir.path);
    await writeFile(path.join(dir.path, 'a.ts'), 'export const  answer = {value:"forty-two"}\n');
    const refused = await exitOf('biome', ['ci', 'a.ts'], dir.path);
    expect(refused.code).not.toBe(0);
    expect(refused.output).toMatch(/format/i);
    await writeFile(path.join(dir.path, 'a.ts'), "export const answer = { value: 'forty-two' };\n");
    expect((await exitOf('biome', ['ci', 'a.ts'], dir.path)).code).toBe(0);
  });

  it('refuses a floating promise and an unused import; passes them awaited and used', async () => {
    await biomeSettingsIn(dir.path);
    const floating = "import { join } from 'node:path';\nasync function save(): Promise<void> {}\nexport function store(): void {\n  save();\n}\n";
    await writeFile(path.join(dir.path, 'b.ts'), floating);
    const refused = await exitOf('biome', ['ci', 'b.ts'], dir.path);
    expect(refused.code).not.toBe(0);
    expect(refused.output).toContain('noFloatingPromises');
    expect(refused.output).toContain('noUnusedImports');
    const handled =
      "import { join } from 'node:path';\nasync function save(): Promise<void> {}\nexport async function store(): Promise<string> {\n  await save();\n  return join('a', 'b');\n}\n";
    await writeFile(path.join(dir.path, 'b.ts'), handled);
    expect((await exitOf('biome', ['ci', 'b.ts'], dir.path)).output).not.toMatch(/noFloatingPromises|noUnusedImports/);
  });

  it('refuses a skipped, a focused and a conditionally skipped test; passes a skip through test/support/skip.ts', async () => {
    await biomeSettingsIn(dir.path);
    const skips = [
      "import { describe, it } from 'vitest';",
      "it.skip('a', () => undefined);",
      "describe.only('b', () => undefined);",
      "it.skipIf(process.getuid?.() === 0)('c', () => undefined);",
      "describe.runIf(false)('d', () => undefined);",
      '',
    ].join('\n');
    await writeFile(path.join(dir.path, 'c.test.ts'), skips);
    const refused = await exitOf('biome', ['ci', '--colors=off', '--max-diagnostics=20', 'c.test.ts'], dir.path);
    expect(refused.code).not.toBe(0);
    expect(refused.output).toContain('c.test.ts:2:4 lint/suspicious/noSkippedTests');
    expect(refused.output).toContain('c.test.ts:3:10 lint/suspicious/noFocusedTests');
    expect(refused.output).toContain('c.test.ts:4:4 plugin');
    expect(refused.output).toContain('c.test.ts:5:10 plugin');
    expect(refused.output).toContain('use describeUnless/itUnless');
    const stated = "import { itUnless } from './skip.js';\nitUnless('no widget here')('c', () => undefined);\n";
    await writeFile(path.join(dir.path, 'c.test.ts'), stated);
    expect(await exitOf('biome', ['ci', 'c.test.ts'], dir.path)).toMatchObject({ code: 0 });
  });
});

describe('knip', () => {
  const dir = tempDirEachTest('tilehouse-knip-');

  async function project(lib: string): Promise<void> {
    await mkdir(path.join(dir.path, 'src'));
    await writeFile(path.join(dir.path, 'package.json'), JSON.stringify({ name: 'knip-probe', private: true, type: 'module' }));
    await writeFile(path.join(dir.path, 'knip.json'), JSON.stringify({ entry: ['src/main.ts'], project: ['src/**/*.ts'], ignoreExportsUsedInFile: true }));
    await writeFile(path.join(dir.path, 'src', 'main.ts'), "import { used } from './lib.js';\nconsole.log(used());\n");
    await writeFile(path.join(dir.path, 'src', 'lib.ts'), lib);
  }

  it('refuses an export nothing imports, and passes when nothing is left unused', { timeout: 60_000 }, async () => {
    await project('export function used(): number {\n  return 1;\n}\nexport function forgotten(): number {\n  return 2;\n}\n');
    const refused = await exitOf('knip', ['--no-progress', '--no-config-hints'], dir.path);
    expect(refused.code).not.toBe(0);
    expect(refused.output).toMatch(/Unused exports[\s\S]*forgotten/);
    await writeFile(path.join(dir.path, 'src', 'lib.ts'), 'export function used(): number {\n  return 1;\n}\n');
    expect(await exitOf('knip', ['--no-progress', '--no-config-hints'], dir.path)).toMatchObject({ code: 0 });
  });
});
