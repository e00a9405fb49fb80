import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const src = path.resolve(import.meta.dirname, '../../../src');
const seam = path.join(src, 'source', 'export-endpoint');
const entry = path.join(seam, 'index.ts');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return /\.m?ts$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [full] : [];
  });
}

/** Every relative module a file names (imports, re-exports, `import()`), resolved to its .ts path. */
function relativeImports(file: string, text: string): Array<{ target: string; line: number }> {
  const sourceFile = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: Array<{ target: string; line: number }> = [];
  const add = (node: ts.Node, literal: ts.Node | undefined): void => {
    if (literal === undefined || !ts.isStringLiteralLike(literal) || !literal.text.startsWith('.')) return;
    found.push({
      target: path.resolve(path.dirname(file), literal.text.replace(/\.js$/, '.ts')),
      line: sourceFile.getLineAndCharacterOfPosition(node.getStart(sourceFile)).line + 1,
    });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) add(node, node.moduleSpecifier);
    else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) add(node, node.argument.literal);
    else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) add(node, node.arguments[0]);
    ts.forEachChild(node, visit);
  };
  visit(sourceFile);
  return found;
}

/** `file:line imports part` for each import from outside the seam's folder that passes its entry by. */
function partsImportedFromOutside(files: ReadonlyArray<{ file: string; text: string }>): string[] {
  return files
    .filter(({ file }) => !file.startsWith(`${seam}${path.sep}`))
    .flatMap(({ file, text }) =>
      relativeImports(file, text)
        .filter(({ target }) => target.startsWith(`${seam}${path.sep}`) && target !== entry)
        .map(({ target, line }) => `${path.relative(src, file)}:${line} imports ${path.relative(src, target)}`),
    );
}

const srcFiles = () => sourceFiles(src).map((file) => ({ file, text: readFileSync(file, 'utf8') }));

describe('the export endpoint seam', () => {
  it('is reached from the rest of src/ only through its entry, index.ts', () => {
    expect(partsImportedFromOutside(srcFiles())).toEqual([]);
  });

  it('is used: the pipeline asks it for pages and for window queries', () => {
    const users = srcFiles().filter(({ file, text }) => relativeImports(file, text).some(({ target }) => target === entry));
    expect(users.map(({ file }) => path.relative(src, file))).toEqual(
      expect.arrayContaining([path.join('pipeline', 'source-session.ts'), path.join('pipeline', 'windows', 'run-windows.ts')]),
    );
  });

  it('names the file and line of each import that passes the entry by, static, type-only or dynamic', () => {
    const file = path.join(src, 'pipeline', 'imagined.ts');
    const text = [
      "import type { ExportPage } from '../source/export-endpoint/index.js';",
      "import { ExportClient } from '../source/export-endpoint/export-client.js';",
      "export type { RowOrder } from '../source/export-endpoint/row-order.js';",
      "const pager = await import('../source/export-endpoint/read-pages.js');",
    ].join('\n');
    expect(partsImportedFromOutside([{ file, text }])).toEqual([
      `pipeline/imagined.ts:2 imports source/export-endpoint/export-client.ts`,
      `pipeline/imagined.ts:3 imports source/export-endpoint/row-order.ts`,
      `pipeline/imagined.ts:4 imports source/export-endpoint/read-pages.ts`,
    ]);
  });

  it("lets the seam's own parts import one another", () => {
    const file = path.join(seam, 'read-pages.ts');
    expect(partsImportedFromOutside([{ file, text: "import { PageConsistency } from './page-checks.js';" }])).toEqual([]);
  });
});
