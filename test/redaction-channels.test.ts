import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * Issue 61: one redaction boundary for every channel by which words leave the process. This test
 * finds every module of src/ that uses an outward primitive (a file written, stdout or stderr, a
 * console, a network client or the packages that send: OpenTelemetry, prom-client, the Cloud and
 * S3 clients, pg, undici) and fails on any that is not listed below. A channel writer of words
 * must import src/redaction.ts (and is read for it); a writer of something else says what it
 * carries and why that is not words. A new module that writes or sends fails here until it is
 * put on one of the two lists.
 */

/** The writers of words: each passes what it writes through src/redaction.ts. */
const WORD_WRITERS: Readonly<Record<string, string>> = {
  'src/write-file-atomically.ts':
    'every text file written whole: the --summary-json file, the local run history records and documents, file sinks’ manifests, the files of k8s and init, the probe recording; text passes redactText as it is written',
  'src/cli/init-command.ts': 'the job file init writes (its `wx` first write); the same text as its atomic write',
  'src/lineage/transport-of.ts': 'the lineage file, HTTP and console transports: each event serialized by redactedJson',
  'src/lineage/google-lineage-transport.ts': 'Google Data Lineage: each event serialized by redactedJson',
  'src/lineage/lineage-transport.ts': 'posts the bytes its transports made (redactedJson) to the lineage consumer',
  'src/telemetry/otel-telemetry.ts':
    'OpenTelemetry: every span, event and resource attribute and metric label passes `defined` (redactText), every span status `fail` (redactText)',
  'src/metrics/tile-run-registry.ts': 'the Pushgateway: the grouping labels and the label values redacted',
};

/** The writers of something else, with what they carry: never words tilehouse made from an answer. */
const OTHER_WRITERS: ReadonlyArray<readonly [prefix: string, why: string]> = [
  [
    'src/source/',
    'requests to the incident API: its credentials to the issuer that gave them, the query; what comes back is words the errors carry (redacted where errorReport makes them)',
  ],
  ['src/pipeline/source-session.ts', 'the source’s connection pool (an undici Agent): requests only'],
  ['src/sinks/stores/local/local-file-writer.ts', 'a file sink’s data file: rows, not words'],
  ['src/sinks/bigquery/', 'BigQuery: rows (the NDJSON load file), tables, jobs and the run ledger’s facts (run id, fingerprint, counts); no message'],
  ['src/sinks/postgres/', 'PostgreSQL: rows by COPY, the table and its ledger’s facts; its password to its own server'],
  ['src/sinks/iceberg/', 'Iceberg: data and metadata files (rows, schema), the catalog’s requests with its own credential'],
  ['src/sinks/stores/gcs/', 'Cloud Storage: data objects (rows); manifests made by manifestText and documents put through documentsAt, both redacted'],
  ['src/sinks/stores/s3/', 'S3: data objects (rows); manifests made by manifestText and documents put through documentsAt, both redacted'],
  ['src/sinks/google/google-credentials.ts', 'Google’s token endpoint: the key file’s assertion to Google, its token registered as a secret'],
  [
    'src/sinks/aws/sigv4-signer.ts',
    'the AWS credential chain’s own endpoints (STS, the instance metadata service): its requests only; every key and session token it yields registered as a secret',
  ],
];

const root = path.resolve(import.meta.dirname, '..');

function sourceFiles(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(directory, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [full] : [];
  });
}

/** Packages whose use sends or writes: telemetry, metrics, object stores, databases, HTTP, sockets. */
const SENDING_PACKAGE =
  /^(@opentelemetry\/|prom-client$|undici(\/|$)|@google-cloud\/|@aws-sdk\/|pg(-copy-streams)?$|google-auth-library$|node:(https?|net|tls|dgram)$)/;

/** Calls that write: a file, stdout or stderr, the console, fetch. */
const WRITING_CALL =
  /\b(writeFile|appendFile|createWriteStream|writeFileSync|appendFileSync|writeSync)\b|process\.(stdout|stderr)\.write|\bconsole\.\w+|\bfetch\(/g;

/** The outward primitives a module uses, read from its code (comments and type-only imports left out). */
export function outwardPrimitives(fileName: string, text: string): string[] {
  const sourceFile = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const found = new Set<string>();
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const typeOnly =
        node.importClause?.isTypeOnly === true ||
        (node.importClause?.name === undefined &&
          node.importClause?.namedBindings !== undefined &&
          ts.isNamedImports(node.importClause.namedBindings) &&
          node.importClause.namedBindings.elements.every((element) => element.isTypeOnly));
      if (!typeOnly && SENDING_PACKAGE.test(node.moduleSpecifier.text)) found.add(`import ${node.moduleSpecifier.text}`);
      if (!typeOnly && /undici-parts\.js$/.test(node.moduleSpecifier.text)) found.add('undici (undici-parts.ts)');
    }
    ts.forEachChild(node, visit);
  };
  visit(sourceFile);
  // The code without its comments: the printer drops them.
  const code = ts.createPrinter({ removeComments: true }).printFile(sourceFile);
  for (const match of code.matchAll(WRITING_CALL)) found.add(match[0]);
  return [...found].sort();
}

function relative(file: string): string {
  return path.relative(root, file).split(path.sep).join('/');
}

const modules = sourceFiles(path.join(root, 'src')).map((file) => {
  const text = readFileSync(file, 'utf8');
  return { name: relative(file), text, primitives: outwardPrimitives(file, text) };
});

describe('the channels by which words leave the process (issue 61)', () => {
  it('every module that writes or sends is a redacting writer of words, or a writer of rows and requests said to be', () => {
    const unlisted = modules
      .filter((module) => module.primitives.length > 0)
      .filter((module) => WORD_WRITERS[module.name] === undefined && !OTHER_WRITERS.some(([prefix]) => module.name.startsWith(prefix)))
      .map((module) => `${module.name}: ${module.primitives.join(', ')}`);
    expect(unlisted, 'a module writes or sends without being a listed channel: put it through src/redaction.ts and list it').toEqual([]);
  });

  it('every writer of words imports the redaction step and calls it', () => {
    const missing = Object.keys(WORD_WRITERS).flatMap((name) => {
      const module = modules.find((candidate) => candidate.name === name);
      if (module === undefined) return [`${name}: no such module`];
      // lineage-transport.ts posts what its transports serialized: it may lean on them, nothing else may.
      if (name === 'src/lineage/lineage-transport.ts') return [];
      return /from '[./]*(\.\.\/)*redaction\.js'/.test(module.text) && /\bredact(Text|Json|edJson)\(/.test(module.text) ? [] : [name];
    });
    expect(missing).toEqual([]);
  });

  it('the stdout, stderr and log writers redact: output-stream.ts and log.ts call redactText', () => {
    for (const name of ['src/output-stream.ts', 'src/log.ts']) {
      const module = modules.find((candidate) => candidate.name === name)!;
      expect(module.text, name).toMatch(/from '\.\/redaction\.js'/);
      expect(module.text, name).toMatch(/redactText/);
    }
  });

  it('finds a primitive where one is, and none in a comment or a type-only import', () => {
    expect(outwardPrimitives('a.ts', "import { appendFile } from 'node:fs/promises';\nawait appendFile('x', 'y');")).toEqual(['appendFile']);
    expect(outwardPrimitives('a.ts', "// process.stdout.write('x')\nimport type { Span } from '@opentelemetry/api';\nconst x = 1;")).toEqual([]);
    expect(outwardPrimitives('a.ts', "import { trace } from '@opentelemetry/api';\nconsole.error('x');")).toEqual([
      'console.error',
      'import @opentelemetry/api',
    ]);
  });
});
