/**
 * Reads a curl command line (already split into words) into the parts of an HTTP request.
 * Only what the reporting module's ready-made request uses is understood; any other option that
 * could change the request is refused by name, so a request is never half-read.
 */

export interface RequestHeader {
  name: string;
  value: string;
}

/** A request as found in the pasted text, before any validation. */
export interface RawRequest {
  url?: string;
  method?: string;
  headers: RequestHeader[];
  /** The body exactly as given; several data options are refused rather than joined with `&` as curl would. */
  body?: string;
  /** Credentials seen besides an Authorization header (`-u`, `--oauth2-bearer`); never their values. */
  credentialOptions: string[];
}

/** A curl command the importer cannot read; the message names the option, never its value. */
export class CurlImportError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CurlImportError';
  }
}

type Role = 'url' | 'method' | 'header' | 'data' | 'data-raw' | 'json' | 'credential' | 'ignore' | 'unsupported';

/** Options that take a value, by name; their role decides what the value means. */
const VALUE_OPTIONS: Record<string, Role> = {
  '--url': 'url',
  '-X': 'method',
  '--request': 'method',
  '-H': 'header',
  '--header': 'header',
  '-d': 'data',
  '--data': 'data',
  '--data-ascii': 'data',
  '--data-binary': 'data',
  '--data-raw': 'data-raw',
  '--json': 'json',
  '-u': 'credential',
  '--user': 'credential',
  '--oauth2-bearer': 'credential',
  // Transport and output settings: they do not change what is asked for.
  '-o': 'ignore',
  '--output': 'ignore',
  '-m': 'ignore',
  '--max-time': 'ignore',
  '--connect-timeout': 'ignore',
  '-A': 'ignore',
  '--user-agent': 'ignore',
  '-e': 'ignore',
  '--referer': 'ignore',
  '-w': 'ignore',
  '--write-out': 'ignore',
  '--retry': 'ignore',
  '--retry-delay': 'ignore',
  '--retry-max-time': 'ignore',
  '-x': 'ignore',
  '--proxy': 'ignore',
  '--cacert': 'ignore',
  '--max-redirs': 'ignore',
  '-D': 'ignore',
  '--dump-header': 'ignore',
  '--trace': 'ignore',
  '--trace-ascii': 'ignore',
  // These change the request in ways the export endpoint does not take.
  '--data-urlencode': 'unsupported',
  '-F': 'unsupported',
  '--form': 'unsupported',
  '--form-string': 'unsupported',
  '-T': 'unsupported',
  '--upload-file': 'unsupported',
  '-b': 'unsupported',
  '--cookie': 'unsupported',
};

const FLAG_OPTIONS = new Set([
  '-s',
  '--silent',
  '-S',
  '--show-error',
  '-L',
  '--location',
  '-k',
  '--insecure',
  '-v',
  '--verbose',
  '-i',
  '--include',
  '-g',
  '--globoff',
  '--compressed',
  '-f',
  '--fail',
  '--fail-with-body',
  '-N',
  '--no-buffer',
  '--no-progress-meter',
  '-#',
  '--progress-bar',
  '-q',
  '--http1.1',
  '--http2',
  '-4',
  '-6',
]);

const UNSUPPORTED_FLAGS: Record<string, string> = {
  '-G': 'it sends the data as a query string with GET',
  '--get': 'it sends the data as a query string with GET',
  '-I': 'it sends HEAD',
  '--head': 'it sends HEAD',
};

/** A short option with its value attached (`-XPOST`, `-H'…'`) or several flags together (`-sSL`). */
function expandShortCluster(word: string): string[] | undefined {
  if (!/^-[^-]/.test(word) || word.length <= 2) return undefined;
  const parts: string[] = [];
  for (let i = 1; i < word.length; i++) {
    const option = `-${word[i]}`;
    if (VALUE_OPTIONS[option] !== undefined) {
      parts.push(option, word.slice(i + 1));
      return parts;
    }
    parts.push(option);
  }
  return parts;
}

function describeOption(word: string): string {
  // `--header=Authorization: …` is not curl syntax, but never echo what follows the name: an
  // option glued to its value (`--headerX-Api-Key: …`) is cut at the first character no option holds.
  const name = /^--?[A-Za-z0-9][A-Za-z0-9.-]{0,30}/.exec(word)?.[0] ?? word.slice(0, 2);
  if (name.length === word.length) return name;
  return word[name.length] === '=' ? `${name}=…` : `${name}…`;
}

/** Applies one option that takes a value (`word` is how the command spelled it) to the request. */
function applyValueOption(request: RawRequest, bodies: string[], role: Role, word: string, value: string): void {
  switch (role) {
    case 'url':
      if (request.url !== undefined) throw new CurlImportError('the command names more than one URL; paste the request for one tile');
      request.url = value;
      break;
    case 'method':
      request.method = value;
      break;
    case 'header': {
      const colon = value.indexOf(':');
      if (colon <= 0) throw new CurlImportError(`curl option ${word} needs "Name: value"; got a header without a name`);
      request.headers.push({ name: value.slice(0, colon).trim(), value: value.slice(colon + 1).trim() });
      break;
    }
    case 'json':
    case 'data':
      // --json is --data-binary plus the JSON content type.
      if (role === 'json') request.headers.push({ name: 'content-type', value: 'application/json' });
      if (value.startsWith('@')) {
        throw new CurlImportError(`curl option ${word} reads the body from a file (${word} @file); paste the body itself (--data-raw '{…}')`);
      }
      bodies.push(value);
      break;
    case 'data-raw':
      bodies.push(value);
      break;
    case 'credential':
      request.credentialOptions.push(word);
      break;
    case 'ignore':
      break;
    case 'unsupported':
      throw new CurlImportError(`curl option ${word} is not supported: the export endpoint takes one JSON body (-d/--data-raw)`);
  }
}

/** Parses the words of a curl command (the first word is `curl`). */
export function parseCurlWords(words: readonly string[]): RawRequest {
  const request: RawRequest = { headers: [], credentialOptions: [] };
  const bodies: string[] = [];
  const queue = [...words.slice(1)];
  let optionsEnded = false;

  while (queue.length > 0) {
    const word = queue.shift()!;
    if (optionsEnded || !word.startsWith('-') || word === '-') {
      if (request.url !== undefined) throw new CurlImportError('the command names more than one URL; paste the request for one tile');
      request.url = word;
      continue;
    }
    if (word === '--') {
      optionsEnded = true;
      continue;
    }
    const cluster = expandShortCluster(word);
    if (cluster !== undefined) {
      // The attached value (possibly empty for a trailing value option) goes back on the queue.
      const last = cluster.at(-1)!;
      const hasValue = cluster.length >= 2 && VALUE_OPTIONS[cluster.at(-2)!] !== undefined;
      if (hasValue && last === '') cluster.pop();
      queue.unshift(...cluster);
      continue;
    }
    if (FLAG_OPTIONS.has(word)) continue;
    const unsupportedFlag = UNSUPPORTED_FLAGS[word];
    if (unsupportedFlag !== undefined)
      throw new CurlImportError(`curl option ${word} is not supported: ${unsupportedFlag}, and the export endpoint takes POST with a JSON body`);
    const role = VALUE_OPTIONS[word];
    if (role === undefined) {
      throw new CurlImportError(
        `unknown curl option ${describeOption(word)}; tilehouse reads -X/--request, -H/--header, -d/--data/--data-raw/--data-binary/--json and --url (remove the option and try again)`,
      );
    }
    const value = queue.shift();
    if (value === undefined) throw new CurlImportError(`curl option ${word} needs a value, and the command ends there: was the paste cut off?`);
    applyValueOption(request, bodies, role, word, value);
  }

  if (bodies.length > 1) throw new CurlImportError(`the command has ${bodies.length} data options; the export endpoint takes exactly one JSON body`);
  if (bodies.length === 1) request.body = bodies[0];
  // Without -X, curl sends POST when there is data and GET otherwise.
  request.method ??= bodies.length > 0 ? 'POST' : undefined;
  return request;
}
