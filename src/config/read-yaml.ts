import { readFile } from 'node:fs/promises';
import { LineCounter, parseDocument, isMap, isNode, isScalar, visit, type Document, type ErrorCode } from 'yaml';
import type { z } from 'zod';
import { ConfigError, type ConfigProblem } from './config-error.js';

const MAX_VALUE_CHARS = 120;

/** Renders a field path the way people write it: `query.items[2].dataType`. */
export function formatFieldPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out === '' ? String(key) : `.${String(key)}`;
  }
  return out;
}

function describeValue(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  const json = JSON.stringify(value);
  if (json === undefined) return undefined;
  return json.length > MAX_VALUE_CHARS ? `${json.slice(0, MAX_VALUE_CHARS)}…` : json;
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let current: unknown = root;
  for (const key of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<PropertyKey, unknown>)[key];
  }
  return current;
}

/**
 * Reads one YAML file and validates it with `schema`. Every problem names the file, the field
 * path, the value and the line, so a config error can be fixed from the message alone.
 */
export async function readYamlFile<S extends z.ZodType>(file: string, schema: S): Promise<z.output<S>> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw ConfigError.single({ file, field: '', message: `cannot read file (${(error as NodeJS.ErrnoException).code ?? String(error)})` });
  }
  return parseYamlText(text, file, schema);
}

/**
 * What each of the YAML parser's errors means, in words of our own: the parser's message quotes
 * the text it stumbled on, and that text may be a password (`password: |s3cret` is a block scalar
 * header with extra characters, `url: {…}` quotes the next scalar). So a syntax error is told by
 * its code and its place only, never by the parser's message.
 */
const YAML_ERROR_DESCRIPTIONS: Record<ErrorCode, string> = {
  ALIAS_PROPS: 'an alias (*name) cannot have a tag or an anchor',
  BAD_ALIAS: 'an alias (*name) that is not a valid anchor name',
  BAD_DIRECTIVE: 'a % directive YAML does not know',
  BAD_DQ_ESCAPE: 'a backslash escape a double-quoted string cannot hold',
  BAD_INDENT: 'wrong indentation',
  BAD_PROP_ORDER: 'an anchor (&) or tag (!) in the wrong place',
  BAD_SCALAR_START: 'a value that starts with a reserved character (@ or `): quote it',
  BLOCK_AS_IMPLICIT_KEY: 'a block value used as a key',
  BLOCK_IN_FLOW: 'a block value inside a flow collection ({…} or […])',
  DUPLICATE_KEY: 'a duplicate key (one key given twice in a map)',
  IMPOSSIBLE: 'text the YAML parser cannot read',
  KEY_OVER_1024_CHARS: 'a key longer than 1024 characters',
  MISSING_CHAR: 'a missing closing character (a quote, a bracket or a brace)',
  MULTILINE_IMPLICIT_KEY: 'a key spread over several lines (a missing colon or quote above?)',
  MULTIPLE_ANCHORS: 'two anchors (&) on one value',
  MULTIPLE_DOCS: 'more than one YAML document (a --- line) where one is expected',
  MULTIPLE_TAGS: 'two tags (!) on one value',
  NON_STRING_KEY: 'a key that is not a plain string',
  RESOURCE_EXHAUSTION: 'too many aliases (*name) expanded',
  TAB_AS_INDENT: 'a tab used as indentation',
  TAG_RESOLVE_FAILED: 'a value its tag (!) cannot be read as',
  UNEXPECTED_TOKEN: 'unexpected text (an unquoted value starting with {, [, |, >, *, &, !, %, @, ` or # needs quotes)',
  BAD_COLLECTION_TYPE: 'a collection its tag (!) does not fit',
};

/** A YAML syntax problem at its place, described by its code: never the parser's message, which quotes the text. */
export function yamlSyntaxProblem(file: string, code: ErrorCode, position: { line: number; col: number }): ConfigProblem & { line: number } {
  const description = YAML_ERROR_DESCRIPTIONS[code] ?? 'text the YAML parser cannot read';
  return { file, field: '', line: position.line, message: `YAML syntax: ${description} (column ${position.col}; the text is not shown)` };
}

/**
 * The document's value. An alias (`*name`) whose anchor is not set throws here, after parsing,
 * with the alias's name in the message (`password: *s3cret` makes the password that name): it is
 * a syntax mistake in the file, located by the alias's own node.
 */
function documentValue(document: Document, file: string, lineCounter: LineCounter): unknown {
  try {
    return document.toJS({ maxAliasCount: 1000 });
  } catch {
    let line: number | undefined;
    let col = 1;
    visit(document, {
      Alias(_key, node) {
        if (node.resolve(document) !== undefined || !node.range) return undefined;
        ({ line, col } = lineCounter.linePos(node.range[0]));
        return visit.BREAK;
      },
    });
    const message =
      line === undefined
        ? 'YAML syntax: too many aliases (*name) expanded (the text is not shown)'
        : `YAML syntax: an alias (*name) whose anchor (&name) is not set before it; a value starting with * needs quotes (column ${col}; the text is not shown)`;
    throw ConfigError.single({ file, field: '', ...(line === undefined ? {} : { line }), message });
  }
}

/**
 * The key of the field at `path` (`auth:` of `lineage.transport.auth`), when its parent is a map:
 * a map or list value starts on the line after its key, and the problem is the key's.
 */
function keyNodeAt(document: Document, path: readonly PropertyKey[]): unknown {
  if (path.length === 0) return undefined;
  const parent = path.length === 1 ? document.contents : document.getIn(path.slice(0, -1), true);
  if (!isMap(parent)) return undefined;
  const last = path.at(-1);
  const pair = parent.items.find((item) => (isScalar(item.key) ? item.key.value : item.key) === last);
  return pair?.key;
}

interface ParsedYaml {
  document: Document;
  lineCounter: LineCounter;
  data: unknown;
}

/** The YAML text's document and value; a syntax mistake is a ConfigError that names its place, never its text. */
function parsedYaml(text: string, file: string): ParsedYaml {
  const lineCounter = new LineCounter();
  const document = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  if (document.errors.length > 0) {
    // One problem a line: a single mistake in a flow map ({…}) derails every token after it.
    const problems = new Map<number, ConfigProblem>();
    for (const error of document.errors) {
      const problem = yamlSyntaxProblem(file, error.code, lineCounter.linePos(error.pos[0]));
      if (!problems.has(problem.line)) problems.set(problem.line, problem);
    }
    throw new ConfigError([...problems.values()]);
  }
  return { document, lineCounter, data: documentValue(document, file, lineCounter) };
}

/**
 * The value of a YAML (or JSON, which YAML reads too) text the user gave, for readers with a
 * schema of their own (an OPENLINEAGE_CONFIG file): a syntax mistake is a ConfigError naming
 * `file`, line and column, never quoting the text.
 */
export function yamlValueOf(text: string, file: string): unknown {
  return parsedYaml(text, file).data;
}

export function parseYamlText<S extends z.ZodType>(text: string, file: string, schema: S): z.output<S> {
  const { document, lineCounter, data } = parsedYaml(text, file);
  const result = schema.safeParse(data);
  if (result.success) return result.data;

  const problems: ConfigProblem[] = result.error.issues.map((issue) => {
    // An unrecognized key is reported on its parent; point at the key itself.
    const keys = issue.code === 'unrecognized_keys' ? issue.keys : [];
    const path = keys.length === 1 ? [...issue.path, keys[0]!] : issue.path;
    const node = keyNodeAt(document, path) ?? document.getIn(path, true);
    const range = isNode(node) ? node.range : undefined;
    const parent = range === undefined ? document.getIn(issue.path, true) : undefined;
    const located = range ?? (isNode(parent) ? parent.range : undefined);
    const problem: ConfigProblem = {
      file,
      field: formatFieldPath(path),
      message: issue.message,
    };
    if (located) problem.line = lineCounter.linePos(located[0]).line;
    const value = describeValue(valueAt(data, issue.path));
    if (value !== undefined && issue.code !== 'unrecognized_keys') problem.value = value;
    return problem;
  });
  throw new ConfigError(problems);
}

/**
 * The 1-based line of the node at `path` in a YAML file (its parent's when the key is absent, as
 * for a default), for problems found after loading: `tilehouse validate`'s checks across files.
 */
export async function lineOf(file: string, path: readonly PropertyKey[]): Promise<number | undefined> {
  const parsed = await parsedWithLines(file);
  if (parsed === undefined) return undefined;
  const { document, lineCounter } = parsed;
  for (let depth = path.length; depth >= 0; depth -= 1) {
    const node = depth === 0 ? document.contents : document.getIn(path.slice(0, depth), true);
    if (isNode(node) && node.range) return lineCounter.linePos(node.range[0]).line;
  }
  return undefined;
}

/**
 * The 1-based line of the field at `path` in a YAML file: its key's line when its parent is a map
 * (`filters:` of `query.items[0].filters`, whose block value starts on the next line), else its
 * value's; undefined when the file cannot be read or has no such field. For a repair that names
 * the line of a value to change back.
 */
export async function fieldLineOf(file: string, path: readonly PropertyKey[]): Promise<number | undefined> {
  const parsed = await parsedWithLines(file);
  if (parsed === undefined) return undefined;
  const { document, lineCounter } = parsed;
  const node = keyNodeAt(document, path) ?? document.getIn(path, true);
  return isNode(node) && node.range ? lineCounter.linePos(node.range[0]).line : undefined;
}

/** A YAML file parsed with its line positions, for the line finders above; undefined when it cannot be read. */
async function parsedWithLines(file: string): Promise<{ document: ReturnType<typeof parseDocument>; lineCounter: LineCounter } | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    return undefined;
  }
  const lineCounter = new LineCounter();
  return { document: parseDocument(text, { lineCounter, prettyErrors: false }), lineCounter };
}
