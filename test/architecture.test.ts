import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * The house's layers, lowest first (ARCHITECTURE.md): data flows config → source → transform →
 * sinks, `pipeline/` orchestrates them, the services beside it (metrics, the schedule worker,
 * Kubernetes manifests) serve the commands, `workspace` loads the files and wires a run from all
 * of them, `presentation` turns results into the lines a person reads, and `cli` sits on top. Below them all lie the value
 * types every layer shares and the process-wide helpers (errors, retry, logging, secret scrubbing).
 * A module may import its own folder, a folder of its own layer, or a lower layer; never a higher
 * one. Each top-level folder of src/ and each module at its root (`cli.ts` belongs to `cli`) is one
 * "folder" here. A new folder must be given a layer before it can pass.
 */
const LAYERS: ReadonlyArray<readonly string[]> = [
  [
    'value-types',
    'errors',
    'error-codes',
    'temp-owner',
    'write-file-atomically',
    'secret-scrubber',
    'redaction',
    'count-noun',
    'stop-deadline',
    'retry',
    'log',
    'output-stream',
    'map-with-concurrency',
    'telemetry',
    'node-flags',
    'entry-point',
  ],
  ['config'],
  ['source'],
  ['transform'],
  ['sinks'],
  ['lineage'],
  ['pipeline'],
  ['metrics', 'schedule', 'deploy', 'history'],
  ['workspace'],
  ['presentation'],
  ['cli', 'main'],
];

const root = path.resolve(import.meta.dirname, '..');
const src = path.join(root, 'src');

interface ImportSite {
  /** The specifier exactly as written. */
  specifier: string;
  /** 1-based line of the import in its file. */
  line: number;
}

/** Every module a source text names: static and type-only imports, re-exports, `import()` calls and types, `require()`. */
function importSites(fileName: string, text: string): ImportSite[] {
  const sourceFile = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const sites: ImportSite[] = [];
  const add = (node: ts.Node, literal: ts.Node | undefined): void => {
    if (literal !== undefined && ts.isStringLiteralLike(literal)) {
      sites.push({ specifier: literal.text, line: sourceFile.getLineAndCharacterOfPosition(node.getStart(sourceFile)).line + 1 });
    }
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) add(node, node.moduleSpecifier);
    else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) add(node, node.moduleReference.expression);
    else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) add(node, node.argument.literal);
    else if (ts.isCallExpression(node)) {
      const callee = node.expression;
      const isImport = callee.kind === ts.SyntaxKind.ImportKeyword;
      const isRequire = ts.isIdentifier(callee) && callee.text === 'require';
      if (isImport || isRequire) {
        const argument = node.arguments[0];
        if (argument !== undefined && !ts.isStringLiteralLike(argument)) {
          // A computed specifier would hide an edge from this test; name the module outright instead.
          sites.push({
            specifier: `<computed: ${argument.getText(sourceFile)}>`,
            line: sourceFile.getLineAndCharacterOfPosition(node.getStart(sourceFile)).line + 1,
          });
        } else add(node, argument);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sourceFile);
  return sites;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return /\.m?ts$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [full] : [];
  });
}

/** `src/config/job-schema.ts` → `config`; `src/cli.ts` → `cli`. */
function folderOf(relativeToSrc: string): string {
  const [first = '', ...rest] = relativeToSrc.split(path.sep);
  return rest.length > 0 ? first : first.replace(/\.m?ts$/, '');
}

interface Edge {
  from: string;
  to: string;
  /** `src/config/job-schema.ts:3 imports src/transform/column.ts` */
  site: string;
}

/** Every import from one folder of src/ into another, with the file and line that makes it. */
function folderEdges(): { edges: Edge[]; computed: string[] } {
  const edges: Edge[] = [];
  const computed: string[] = [];
  for (const file of sourceFiles(src)) {
    const from = folderOf(path.relative(src, file));
    const where = path.relative(root, file).split(path.sep).join('/');
    for (const { specifier, line } of importSites(file, readFileSync(file, 'utf8'))) {
      if (specifier.startsWith('<computed')) computed.push(`${where}:${line} ${specifier}`);
      if (!specifier.startsWith('.')) continue;
      const target = path.resolve(path.dirname(file), specifier).replace(/\.js$/, '.ts');
      const relative = path.relative(src, target);
      if (relative.startsWith('..')) continue;
      const to = folderOf(relative);
      if (to !== from) edges.push({ from, to, site: `${where}:${line} imports ${path.relative(root, target).split(path.sep).join('/')}` });
    }
  }
  return { edges, computed };
}

/**
 * Every import that crosses from one folder of src/ into a folder beside it, at any depth: the two
 * children of the deepest folder holding both files (`src/sinks/files/file-sink.ts` importing
 * `src/sinks/stores/registry.ts` is `sinks/files` → `sinks/stores`). An import of a module that
 * lies in that folder itself (`src/sinks/sink.ts`), or from one, crosses no two siblings.
 */
function siblingFolderEdges(): Edge[] {
  const edges: Edge[] = [];
  for (const { from, to, site } of moduleEdges()) {
    const a = path.relative('src', from).split('/');
    const b = path.relative('src', to).split('/');
    let depth = 0;
    while (depth < a.length - 1 && depth < b.length - 1 && a[depth] === b[depth]) depth += 1;
    if (depth < a.length - 1 && depth < b.length - 1) edges.push({ from: a.slice(0, depth + 1).join('/'), to: b.slice(0, depth + 1).join('/'), site });
  }
  return edges;
}

/**
 * Every import from one module of src/ to another (static, type-only, dynamic, re-exports, import
 * types), module by module: a type-only import ties two modules as much as a value import does
 * for a reader, so a circle closed by a type is a circle.
 */
function moduleEdges(): Edge[] {
  const edges: Edge[] = [];
  for (const file of sourceFiles(src)) {
    const from = path.relative(root, file).split(path.sep).join('/');
    for (const { specifier, line } of importSites(file, readFileSync(file, 'utf8'))) {
      if (!specifier.startsWith('.')) continue;
      const target = path.resolve(path.dirname(file), specifier).replace(/\.js$/, '.ts');
      if (path.relative(src, target).startsWith('..')) continue;
      const to = path.relative(root, target).split(path.sep).join('/');
      if (to !== from) edges.push({ from, to, site: `${from}:${line} imports ${to}` });
    }
  }
  return edges;
}

const layerOf = (folder: string): number => LAYERS.findIndex((layer) => layer.includes(folder));

/** Nodes in a cycle (folders or modules): the strongly connected components of more than one node (Tarjan). */
function cyclicComponents(edges: readonly Edge[]): string[][] {
  const next = new Map<string, Set<string>>();
  for (const { from, to } of edges) {
    if (!next.has(from)) next.set(from, new Set());
    next.get(from)!.add(to);
    if (!next.has(to)) next.set(to, new Set());
  }
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const connect = (v: string): void => {
    index.set(v, counter);
    low.set(v, counter);
    counter += 1;
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) components.push(component.sort());
    }
  };
  for (const v of next.keys()) if (!index.has(v)) connect(v);
  return components;
}

/** Each cycle of `edges`: the folders or modules in it, and the import lines that close it. */
function cyclesOf(edges: readonly Edge[]): Array<{ cycle: string; imports: string[] }> {
  return cyclicComponents(edges).map((component) => ({
    cycle: component.join(' <-> '),
    imports: edges.filter(({ from, to }) => component.includes(from) && component.includes(to)).map(({ site }) => site),
  }));
}

describe('the house', () => {
  const { edges, computed } = folderEdges();

  it('finds the imports of src/', () => {
    expect(edges.length).toBeGreaterThan(100);
    expect(computed).toEqual([]);
  });

  it('gives every folder of src/ a layer', () => {
    const folders = new Set(sourceFiles(src).map((file) => folderOf(path.relative(src, file))));
    expect([...folders].filter((folder) => layerOf(folder) < 0).sort()).toEqual([]);
  });

  it('imports no folder of a higher layer (config → source → transform → sinks → pipeline → cli)', () => {
    const upward = edges.filter(({ from, to }) => layerOf(to) > layerOf(from)).map(({ from, to, site }) => `${site} (${from} may not import ${to})`);
    expect(upward).toEqual([]);
  });

  it('has no two folders that import each other, even through a third', () => {
    expect(cyclesOf(edges)).toEqual([]);
  });
});

describe('the folders at every depth', () => {
  const edges = siblingFolderEdges();

  it('finds the imports between folders side by side, and none to a module of their parent folder', () => {
    expect(edges.some(({ from, to }) => from === 'sinks/csv' && to === 'sinks/files')).toBe(true);
    expect(edges.some(({ from, to }) => from === 'source/export-endpoint' && to.startsWith('source/'))).toBe(false);
  });

  it('has no two folders side by side that import each other, even through a third (sinks/files and sinks/stores as much as config and sinks)', () => {
    expect(cyclesOf(edges)).toEqual([]);
  });
});

describe('the modules', () => {
  const edges = moduleEdges();

  it('finds the imports between modules', () => {
    expect(edges.length).toBeGreaterThan(500);
    expect(edges.some(({ from, to }) => from === 'src/cli.ts' && to === 'src/cli/command.ts')).toBe(true);
  });

  it('import no module back, even through others and even for a type', () => {
    expect(cyclesOf(edges)).toEqual([]);
  });
});

describe('cyclicComponents', () => {
  const edge = (from: string, to: string): Edge => ({ from, to, site: `${from} imports ${to}` });

  it('finds a circle through a third and leaves a chain and a diamond alone', () => {
    expect(cyclicComponents([edge('a', 'b'), edge('b', 'c'), edge('c', 'a'), edge('c', 'd')])).toEqual([['a', 'b', 'c']]);
    expect(cyclicComponents([edge('a', 'b'), edge('b', 'c'), edge('a', 'c'), edge('c', 'd')])).toEqual([]);
  });
});

describe('importSites', () => {
  it('names static, type-only and dynamic imports, re-exports and import types, with their lines', () => {
    const text = [
      "import { a } from './a.js';",
      "import type { B } from '../b/b.js';",
      "export { c } from './c.js';",
      "const d = await import('./d.js');",
      "type E = import('./e.js').E;",
      'const f = require("./f.js");',
      'const g = await import(name);',
    ].join('\n');
    expect(importSites('x.ts', text)).toEqual([
      { specifier: './a.js', line: 1 },
      { specifier: '../b/b.js', line: 2 },
      { specifier: './c.js', line: 3 },
      { specifier: './d.js', line: 4 },
      { specifier: './e.js', line: 5 },
      { specifier: './f.js', line: 6 },
      { specifier: '<computed: name>', line: 7 },
    ]);
  });
});
