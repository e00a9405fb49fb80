import { readFile } from 'node:fs/promises';
import { LineCounter, parseDocument, isNode } from 'yaml';
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

export function parseYamlText<S extends z.ZodType>(text: string, file: string, schema: S): z.output<S> {
  const lineCounter = new LineCounter();
  const document = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  if (document.errors.length > 0) {
    throw new ConfigError(
      document.errors.map((error) => ({
        file,
        field: '',
        line: lineCounter.linePos(error.pos[0]).line,
        message: `YAML syntax: ${error.message.split('\n')[0]}`,
      })),
    );
  }
  const data: unknown = document.toJS();
  const result = schema.safeParse(data);
  if (result.success) return result.data;

  const problems: ConfigProblem[] = result.error.issues.map((issue) => {
    // An unrecognized key is reported on its parent; point at the key itself.
    const keys = issue.code === 'unrecognized_keys' ? issue.keys : [];
    const path = keys.length === 1 ? [...issue.path, keys[0]!] : issue.path;
    const node = document.getIn(path, true);
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
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    return undefined;
  }
  const lineCounter = new LineCounter();
  const document = parseDocument(text, { lineCounter, prettyErrors: false });
  for (let depth = path.length; depth >= 0; depth -= 1) {
    const node = depth === 0 ? document.contents : document.getIn(path.slice(0, depth), true);
    if (isNode(node) && node.range) return lineCounter.linePos(node.range[0]).line;
  }
  return undefined;
}
