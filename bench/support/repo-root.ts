import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root: the bench runs from bench/ (tsx) or dist/bench/ (compiled). */
export function repoRoot(): string {
  let directory = dirname(fileURLToPath(import.meta.url));
  // package-lock.json, not package.json: tsc copies package.json into dist/ (the CLI imports it
  // for --version), and dist/ is where the compiled bench runs from.
  while (!existsSync(join(directory, 'package-lock.json'))) {
    const parent = dirname(directory);
    if (parent === directory) throw new Error('bench: no package-lock.json above the bench scripts');
    directory = parent;
  }
  return directory;
}

/** The compiled file next to this module: `.js` when compiled, `.ts` under tsx. */
export function sibling(relative: string): string {
  const self = fileURLToPath(import.meta.url);
  const extension = self.endsWith('.ts') ? '.ts' : '.js';
  return join(dirname(self), '..', relative + extension);
}
