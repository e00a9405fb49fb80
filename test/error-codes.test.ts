// The catalogue of error codes (src/error-codes.ts) against the code that raises them and the
// document users read: a code raised in src/ but not catalogued, a catalogued code nothing raises,
// or docs/error-codes.md out of date each fail here.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { errorCodesDocument, ERROR_CODES_DOC, renamedCodes } from '../scripts/lib/error-codes-doc.js';
import { ConfigError } from '../src/config/config-error.js';
import { errorReport } from '../src/errors.js';
import { ERROR_CODES, isErrorCode, OAUTH_ERRORS, TARGET_KINDS, type ErrorCode } from '../src/error-codes.js';
import { PartiallyPublishedError, RunStoppedError } from '../src/pipeline/publish-sinks.js';
import { FilePathInvalidError } from '../src/sinks/files/file-errors.js';
import { FileWriteError } from '../src/sinks/stores/store-errors.js';
import { sinkKinds } from '../src/sinks/registry.js';
import { csvFormat } from '../src/sinks/csv/csv-format.js';
import { parquetFormat } from '../src/sinks/parquet/parquet-format.js';
import { AuthError, SourceTransportError } from '../src/source/source-errors.js';

const SRC = path.resolve(import.meta.dirname, '../src');
const CATALOGUE = path.join(SRC, 'error-codes.ts');

function sourceFiles(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(directory, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') && full !== CATALOGUE ? [full] : [];
  });
}

const sources = sourceFiles(SRC).map((file) => ({ file: path.relative(SRC, file), text: readFileSync(file, 'utf8') }));
const CODE = String.raw`[a-z][a-z0-9]*(?:_[a-z0-9]+)+`;

/**
 * The code literals of src/, found where a code is given: a class's `code` field or constructor
 * parameter (`readonly code = 'x'`, `readonly code: 'a' | 'b'`), a type of codes (`type XCode =`),
 * the code passed to an error's constructor (`new GcsError('x'`, `super('x'`), a base class typed
 * by its own code (`extends LocalFileError<'x'>`), a file-system
 * failure's fallback, a code chosen at run time's other branch (`: 'auth_refused'`), a summary's
 * `'internal_error'`, and a constant typed `ErrorCode`.
 */
function codeLiterals(text: string): string[] {
  const found: string[] = [];
  const quoted = (span: string) => [...span.matchAll(new RegExp(`'(${CODE})'`, 'g'))].map((match) => match[1]!);
  const patterns = [
    new RegExp(String.raw`\bcode(?:\s*:\s*[^=;,)]+)?\s*=\s*'(${CODE})'`, 'g'),
    new RegExp(String.raw`\bcode:\s*((?:'${CODE}'\s*\|?\s*)+)`, 'g'),
    new RegExp(String.raw`type \w*Code\w* =\s*((?:\|?\s*'${CODE}'\s*)+)`, 'g'),
    new RegExp(String.raw`new \w+Error\(\s*('${CODE}')`, 'g'),
    new RegExp(String.raw`super\(\s*('${CODE}')`, 'g'),
    new RegExp(String.raw`extends \w+<\s*('${CODE}')\s*>`, 'g'),
    new RegExp(String.raw`fileSystemFailureCode\([^,]+,\s*('${CODE}')`, 'g'),
    new RegExp(String.raw`\.code\s*:\s*('${CODE}')`, 'g'),
    new RegExp(String.raw`:\s*ErrorCode\s*=\s*('${CODE}')`, 'g'),
    new RegExp(String.raw`this\.code\s*=[^;]*:\s*('${CODE}')`, 'g'),
  ];
  for (const pattern of patterns) for (const match of text.matchAll(pattern)) found.push(...quoted(match[1]!.startsWith("'") ? match[1]! : `'${match[1]}'`));
  return found;
}

/** The codes a class builds at run time, from the parts src/ names: `auth_<oauth error>`. */
function builtCodes(): Set<string> {
  return new Set(OAUTH_ERRORS.map((error) => `auth_${error}`));
}

describe('the error-code catalogue', () => {
  const catalogued = Object.keys(ERROR_CODES);
  const used = new Map<string, string>();
  for (const { file, text } of sources) for (const code of codeLiterals(text)) if (!used.has(code)) used.set(code, file);

  it('finds the codes of src/ where they are given (the scan itself works)', () => {
    expect(used.size).toBeGreaterThan(60);
    expect(used.get('config_invalid')).toBe(path.join('config', 'config-error.ts'));
    expect(used.get('parquet_schema_invalid')).toBe(path.join('sinks', 'parquet', 'encoder', 'parquet-errors.ts'));
    expect(used.get('write_failed')).toBeDefined();
    expect(used.get('target_changed')).toBeDefined();
    expect(used.get('partially_published')).toBeDefined();
    expect(used.get('internal_error')).toBeDefined();
    expect(used.get('summary_write_failed')).toBe(path.join('cli', 'report-summary.ts'));
  });

  it('lists every code src/ gives', () => {
    const missing = [...used].filter(([code]) => !isErrorCode(code)).map(([code, file]) => `${code} (${file})`);
    expect(missing).toEqual([]);
  });

  it('lists no code that src/ never gives', () => {
    const built = builtCodes();
    expect(built).toContain('auth_invalid_client');
    const unused = catalogued.filter((code) => !used.has(code) && !built.has(code));
    expect(unused).toEqual([]);
  });

  it('has one code per failure whatever the target: no code is named by a target kind or a file format', () => {
    const fileKinds = sinkKinds.map((kind) => kind.type).filter((type) => type !== 'bigquery' && type !== 'postgres' && type !== 'iceberg');
    expect(fileKinds.sort()).toEqual(['csv', 'parquet']);
    for (const failure of [
      'path_invalid',
      'write_failed',
      'target_unwritable',
      'permission_denied',
      'target_is_directory',
      'bucket_not_found',
      'target_changed',
      'publish_outcome_unknown',
    ]) {
      expect(isErrorCode(failure), failure).toBe(true);
      for (const prefix of [...fileKinds, 'gcs', 's3', 'bigquery', 'postgres', 'iceberg'])
        expect(isErrorCode(`${prefix}_${failure}`), `${prefix}_${failure}`).toBe(false);
    }
  });

  it('names the codes it replaced, and src/ emits none of them (nor any code that is not catalogued)', () => {
    const renamed = renamedCodes();
    expect(renamed.length).toBeGreaterThanOrEqual(30);
    expect(renamed).toContainEqual({ old: 'parquet_not_parquet', now: 'target_unreadable' });
    expect(renamed).toContainEqual({ old: 'bigquery_partially_published', now: 'partially_published' });
    expect(renamed).toContainEqual({ old: 'bigquery_load_file_failed', now: 'write_failed' });
    expect(renamed).toContainEqual({ old: 'gcs_write_failed', now: 'write_failed' });
    expect(renamed).toContainEqual({ old: 'bigquery_sink_state', now: 'internal_error' });
    for (const { old } of renamed) {
      expect(isErrorCode(old), old).toBe(false);
      // Not given, and not written anywhere in src/ either (a comment, a message, a built name).
      const where = sources.filter(({ text }) => new RegExp(`\\b${old}\\b`).test(text)).map(({ file }) => file);
      expect(where, old).toEqual([]);
    }
    expect(new Set(renamed.map(({ old }) => old)).size).toBe(renamed.length);
  });

  it('gives every code an exit code of the documented interface and one sentence', () => {
    for (const [code, entry] of Object.entries(ERROR_CODES)) {
      expect([1, 2, 3, 'signal'], code).toContain(entry.exit);
      expect(entry.says, code).toMatch(/^[A-Z`].*[.)]$/);
      expect(entry.says.length, code).toBeLessThan(200);
    }
  });

  it('is what docs/error-codes.md says (npm run docs:codes rewrites it)', () => {
    const committed = readFileSync(path.resolve(import.meta.dirname, '..', ERROR_CODES_DOC), 'utf8');
    expect(committed).toBe(errorCodesDocument());
    for (const code of catalogued) expect(committed).toContain(`| \`${code}\` |`);
  });

  it('names every target kind an error can carry, postgres among them', () => {
    const committed = readFileSync(path.resolve(import.meta.dirname, '..', ERROR_CODES_DOC), 'utf8');
    const line = committed.split('\n').find((text) => text.includes('`targetKind` ('))!;
    for (const kind of TARGET_KINDS) expect(line).toContain(`\`${kind}\``);
    expect(TARGET_KINDS).toContain('postgres');
  });

  it('is linked from the README and from docs/failure-behaviour.md', () => {
    expect(readFileSync(path.resolve(import.meta.dirname, '../README.md'), 'utf8')).toContain('(docs/error-codes.md)');
    expect(readFileSync(path.resolve(import.meta.dirname, '../docs/failure-behaviour.md'), 'utf8')).toContain('(error-codes.md)');
  });
});

describe('an error takes its code and exit code from the catalogue', () => {
  it('exits 2 for configuration, 3 for a partial publish, 1 for a failed tile', () => {
    expect(new ConfigError([{ file: 'jobs/a.yaml', field: 'tile', message: 'required' }]).exitCode).toBe(2);
    expect(new FilePathInvalidError(parquetFormat, '{nope}', 'unknown placeholder').exitCode).toBe(2);
    const partial = new PartiallyPublishedError('j', [], ['gs://b/x.csv'], new Error('x'));
    expect(partial.code).toBe('partially_published');
    expect(partial.exitCode).toBe(3);
    expect(new SourceTransportError('j', 'export request', 'ECONNRESET').exitCode).toBe(1);
    expect(new RunStoppedError('j', 'SIGTERM').exitCode).toBe(1);
  });

  it('gives a file failure one code and tells the format and target kind in fields', () => {
    const full = Object.assign(new Error('no space'), { code: 'ENOSPC' });
    expect(new FileWriteError(parquetFormat, 'j', '/d/x.parquet', 'writing', full).code).toBe('disk_full');
    const other = new FileWriteError(parquetFormat, 'j', '/d/x.parquet', 'writing', new Error('EIO'));
    const code: ErrorCode = other.code;
    expect(code).toBe('write_failed');
    expect(errorReport(other)).toMatchObject({ code: 'write_failed', targetKind: 'local', format: 'parquet' });
    expect(other.message).toMatch(/^job j: parquet \/d\/x\.parquet: /);
    const csv = new FileWriteError(csvFormat, 'j', '/d/x.csv', 'writing', new Error('EIO'));
    expect([csv.code, csv.format, csv.targetKind]).toEqual(['write_failed', 'csv', 'local']);
    expect(errorReport(new Error('boom'))).toEqual({ code: 'internal_error', message: 'boom', retryable: false });
    expect(errorReport(other)).toMatchObject({ retryable: true });
  });

  it("keeps auth_<error> for RFC 6749's errors, whatever their case, and says auth_refused for any other", () => {
    expect(new AuthError('j', 'invalid_client', 'bad secret', 401).code).toBe('auth_invalid_client');
    expect(new AuthError('j', 'INVALID_GRANT', undefined, 400).code).toBe('auth_invalid_grant');
    const other = new AuthError('j', 'temporarily_unavailable', 'try later', 503);
    expect(other.code).toBe('auth_refused');
    expect(other.message).toContain('temporarily_unavailable — try later');
    for (const error of OAUTH_ERRORS) expect(isErrorCode(`auth_${error}`)).toBe(true);
  });
});
