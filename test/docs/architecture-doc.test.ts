import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * ARCHITECTURE.md stays true: every folder of src/ and every module at its root is named, and
 * every file it names exists. Its table has one row per folder (or module); a row's first cell
 * names its folders in backticks (`src/sinks/files/`), and a `*.ts` name elsewhere in the row
 * resolves against one of them, or against src/, or against the repository (`test/…`, `scripts/…`).
 */

const root = path.resolve(import.meta.dirname, '..', '..');
const src = path.join(root, 'src');

interface DocRow {
  /** 1-based line in the document. */
  line: number;
  /** The backticked names of the first cell, as written. */
  subjects: string[];
  /** Every backticked name of the row, the first cell's included. */
  names: string[];
}

const BACKTICKED = /`([^`]+)`/g;

/** The table rows of a markdown text that name at least one thing in backticks in their first cell. */
function docRows(text: string): DocRow[] {
  const rows: DocRow[] = [];
  for (const [index, line] of text.split('\n').entries()) {
    if (!line.startsWith('|') || /^\|[\s|:-]+\|?$/.test(line)) continue;
    const [, first = ''] = line.split('|');
    const subjects = [...first.matchAll(BACKTICKED)].map((match) => match[1]!);
    if (subjects.length === 0) continue;
    rows.push({ line: index + 1, subjects, names: [...line.matchAll(BACKTICKED)].map((match) => match[1]!) });
  }
  return rows;
}

/** The `*.ts` file names in backticks: a bare name or a path, not a pattern (`<kind>/descriptor.ts`, `*.ts`). */
function fileNamesOf(row: DocRow): string[] {
  return row.names.filter((name) => /^[\w./-]+\.ts$/.test(name) && !name.includes('*'));
}

/** Where a row's names may lie: its subject folders (a module's folder for `src/cli.ts`, `test/` for `test/`), src/, the repository. */
function baseDirectories(row: DocRow, repository: string): string[] {
  const folders = row.subjects.map((subject) => path.join(repository, subject.endsWith('/') ? subject : path.dirname(subject)));
  return [...folders, path.join(repository, 'src'), repository];
}

/** Each named file that resolves against none of its row's bases: `line N: name`. */
function missingFiles(rows: readonly DocRow[], repository: string): string[] {
  const missing: string[] = [];
  for (const row of rows) {
    for (const name of fileNamesOf(row)) {
      const found = baseDirectories(row, repository).some((base) => existsSync(path.join(base, name)) && statSync(path.join(base, name)).isFile());
      if (!found) missing.push(`line ${row.line}: ${name}`);
    }
  }
  return missing;
}

/** src/'s folders (at any depth, as `src/a/b/`) and the modules at its root (`src/x.ts`). */
function srcEntries(directory: string, repository: string): { folders: string[]; modules: string[] } {
  const folders: string[] = [];
  const modules: string[] = [];
  const visit = (folder: string): void => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const full = path.join(folder, entry.name);
      const relative = path.relative(repository, full).split(path.sep).join('/');
      if (entry.isDirectory()) {
        folders.push(`${relative}/`);
        visit(full);
      } else if (folder === directory && /\.ts$/.test(entry.name) && !entry.name.endsWith('.d.ts')) modules.push(relative);
    }
  };
  visit(directory);
  return { folders: folders.sort(), modules: modules.sort() };
}

/** The folders and root modules no row names as its subject. */
function unnamed(rows: readonly DocRow[], entries: { folders: readonly string[]; modules: readonly string[] }): string[] {
  const subjects = new Set(rows.flatMap((row) => row.subjects));
  return [...entries.folders, ...entries.modules].filter((entry) => !subjects.has(entry));
}

describe('ARCHITECTURE.md', () => {
  const rows = docRows(readFileSync(path.join(root, 'ARCHITECTURE.md'), 'utf8'));

  it('has a row for every folder of src/, at any depth, and every module at its root', () => {
    const entries = srcEntries(src, root);
    expect(entries.folders.length).toBeGreaterThan(15);
    expect(entries.modules).toContain('src/errors.ts');
    expect(unnamed(rows, entries)).toEqual([]);
  });

  it("names only files that exist (resolved against the row's folder, src/ or the repository)", () => {
    expect(rows.flatMap(fileNamesOf).length).toBeGreaterThan(100);
    expect(missingFiles(rows, root)).toEqual([]);
  });
});

describe('the checks of ARCHITECTURE.md', () => {
  const text = [
    '| folder | one line |',
    '|---|---|',
    '| `src/sinks/files/` | `file-sink.ts` (the sink), `../csv/csv-sink.ts`, `source/http.ts`, `test/architecture.test.ts`, `<kind>/descriptor.ts`, `*.ts`, `gone.ts` |',
    '| `src/cli.ts`, `src/cli/` | `run-command.ts`, `cli.ts`, `nowhere/run-command.ts` |',
    '| plain words | `src/log.ts` is not a subject here |',
  ].join('\n');

  it('reads the subjects of each row, and skips the header, the rule and rows without a subject', () => {
    expect(docRows(text).map(({ line, subjects }) => ({ line, subjects }))).toEqual([
      { line: 3, subjects: ['src/sinks/files/'] },
      { line: 4, subjects: ['src/cli.ts', 'src/cli/'] },
    ]);
  });

  it("resolves a name against the row's folders, src/ and the repository, and reports the rest with their line", () => {
    expect(missingFiles(docRows(text), root)).toEqual(['line 3: gone.ts', 'line 4: nowhere/run-command.ts']);
  });

  it('reports a folder and a root module that no row names, and not those that one does', () => {
    const rows = docRows(text);
    expect(unnamed(rows, { folders: ['src/sinks/files/', 'src/sinks/new-kind/', 'src/cli/'], modules: ['src/cli.ts', 'src/log.ts'] })).toEqual([
      'src/sinks/new-kind/',
      'src/log.ts',
    ]);
  });
});
