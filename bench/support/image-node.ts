/**
 * How the image starts node, read from a checkout's Dockerfile: the runtime stage's NODE_OPTIONS
 * (ENV) and the arguments its ENTRYPOINT gives node before the script. The Dockerfile is the one
 * place these flags are written (test/deploy/dockerfile.test.ts holds the manifests' NODE_OPTIONS
 * to it), so the bench runs tilehouse exactly as the image does, and a baseline checkout as its
 * own image did.
 */

export interface ImageNode {
  /** NODE_OPTIONS of the runtime stage; undefined when it sets none. */
  nodeOptions: string | undefined;
  /** node's own arguments before the script, e.g. V8 flags NODE_OPTIONS may not carry. */
  nodeArgs: string[];
}

/** The Dockerfile cannot be read as the bench needs it (what is wrong, in the message). */
export class DockerfileReadError extends Error {
  readonly code = 'BENCH_DOCKERFILE_UNREADABLE';
  constructor(
    readonly file: string,
    detail: string,
  ) {
    super(`${file}: ${detail}`);
    this.name = 'DockerfileReadError';
  }
}

/** Logical lines of the last stage (continuations joined, comments and blank lines dropped). */
function lastStage(text: string): string[] {
  const lines = text
    .split('\n')
    .filter((line) => !/^\s*#/.test(line))
    .join('\n')
    .replace(/\\\r?\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');
  const from = lines.findLastIndex((line) => /^FROM\s/i.test(line));
  return from === -1 ? lines : lines.slice(from + 1);
}

/** The variables one ENV instruction sets: `KEY=value` pairs (values may be double-quoted), or the legacy `KEY value`. */
export function envAssignments(args: string): Record<string, string> {
  if (!/^[A-Za-z_][A-Za-z0-9_]*=/.test(args)) {
    const [, name = '', value = ''] = /^(\S+)\s+(.*)$/.exec(args) ?? [];
    return name === '' ? {} : { [name]: value };
  }
  const vars: Record<string, string> = {};
  for (const match of args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("(?:[^"\\]|\\.)*"|\S*)/g)) {
    const raw = match[2]!;
    vars[match[1]!] = raw.startsWith('"') ? raw.slice(1, -1).replace(/\\(.)/g, '$1') : raw;
  }
  return vars;
}

export function imageNodeOf(text: string, file = 'Dockerfile'): ImageNode {
  let nodeOptions: string | undefined;
  let entrypoint: string | undefined;
  for (const line of lastStage(text)) {
    const [, keyword = '', args = ''] = /^(\S+)\s*(.*)$/.exec(line) ?? [];
    if (keyword.toUpperCase() === 'ENV') nodeOptions = envAssignments(args).NODE_OPTIONS ?? nodeOptions;
    if (keyword.toUpperCase() === 'ENTRYPOINT') entrypoint = args;
  }
  if (entrypoint === undefined) throw new DockerfileReadError(file, 'the last stage has no ENTRYPOINT');
  let words: unknown;
  try {
    words = JSON.parse(entrypoint);
  } catch {
    throw new DockerfileReadError(file, `ENTRYPOINT ${entrypoint} is not the exec form (a JSON array)`);
  }
  if (!Array.isArray(words) || !words.every((word) => typeof word === 'string') || !/(^|\/)node$/.test(words[0] ?? '')) {
    throw new DockerfileReadError(file, `ENTRYPOINT ${entrypoint} does not start node`);
  }
  const script = words.findIndex((word, index) => index > 0 && !word.startsWith('-'));
  if (script === -1) throw new DockerfileReadError(file, `ENTRYPOINT ${entrypoint} names no script after node's flags`);
  return { nodeOptions, nodeArgs: words.slice(1, script) };
}
