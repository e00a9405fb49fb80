// Bundles the CLI into dist/bundle/tilehouse.js, the file that ships (bin, Docker image).
//
// Why a bundle: a CronJob pays start-up on every run, and resolving and compiling the modules of
// zod, undici, yaml and pino one file at a time was most of it (bench: ~410 ms to the first token
// request unbundled, ~290 ms bundled). Code splitting keeps lazy imports lazy (each command, the
// BigQuery sink, the gs:// CSV writer); @google-cloud/bigquery, @google-cloud/storage and
// pino-pretty stay in node_modules and load only when used.
import { rm } from 'node:fs/promises';
import { build } from 'esbuild';

// `node scripts/bundle.mjs [OUTDIR]`: tests build into a directory of their own.
const outdir = process.argv[2] ?? 'dist/bundle';
// Chunk names carry content hashes: clear old ones so the directory holds one build only.
await rm(outdir, { recursive: true, force: true });
await build({
  entryPoints: { tilehouse: 'src/cli.ts' },
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: true,
  external: ['@google-cloud/bigquery', '@google-cloud/storage', 'pino-pretty'],
  // Some bundled CommonJS dependencies call require() for Node built-ins.
  banner: { js: "import { createRequire as __tilehouseRequire } from 'node:module'; const require = __tilehouseRequire(import.meta.url);" },
  logLevel: 'warning',
});
