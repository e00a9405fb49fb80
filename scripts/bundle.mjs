// Bundles the CLI into dist/bundle/tilehouse.js, the file that ships (bin, Docker image).
//
// Why a bundle: a CronJob pays start-up on every run, and resolving and compiling the modules of
// zod, undici, yaml and pino one file at a time was most of it (bench: ~410 ms to the first token
// request unbundled, ~290 ms bundled). Code splitting keeps lazy imports lazy (each command, the
// BigQuery sink, the gs:// and s3:// writers); @google-cloud/bigquery, @google-cloud/storage,
// google-auth-library (the one copy the Google clients use too) and @opentelemetry/*
// stay in node_modules and load only when used. The AWS SDK is bundled, in the chunks only an
// s3:// target imports: loaded from node_modules it costs a run ~35 MB of peak RSS, from its chunks
// ~27 MB (measured: VmHWM before and after importing @aws-sdk/client-s3 and making a client, Node 24).
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { constants as http2Constants } from 'node:http2';
import { build } from 'esbuild';

/**
 * zod's namespace re-exports every locale (`z.locales`, `z.core.locales`: ~50 languages, 370 KB of
 * the zod + yaml chunk), which a bundler cannot drop from `export * as`. tilehouse only ever
 * speaks English, the locale zod itself registers (v4/classic/schemas.js imports en.js directly),
 * so the locales' index resolves to English alone. Measured (5-row run, image flags, 8 interleaved
 * runs, chunks already ASCII): peak RSS 85.2 -> 83.8 MB; the chunk 1.05 -> 0.69 MB.
 */
const zodEnglishOnly = {
  name: 'zod-english-only',
  setup(build) {
    build.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) =>
      /[\\/]zod[\\/]v4[\\/](classic|core)[\\/]/.test(args.importer)
        ? { path: join(dirname(args.importer), '../locales/en.js'), namespace: 'zod-locales' }
        : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: 'zod-locales' }, (args) => ({
      contents: `export { default as en } from ${JSON.stringify(args.path)};`,
      resolveDir: dirname(args.path),
    }));
  },
};

/**
 * undici's HTTP/1.1 client requires its HTTP/2 client, which loads `node:http2` (and with it `tls`)
 * at start-up only to read protocol constants. tilehouse's Agent sets `allowH2: false`
 * (src/pipeline/source-session.ts), so no session is ever opened; the constants are copied here
 * from the building node (the image builds and runs on the same version), and anything else
 * undici would take from `node:http2` loads the real module when first asked for. Measured (5-row
 * run against the loopback sandbox, image flags, 8 interleaved runs): peak RSS 83.1 -> 79.1 MB.
 * Against an https source `tls` loads anyway; `node:http2` on top of it costs ~3.5 MB.
 */
const undiciLazyHttp2 = {
  name: 'undici-lazy-http2',
  setup(build) {
    build.onResolve({ filter: /^node:http2$/ }, (args) =>
      /[\\/]undici[\\/]lib[\\/]dispatcher[\\/]client-h2\.js$/.test(args.importer) ? { path: 'node:http2', namespace: 'undici-lazy-http2' } : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: 'undici-lazy-http2' }, () => ({
      loader: 'js',
      contents: [
        `const constants = Object.freeze(${JSON.stringify(http2Constants)});`,
        'let real;',
        "module.exports = new Proxy({ constants }, { get: (target, key) => (key === 'constants' ? constants : (real ??= require('node:http2'))[key]) });",
      ].join('\n'),
    }));
  },
};

// `node scripts/bundle.mjs [OUTDIR]`: tests build into a directory of their own.
const outdir = process.argv[2] ?? 'dist/bundle';
// Chunk names carry content hashes: clear old ones so the directory holds one build only.
await rm(outdir, { recursive: true, force: true });
await build({
  // src/main.ts relaunches node under tilehouse's flags before it loads the CLI; node-flags:
  // bin/tilehouse.js does the same before it loads the bundle.
  entryPoints: { tilehouse: 'src/main.ts', 'node-flags': 'src/node-flags.ts' },
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: true,
  // OpenTelemetry stays in node_modules too: imported only when OTEL_* variables turn it on
  // (src/telemetry/open-telemetry.ts), and the bundle test checks a run without them loads none of it.
  // pg and pg-copy-streams too: loaded only by a postgres sink (pg's optional pg-native is never bundled).
  external: ['@google-cloud/bigquery', '@google-cloud/storage', 'google-auth-library', '@opentelemetry/*', 'pg', 'pg-copy-streams'],
  // Some bundled CommonJS dependencies call require() for Node built-ins.
  banner: { js: "import { createRequire as __tilehouseRequire } from 'node:module'; const require = __tilehouseRequire(import.meta.url);" },
  plugins: [zodEnglishOnly, undiciLazyHttp2],
  // Minified, names kept (error classes and functions keep their .name; stack positions map back
  // through the source maps beside the chunks). V8 keeps every loaded module's source in its heap,
  // and the live heap sets how far V8 lets it grow before a full collection: 3.15 -> 1.70 MB of
  // chunks, and peak RSS (image flags, 3 interleaved runs) 140 -> 130 MB at 100k rows, 171 -> 161
  // MB at 1M rows (50 ms, c=8), 83.4 -> 82.7 MB at 5 rows.
  minify: true,
  keepNames: true,
  logLevel: 'warning',
});

/**
 * Every chunk pure ASCII. V8 keeps each loaded module's source text in the heap for its lazy
 * functions, one byte a character only if all of them are Latin-1; one "—" or "…" in a comment
 * stores the whole chunk two bytes a character (the zod + yaml chunk, ~1 MB, became 2 MB).
 * esbuild's default `charset: 'ascii'` escapes strings, regular expressions and identifiers, but
 * copies comments as written. A \uXXXX escape means the same character in every place esbuild
 * leaves one (strings, templates, regular expressions with or without the u flag, identifiers),
 * and is plain text in a comment. Measured (5-row run, image flags, 8 interleaved runs): peak RSS
 * 87.3 -> 83.4 MB. Source maps are not rewritten: a column after an escaped comment character on
 * the same line shifts by a few places.
 */
async function escapeNonAscii(directory) {
  for (const name of await readdir(directory)) {
    if (!name.endsWith('.js')) continue;
    const file = join(directory, name);
    const text = await readFile(file, 'utf8');
    // Astral characters are two UTF-16 units: each is escaped on its own, a surrogate pair.
    const ascii = text.replace(/[^\x00-\x7f]/g, (unit) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, '0')}`);
    if (ascii !== text) await writeFile(file, ascii);
  }
}
await escapeNonAscii(outdir);
