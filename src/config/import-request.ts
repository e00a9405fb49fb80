import { ConfigError, type ConfigProblem } from './config-error.js';
import { CurlImportError, parseCurlWords, type RawRequest, type RequestHeader } from './import-curl.js';
import { ShellWordsError, splitShellWords } from './import-shell-words.js';
import { exportQuerySchema, type ExportQuery } from './job-schema.js';
import { formatFieldPath } from './read-yaml.js';

/**
 * Reads the ready-made API request the reporting module shows for a tile (spec, endpoint 7: tile
 * options → export target API) and checks that it is a tile export: the URL of
 * `…/api/v1/topics/incident/execute` with the tile id as a query-string item, and an Export query
 * as the body. Two forms are accepted: a curl command, or the URL on the first line followed by
 * the JSON body. Bearer tokens and other credentials are recognised only to be dropped.
 */

export const EXPORT_PATH = '/api/v1/topics/incident/execute';

/**
 * Query-string items that are known not to carry the tile id. The tile parameter is the one item
 * not listed here; its name differs between tenants (`tileId`, `id`), so it is detected, not assumed.
 */
export const NON_TILE_PARAMS: ReadonlySet<string> = new Set(
  [
    'access_token',
    'token',
    'api_key',
    'apikey',
    'format',
    'lang',
    'locale',
    'timezone',
    'tz',
    'pageNumber',
    'itemsPerPage',
    'page',
    'pageSize',
    'limit',
    'offset',
    'download',
    'charset',
  ].map((name) => name.toLowerCase()),
);

// Query-string items whose value is a credential: dropped and redacted like a bearer token.
const SECRET_PARAMS = new Set(['access_token', 'token', 'api_key', 'apikey']);

export interface ImportedRequest {
  /** The export URL without credentials, with secret query items redacted (safe to print). */
  url: string;
  /** What `source.baseUrl` must be for tilehouse to call this URL: origin plus any path prefix. */
  baseUrl: string;
  /** The query-string item that carries the tile id (`source.tileParam`). */
  tileParam: string;
  tileId: string;
  /** The body as the reporting module wrote it (key order kept); it passed `exportQuerySchema`. */
  query: Record<string, unknown>;
  /** The body as tilehouse reads it (defaults applied), for comparison with a loaded job. */
  parsedQuery: ExportQuery;
  /** Other query-string items; tilehouse sends only the tile parameter. Secret values are redacted. */
  otherParams: Array<{ name: string; value: string }>;
  /** Where credentials were seen and dropped (`Authorization header`, `-u`, `access_token`). */
  droppedCredentials: string[];
}

export interface ImportOptions {
  /** Names the input in error messages: the file path, or `stdin`. */
  source: string;
  /** The tile parameter's name when the query string has several candidates (`--tile-param`). */
  tileParam?: string;
}

const MAX_ECHO = 80;

/**
 * Removes credentials from text meant for people: bearer tokens, basic credentials, tokens in
 * query strings and user:password in URLs. Every message this module builds passes through here.
 */
export function redactCredentials(text: string): string {
  return text
    .replace(/\b(Bearer|Basic|Token)(\s+)[^\s'",}]+/gi, '$1$2<redacted>')
    .replace(/([?&](?:access_token|token|api_key|apikey)=)[^&#\s'"]*/gi, '$1<redacted>')
    .replace(/(\/\/)[^/@\s:]+:[^/@\s]+@/g, '$1<redacted>@');
}

function echo(value: string): string {
  const redacted = redactCredentials(value);
  return JSON.stringify(redacted.length > MAX_ECHO ? `${redacted.slice(0, MAX_ECHO)}…` : redacted);
}

/**
 * Where JSON.parse stopped in `text`, as `line L column C`, from the position its message gives
 * (`… at position 12 …`), never from the text it quotes; `at the end` when it ran out.
 */
export function jsonErrorPlace(text: string, error: unknown): string {
  const message = error instanceof Error ? error.message : '';
  const position = /\bposition (\d+)/.exec(message)?.[1];
  if (position === undefined) return /end of (JSON|data) input/i.test(message) ? 'it ends too early' : 'it cannot be read as JSON';
  const before = text.slice(0, Number(position));
  const line = before.split('\n').length;
  const column = before.length - before.lastIndexOf('\n');
  return `a mistake at line ${line} column ${column} of the body`;
}

function isCurl(text: string): boolean {
  return /^\s*(?:\$\s+)?curl(?:\.exe)?(?:\s|$)/.test(text);
}

/** The URL-then-body form: URL (optionally after the method) on the first line, header lines, then JSON. */
function parseUrlAndBody(text: string): RawRequest {
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  while (lines.length > 0 && lines[0]!.trim() === '') lines.shift();
  const request: RawRequest = { headers: [], credentialOptions: [] };
  const first = lines[0]?.trim() ?? '';
  if (first.startsWith('{') || first.startsWith('[') || first === '') {
    const body = lines.join('\n').trim();
    if (body !== '') request.body = body;
    return request;
  }
  const methodAndUrl = /^(?:([A-Za-z]+)\s+)?(\S+)(?:\s+HTTP\/[\d.]+)?$/.exec(first);
  if (methodAndUrl === null) {
    request.url = first;
  } else {
    request.method = methodAndUrl[1]?.toUpperCase();
    request.url = methodAndUrl[2];
  }
  let index = 1;
  // Header lines may sit between the URL and the body (as an HTTP client would show them).
  while (index < lines.length) {
    const line = lines[index]!.trim();
    const header = /^([A-Za-z][A-Za-z0-9-]*):\s*(.*)$/.exec(line);
    if (line === '') index++;
    else if (header !== null) {
      request.headers.push({ name: header[1]!, value: header[2]! });
      index++;
    } else break;
  }
  const body = lines.slice(index).join('\n').trim();
  if (body !== '') request.body = body;
  request.method ??= 'POST';
  return request;
}

function readRawRequest(text: string, source: string): RawRequest {
  if (!isCurl(text)) return parseUrlAndBody(text);
  try {
    const words = splitShellWords(text);
    if (words[0] === '$') words.shift(); // a copied prompt
    return parseCurlWords(words);
  } catch (error) {
    if (error instanceof ShellWordsError) {
      throw ConfigError.single({ file: source, field: 'curl command', line: error.line, message: redactCredentials(error.message) });
    }
    if (error instanceof CurlImportError) throw ConfigError.single({ file: source, field: 'curl command', message: redactCredentials(error.message) });
    throw error;
  }
}

function credentialsIn(headers: readonly RequestHeader[]): string[] {
  return headers.filter((header) => /^(authorization|x-api-key|api-key|cookie)$/i.test(header.name)).map((header) => `${header.name} header`);
}

interface TileParamResult {
  tileParam?: string;
  problems: ConfigProblem[];
}

function findTileParam(url: URL, source: string, wanted: string | undefined): TileParamResult {
  const names = [...new Set(url.searchParams.keys())];
  const field = 'url query string';
  const shown = names.length === 0 ? 'it has no items' : `it has ${names.join(', ')}`;
  if (wanted !== undefined) {
    if (!url.searchParams.has(wanted)) {
      return { problems: [{ file: source, field, message: `--tile-param ${wanted}: the URL has no such query-string item (${shown})` }] };
    }
    return { tileParam: wanted, problems: [] };
  }
  const candidates = names.filter((name) => !NON_TILE_PARAMS.has(name.toLowerCase()));
  if (candidates.length === 1) return { tileParam: candidates[0], problems: [] };
  if (candidates.length === 0) {
    return {
      problems: [
        {
          file: source,
          field,
          message: `no tile id in the query string (${shown}); the export URL carries it as e.g. ?tileId=<id>. If it is in one of the items above, name it with --tile-param`,
        },
      ],
    };
  }
  return {
    problems: [
      {
        file: source,
        field,
        message: `cannot tell which query-string item carries the tile id: ${candidates.join(', ')}; name it with --tile-param`,
      },
    ],
  };
}

/** The request's URL, when it is an absolute http(s) URL; otherwise why not, in `problems`. */
function readUrl(raw: RawRequest, source: string, problems: ConfigProblem[]): URL | undefined {
  if (raw.url === undefined) {
    problems.push({
      file: source,
      field: 'url',
      message: `no URL: expected https://<tenant>${EXPORT_PATH}?tileId=<id> (as the curl command's URL, or on the first line before the JSON body)`,
    });
    return undefined;
  }
  let url: URL;
  try {
    url = new URL(raw.url);
  } catch {
    problems.push({ file: source, field: 'url', value: echo(raw.url), message: 'not an absolute URL (expected https://<tenant>…)' });
    return undefined;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    problems.push({ file: source, field: 'url', value: echo(raw.url), message: 'only https:// (or http:// for a local sandbox) URLs can be imported' });
    return undefined;
  }
  return url;
}

/** The base URL before the export path, and the tile: which query-string item carries it, and its id. */
function readTile(
  url: URL,
  source: string,
  wantedParam: string | undefined,
  problems: ConfigProblem[],
): { baseUrl?: string; tileParam?: string; tileId?: string } {
  let baseUrl: string | undefined;
  const pathname = url.pathname.replace(/\/+$/, '');
  if (!pathname.endsWith(EXPORT_PATH)) {
    problems.push({
      file: source,
      field: 'url path',
      value: echo(url.pathname),
      message: `not the tile export endpoint: expected a path ending in ${EXPORT_PATH} (endpoint 7)`,
    });
  } else {
    baseUrl = `${url.origin}${pathname.slice(0, -EXPORT_PATH.length)}`;
  }
  const found = findTileParam(url, source, wantedParam);
  problems.push(...found.problems);
  if (found.tileParam === undefined) return { baseUrl };
  const tileParam = found.tileParam;
  const values = url.searchParams.getAll(tileParam);
  const tileId = values[0]?.trim();
  if (values.length > 1) {
    problems.push({ file: source, field: `url query string ${tileParam}`, message: `the tile parameter appears ${values.length} times; keep one` });
  } else if (tileId === undefined || tileId === '') {
    problems.push({ file: source, field: `url query string ${tileParam}`, message: 'the tile id is empty' });
  } else if (/[<>{}]/.test(tileId)) {
    problems.push({
      file: source,
      field: `url query string ${tileParam}`,
      value: echo(tileId),
      message: 'the tile id is a placeholder; copy the request of a real tile',
    });
  } else if (/[\u0000-\u001f\u007f]/.test(tileId)) {
    problems.push({ file: source, field: `url query string ${tileParam}`, value: echo(tileId), message: 'the tile id contains control characters' });
  }
  return { baseUrl, tileParam, tileId };
}

/** The export endpoint takes POST with a JSON body: a method or content type that says otherwise is a problem. */
function checkMethodAndContentType(raw: RawRequest, source: string, problems: ConfigProblem[]): void {
  if (raw.method !== undefined && raw.method.toUpperCase() !== 'POST') {
    // A method is shown only when it is one (a word of letters): `-X 'X-Api-Key: …'` is a header misplaced, its value a secret.
    const method = /^[A-Za-z]{1,16}$/.test(raw.method) ? { value: echo(raw.method) } : {};
    problems.push({ file: source, field: 'method', ...method, message: 'the export endpoint takes POST' });
  }

  const contentType = raw.headers.findLast((header) => header.name.toLowerCase() === 'content-type');
  if (contentType !== undefined && !/^application\/json\b/i.test(contentType.value)) {
    // A header's value is never echoed: the importer cannot tell a misplaced key from a content type.
    problems.push({ file: source, field: 'content-type header', message: 'the export endpoint takes application/json (the value is not shown)' });
  }
}

/** The body as JSON (`query`, kept as written) and as a validated export query. */
function readQuery(raw: RawRequest, source: string, problems: ConfigProblem[]): { query?: Record<string, unknown>; parsedQuery?: ExportQuery } {
  if (raw.body === undefined) {
    problems.push({
      file: source,
      field: 'body',
      message:
        'no body: the export query (JSON with items and options) is missing; a curl command carries it in -d/--data-raw, the other form after the URL line',
    });
    return {};
  }
  let json: unknown;
  try {
    json = JSON.parse(raw.body);
  } catch (error) {
    // JSON.parse's message quotes the text around the mistake (a key in the body): only its place is told.
    problems.push({ file: source, field: 'body', message: `not JSON (${jsonErrorPlace(raw.body, error)}; the body is not shown)` });
  }
  if (json === undefined) return {};
  const result = exportQuerySchema.safeParse(json);
  if (result.success) return { query: json as Record<string, unknown>, parsedQuery: result.data };
  for (const issue of result.error.issues) {
    const keys = issue.code === 'unrecognized_keys' ? issue.keys : [];
    const path = keys.length === 1 ? [...issue.path, keys[0]!] : issue.path;
    problems.push({
      file: source,
      field: path.length === 0 ? 'body' : `body.${formatFieldPath(path)}`,
      message: `not an export query (items, options): ${issue.message}`,
    });
  }
  return {};
}

/**
 * Reads and validates a pasted request. Every problem found is reported at once (a ConfigError,
 * exit 2) naming the input, what is missing or wrong, and the offending value with credentials
 * redacted.
 */
export function importRequest(text: string, options: ImportOptions): ImportedRequest {
  const { source } = options;
  if (text.trim() === '')
    throw ConfigError.single({
      file: source,
      field: '',
      message: 'the request is empty; paste the curl command or the URL and JSON body the reporting module shows',
    });
  const raw = readRawRequest(text, source);
  const problems: ConfigProblem[] = [];
  const droppedCredentials = [...credentialsIn(raw.headers), ...raw.credentialOptions];

  const url = readUrl(raw, source, problems);
  const { baseUrl, tileParam, tileId } = url === undefined ? {} : readTile(url, source, options.tileParam, problems);
  checkMethodAndContentType(raw, source, problems);
  const { query, parsedQuery } = readQuery(raw, source, problems);

  if (problems.length > 0) throw new ConfigError(problems);

  const otherParams: Array<{ name: string; value: string }> = [];
  for (const [name, value] of url!.searchParams) {
    if (name === tileParam) continue;
    if (SECRET_PARAMS.has(name.toLowerCase())) {
      droppedCredentials.push(`${name} query-string item`);
      otherParams.push({ name, value: '<redacted>' });
    } else otherParams.push({ name, value });
  }
  const safeUrl = new URL(url!.href);
  safeUrl.username = '';
  safeUrl.password = '';
  if (url!.username !== '') droppedCredentials.push('user:password in the URL');

  return {
    url: redactCredentials(safeUrl.href),
    baseUrl: baseUrl!,
    tileParam: tileParam!,
    tileId: tileId!,
    query: query!,
    parsedQuery: parsedQuery!,
    otherParams,
    droppedCredentials,
  };
}
