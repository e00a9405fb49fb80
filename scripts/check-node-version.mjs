// Run first by `npm test`: the tests must run on the Node major the image runs (.node-version,
// which the Dockerfile's FROM and .ci/run follow), or a pass says nothing about the image. Under
// CI=true another major is refused (exit 2); on a developer's machine it is a warning, so a quick
// run on whatever Node is installed still works. .ci/run puts the pinned Node first on PATH.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The verdict for running on `actual` (process.versions.node) when the image runs `expected`. */
export function compareNodeVersion(expected, actual) {
  const major = (version) => Number.parseInt(version.replace(/^v/, '').split('.')[0] ?? '', 10);
  const want = major(expected);
  if (!Number.isInteger(want)) return { ok: false, message: `.node-version holds ${JSON.stringify(expected)}, not a Node version` };
  if (major(actual) === want) return { ok: true };
  return {
    ok: false,
    message:
      `the tests are running on Node v${actual.replace(/^v/, '')}, but the image runs Node ${expected} (.node-version); ` +
      `put that Node first on PATH: export PATH="$(bash scripts/install-node.sh):$PATH"`,
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const file = fileURLToPath(new URL('../.node-version', import.meta.url));
  const verdict = compareNodeVersion(readFileSync(file, 'utf8').trim(), process.versions.node);
  if (!verdict.ok) {
    // CI read as test/support/ci.ts reads it (this script runs before tsx is there to load that).
    const ci = process.env.CI ?? '';
    const refuse = ci !== '' && ci !== '0' && ci.toLowerCase() !== 'false';
    process.stderr.write(`check-node-version: ${refuse ? 'error' : 'warning'}: ${verdict.message}\n`);
    if (refuse) process.exit(2);
  }
}
