#!/usr/bin/env -S node --liftoff-only --heap-growing-percent=200 --max-old-space-size=2048 --max-semi-space-size=8
// The `tilehouse` command (package.json "bin"), so that `npx tilehouse` works in a checkout right
// after `npm ci`, before any build:
// - the shipped bundle (dist/bundle/tilehouse.js, `npm run build`) when it exists and is not older
//   than the sources beside it: the fast path (~290 ms to the first request instead of ~1 s);
// - else src/cli.ts through tsx (a devDependency, so a checkout only), in this same process.
// Either way it first makes sure node runs with tilehouse's flags (src/node-flags.ts: the image's
// node flags and NODE_OPTIONS). Started as a command (`npx tilehouse`, an installed package's
// `tilehouse`, ./bin/tilehouse.js) the line above gives them to node, in one start (`env -S`:
// GNU coreutils 8.30+, BSD and macOS env); started as `node bin/tilehouse.js` it relaunches itself
// once under them (V8 sizes its heap before any script runs). test/node-flags.test.ts holds the
// line equal to src/node-flags.ts.
// The Docker image runs the bundle directly; this file only chooses, it has no logic of its own.
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const bundle = path.join(root, 'dist', 'bundle', 'tilehouse.js');
const sources = path.join(root, 'src');

/** The newest modification time of the files the bundle is built from. */
function newestSource() {
  let newest = statSync(path.join(root, 'package.json')).mtimeMs;
  for (const entry of readdirSync(sources, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) newest = Math.max(newest, statSync(path.join(entry.parentPath, entry.name)).mtimeMs);
  }
  return newest;
}

const checkout = existsSync(path.join(sources, 'cli.ts'));
const useBundle = existsSync(bundle) && (!checkout || statSync(bundle).mtimeMs >= newestSource());
if (!useBundle && !checkout) {
  process.stderr.write(`tilehouse: ${bundle} is missing; reinstall the package, or run "npm run build" in a checkout\n`);
  process.exit(1);
}
if (!useBundle) {
  const { register } = await import('tsx/esm/api');
  register();
}
// Before the CLI is loaded: a relaunch replaces this process, and anything loaded is wasted.
const { relaunchWithNodeFlags } = await import(
  pathToFileURL(useBundle ? path.join(root, 'dist', 'bundle', 'node-flags.js') : path.join(sources, 'node-flags.ts')).href
);
relaunchWithNodeFlags();
const { runAsProcess } = await import(pathToFileURL(useBundle ? bundle : path.join(sources, 'cli.ts')).href);
await runAsProcess();
