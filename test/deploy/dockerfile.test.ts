/**
 * The Dockerfile, read as text: stages, user, install flags, entrypoint, and that the paths agree
 * with package.json, tsconfig.build.json and k8s/. test/image/image.test.ts builds the image with
 * buildah and runs it as the pods do; these checks run everywhere, without root.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { imageNodeOf } from '../../bench/support/image-node.js';
import { IMAGE_PATHS, NODE_ARGS, NODE_OPTIONS, RUN_AS_USER } from '../../src/deploy/deploy-settings.js';

interface Instruction {
  keyword: string;
  args: string;
}
interface Stage {
  from: string;
  instructions: Instruction[];
}

/** Instructions per stage: continuation lines joined, comments and the parser directive dropped. */
function parseDockerfile(text: string): Stage[] {
  const logical = text
    .split('\n')
    .filter((line) => !/^\s*#/.test(line))
    .join('\n')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');
  const stages: Stage[] = [];
  for (const line of logical) {
    const [, keyword = '', args = ''] = /^(\S+)\s*(.*)$/.exec(line) ?? [];
    const instruction = { keyword: keyword.toUpperCase(), args: args.replace(/\s+/g, ' ') };
    if (instruction.keyword === 'FROM') stages.push({ from: instruction.args, instructions: [] });
    else stages.at(-1)!.instructions.push(instruction);
  }
  return stages;
}

function all(stage: Stage, keyword: string): string[] {
  return stage.instructions.filter((instruction) => instruction.keyword === keyword).map((instruction) => instruction.args);
}

function envOf(stage: Stage): Record<string, string> {
  return Object.fromEntries(all(stage, 'ENV').flatMap((args) => [...args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=(\S+)/g)].map((match) => [match[1]!, match[2]!])));
}

let stages: Stage[];
let build: Stage;
let runtime: Stage;
beforeAll(async () => {
  stages = parseDockerfile(await readFile('Dockerfile', 'utf8'));
  build = stages[0]!;
  runtime = stages.at(-1)!;
});

describe('Dockerfile', () => {
  it('builds in one stage and runs from another, both on the Node of .node-version (the tests run on it)', async () => {
    const node = (await readFile('.node-version', 'utf8')).trim().replaceAll('.', '\\.');
    expect(stages).toHaveLength(2);
    // A full version: the image test's stand-in base (scripts/build-node-base-image.sh) needs it to
    // fetch the same Node binary, and a rebuild months later gets the Node that was tested.
    expect(build.from).toMatch(new RegExp(`^node:${node}-bookworm-slim AS build$`, 'i'));
    expect(runtime.from.replace(/ AS \w+$/i, '')).toBe(build.from.replace(/ AS \w+$/i, ''));
    expect(all(build, 'RUN')).toEqual(expect.arrayContaining([expect.stringMatching(/^npm ci\b/), 'npm run build']));
  });

  it('installs production dependencies only in the final stage', () => {
    const installs = all(runtime, 'RUN').filter((run) => /\bnpm (ci|install|i)\b/.test(run));
    expect(installs).toHaveLength(1);
    expect(installs[0]).toMatch(/\bnpm ci\b.*--omit=dev/);
    expect(envOf(runtime).NODE_ENV).toBe('production');
  });

  it('can run src/ with production dependencies alone: every package imported at run time is in dependencies', async () => {
    const pkg = JSON.parse(await readFile('package.json', 'utf8')) as { dependencies: Record<string, string> };
    const missing = new Set<string>();
    for (const entry of await readdir('src', { recursive: true, withFileTypes: true })) {
      if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
      const file = path.join(entry.parentPath, entry.name);
      const code = await readFile(file, 'utf8');
      // Static imports and re-exports (not `import type`, which is erased), and dynamic import().
      const specifiers = [
        ...[...code.matchAll(/^\s*(?:import|export)\s+(?!type\s)[^'"]*?from\s+'([^']+)'/gm)].map((match) => match[1]!),
        ...[...code.matchAll(/^\s*import\s+'([^']+)'/gm)].map((match) => match[1]!),
        ...[...code.matchAll(/\bimport\(\s*'([^']+)'\s*\)/g)].map((match) => match[1]!),
      ];
      for (const specifier of specifiers) {
        if (specifier.startsWith('.') || specifier.startsWith('node:')) continue;
        const name = specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0]!;
        if (pkg.dependencies[name] === undefined) missing.add(`${name} (imported by ${file})`);
      }
    }
    // `npm ci --omit=dev` leaves devDependencies out of the image: importing one crashes every command.
    expect([...missing]).toEqual([]);
  });

  it('copies only the bundled output from the build stage, and no jobs or config', async () => {
    const bundler = await readFile('scripts/bundle.mjs', 'utf8');
    expect(bundler).toContain("process.argv[2] ?? 'dist/bundle'");
    expect(all(runtime, 'COPY')).toContain('--from=build /app/dist/bundle ./dist/bundle');
    for (const stage of stages) {
      for (const copy of all(stage, 'COPY')) expect(copy).not.toMatch(/(^|\s)\.?\/?(jobs|config|k8s)\b/);
    }
  });

  it('runs as a non-root numeric user in the final stage, the one the pods run as', () => {
    const users = all(runtime, 'USER');
    expect(users).toHaveLength(1);
    const [user, group] = users[0]!.split(':');
    expect(user).not.toMatch(/^(0|root)$/);
    expect(Number(user)).toBe(RUN_AS_USER);
    expect(group === undefined || group !== '0').toBe(true);
    // USER comes after every RUN: nothing later runs as root.
    const keywords = runtime.instructions.map((instruction) => instruction.keyword);
    expect(keywords.lastIndexOf('RUN')).toBeLessThan(keywords.indexOf('USER'));
  });

  it("starts the bundle that package.json's bin launcher runs when built, with run as the default command", async () => {
    const entrypoint = JSON.parse(all(runtime, 'ENTRYPOINT')[0]!) as string[];
    const workdir = all(runtime, 'WORKDIR')[0];
    const pkg = JSON.parse(await readFile('package.json', 'utf8')) as { bin: Record<string, string> };
    // The image skips the launcher (bin/tilehouse.js) and runs what it would choose in a package.
    const launcher = await readFile(pkg.bin.tilehouse!, 'utf8');
    expect(launcher).toContain("path.join(root, 'dist', 'bundle', 'tilehouse.js')");
    expect(entrypoint).toEqual(['node', ...NODE_ARGS, `${workdir}/dist/bundle/tilehouse.js`]);
    expect(workdir).toBe(IMAGE_PATHS.workdir);
    expect(JSON.parse(all(runtime, 'CMD')[0]!)).toEqual(['run']);
  });

  it('starts node with the flags the manifests set (NODE_OPTIONS) and the bench reads from here', async () => {
    // The manifests' env overrides the image's: a difference would make the pod run differently
    // from the image the bench measured.
    const image = imageNodeOf(await readFile('Dockerfile', 'utf8'));
    expect(image.nodeOptions).toBe(NODE_OPTIONS);
    expect(image.nodeArgs).toEqual([...NODE_ARGS]);
  });

  it('expects jobs and config where k8s/ mounts them, and temp files under TMPDIR', () => {
    const env = envOf(runtime);
    expect(env.TILEHOUSE_JOBS).toBe(IMAGE_PATHS.jobsDirectory);
    expect(env.TILEHOUSE_CONFIG).toBe(`${IMAGE_PATHS.configDirectory}/default.yaml`);
    expect(env.TMPDIR).toBe(IMAGE_PATHS.tempDirectory);
  });

  it('has a .dockerignore that keeps dependencies, output, tooling, secrets and mounted files out of the context', async () => {
    const ignored = (await readFile('.dockerignore', 'utf8'))
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line !== '' && !line.startsWith('#'));
    expect(ignored).toEqual(expect.arrayContaining(['node_modules', 'dist', 'out', '.tools', '.git', '.tmp', 'coverage', '.env', 'jobs', 'config']));
    // What the build copies must stay in the context.
    for (const needed of ['src', 'package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json']) expect(ignored).not.toContain(needed);
    // The build copies scripts/bundle.mjs (issue 25: `scripts` in .dockerignore broke every build):
    // scripts/ may be left out only with that file let back in, after the line that leaves it out.
    expect(all(build, 'COPY')).toContain('scripts/bundle.mjs ./scripts/');
    expect(ignored).not.toContain('scripts');
    if (ignored.includes('scripts/*')) expect(ignored.lastIndexOf('!scripts/bundle.mjs')).toBeGreaterThan(ignored.lastIndexOf('scripts/*'));
  });
});
