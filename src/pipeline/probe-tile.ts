import { isDeepStrictEqual } from 'node:util';
import type { Dispatcher } from 'undici';
import type { EnvironmentConfig } from '../config/environment-schema.js';
import type { LoadedJob } from '../config/load-config.js';
import type { ClientCredentials } from '../config/secrets.js';
import { isTilehouseError, messageOf } from '../errors.js';
import type { Logger } from '../log.js';
import { scrubSecrets } from '../secret-scrubber.js';
import type { ExportPage, PageCheckFailure, PageConsistency } from '../source/export-endpoint/index.js';
import {
  columnShapes,
  RECORDING_FORMAT,
  recordableHeaders,
  type RecordedBehaviour,
  type RecordedExchange,
  type RecordedPage,
  type Recording,
} from '../source/recording.js';
import { recordingDispatcher, type WireExchange } from '../source/wire-recorder.js';
import { openSourceSession, type RetrySettings } from './source-session.js';

export interface ProbeOptions {
  environment: EnvironmentConfig;
  credentials: ClientCredentials;
  dispatcher: Dispatcher;
  logger: Logger;
  /** The most pages to read (fewer when hasNext turns false). */
  pages: number;
  /** Keep the rows as received (otherwise only their shapes). */
  withValues: boolean;
  /** The tilehouse version, written into the recording. */
  version: string;
  retry?: RetrySettings;
  signal?: AbortSignal;
  now?: () => Date;
}

const isRecord = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

function pageNumberOf(requestBody: string | undefined): number | null {
  if (requestBody === undefined) return null;
  try {
    const options = (JSON.parse(requestBody) as { options?: { pageNumber?: unknown } }).options;
    return Number.isInteger(options?.pageNumber) ? (options!.pageNumber as number) : null;
  } catch {
    return null;
  }
}

/** The path with only the tile parameter of its query string (anything else there might be a key). */
function recordablePath(path: string, tileParam: string): string {
  const url = new URL(path, 'http://recorded.invalid');
  const tile = url.searchParams.get(tileParam);
  return tile === null ? url.pathname : `${url.pathname}?${new URLSearchParams({ [tileParam]: tile }).toString()}`;
}

/** A failed answer's own words: a Regular error object's message or an OAuth error (scrubbed when the file is written). */
function errorOf(body: unknown): string | undefined {
  if (!isRecord(body)) return undefined;
  const { error } = body;
  if (isRecord(error) && typeof error.message === 'string') return error.message;
  if (typeof error === 'string') return typeof body.error_description === 'string' ? `${error}: ${body.error_description}` : error;
  return undefined;
}

const isTokenExchange = (exchange: WireExchange): boolean => new URL(exchange.path, 'http://x.invalid').pathname.endsWith('/oauth/token');

function recordedExchange(exchange: WireExchange, tileParam: string): RecordedExchange {
  const token = isTokenExchange(exchange);
  const error = exchange.status !== null && (exchange.status < 200 || exchange.status >= 300) ? errorOf(exchange.body) : undefined;
  return {
    endpoint: token ? 'token' : 'export',
    method: exchange.method,
    path: recordablePath(exchange.path, tileParam),
    pageNumber: token ? null : pageNumberOf(exchange.requestBody),
    status: exchange.status,
    ...(exchange.statusText ? { statusText: exchange.statusText } : {}),
    headers: recordableHeaders(exchange.headers),
    ...(error === undefined ? {} : { error }),
    elapsedMs: exchange.elapsedMs,
  };
}

/** One page as the tenant sent it: the raw result (its row shape, its echo), and the shapes of its columns. */
function recordedPage(page: ExportPage, itemsPerPage: number, result: Record<string, unknown> | undefined, withValues: boolean): RecordedPage {
  const rawRows = Array.isArray(result?.rows) ? (result.rows as unknown[]) : page.rows;
  const rowShape = rawRows.length > 0 && rawRows.every((row) => isRecord(row)) ? 'object' : 'array';
  const columns = page.headers.map((_header, column) =>
    columnShapes(
      page.rows.map((row) => row[column]),
      page.dataTypes[column],
    ),
  );
  return {
    pageNumber: page.pageNumber,
    itemsPerPage,
    navigation: page.navigation,
    headers: page.headers,
    dataTypes: page.dataTypes,
    rowShape,
    ...(result !== undefined && 'query' in result ? { query: result.query } : {}),
    rows: page.rows.length,
    columns,
    ...(withValues ? { values: rawRows } : {}),
  };
}

function serverDateOffset(exchange: WireExchange | undefined): number | undefined {
  const date = exchange?.headers.date;
  if (typeof date !== 'string') return undefined;
  const at = Date.parse(date);
  if (Number.isNaN(at)) return undefined;
  return Math.round(at - (exchange!.startedAt + exchange!.elapsedMs / 2));
}

/** How the tenant behaves, from the pages read: what the replay imitates. */
export function behaviourOf(
  pages: readonly RecordedPage[],
  exportExchanges: readonly WireExchange[],
  tokenExchange: WireExchange | undefined,
): RecordedBehaviour {
  const echoes = pages.map((page) => {
    if (!('query' in page)) return 'absent';
    const options = isRecord(page.query) && isRecord(page.query.options) ? page.query.options : undefined;
    return options?.pageNumber === page.pageNumber ? 'follows' : 'fixed';
  });
  const echo = echoes.every((kind) => kind === 'absent')
    ? 'absent'
    : echoes.every((kind) => kind === 'follows')
      ? 'request'
      : echoes.every((kind) => kind !== 'absent')
        ? 'saved-query'
        : 'mixed';
  const hasPrev = pages.every((page) => page.navigation.hasPrev === page.pageNumber > 0)
    ? 'page-above-zero'
    : pages.every((page) => !page.navigation.hasPrev)
      ? 'always-false'
      : pages.every((page) => page.navigation.hasPrev)
        ? 'always-true'
        : 'other';
  const answered = exportExchanges.find((exchange) => exchange.status === 200);
  const encoding = answered?.headers['content-encoding'];
  const cap = pages.find((page) => page.navigation.hasNext && page.rows < page.itemsPerPage);
  const shapes = new Set(pages.filter((page) => page.rows > 0).map((page) => page.rowShape));
  const dateOffsetMs = serverDateOffset(tokenExchange ?? answered);
  return {
    echo,
    hasPrev,
    compression: encoding === undefined ? 'none' : Array.isArray(encoding) ? encoding.join(', ') : encoding,
    ...(cap === undefined ? {} : { pageSizeCap: cap.rows }),
    rowShape: shapes.size > 1 ? 'mixed' : shapes.has('object') ? 'object' : 'array',
    ...(dateOffsetMs === undefined ? {} : { dateOffsetMs }),
  };
}

function tokenOf(exchange: WireExchange | undefined): Recording['token'] {
  if (exchange === undefined) return undefined;
  const body = isRecord(exchange.body) ? exchange.body : {};
  return {
    status: exchange.status,
    headers: recordableHeaders(exchange.headers),
    ...(typeof body.token_type === 'string' ? { tokenType: body.token_type } : {}),
    ...(typeof body.expires_in === 'number' ? { expiresIn: body.expires_in } : {}),
    fields: Object.keys(body).sort(),
  };
}

function checksOf(failure: PageCheckFailure | undefined, consistency: PageConsistency): Recording['checks'] {
  if (failure === undefined) return { accepted: true, pageIdentity: consistency.identity() };
  return { accepted: false, check: failure.check, pageNumber: failure.pageNumber, detail: failure.detail };
}

/**
 * Runs `job`'s export for up to `options.pages` pages through the same source session as a run
 * (one token, the same client, retries and checks), writes no sink, and returns what the tenant
 * answered as a Recording. A source failure ends the probe early; what was read so far is still
 * returned, with `failure` set. After the last page, page 0 is read once more to see whether the
 * source returns rows in the same order on every request (behaviour.rowOrderStable).
 */
export async function probeTile(job: LoadedJob, options: ProbeOptions): Promise<Recording> {
  const exchanges: WireExchange[] = [];
  const dispatcher = recordingDispatcher(options.dispatcher, (exchange) => exchanges.push(exchange));
  const session = openSourceSession(job, { ...options, dispatcher, logger: options.logger });
  const { source } = options.environment;
  const checks = session.client.pageChecks();
  let firstFailure: PageCheckFailure | undefined;
  const pages: RecordedPage[] = [];
  let failure: Recording['failure'];
  let firstPage: ExportPage | undefined;
  let rowOrderStable: boolean | undefined;
  try {
    for (let pageNumber = 0; pageNumber < options.pages; pageNumber++) {
      const page = await session.client.fetchPage(pageNumber);
      // The answer this page was parsed from: the last complete one for its page number.
      const exchange = exchanges.findLast(
        (candidate) => !isTokenExchange(candidate) && candidate.status === 200 && pageNumberOf(candidate.requestBody) === pageNumber,
      );
      const result = isRecord(exchange?.body) && isRecord(exchange.body.result) ? exchange.body.result : undefined;
      pages.push(recordedPage(page, source.itemsPerPage, result, options.withValues));
      if (pageNumber === 0) firstPage = page;
      firstFailure ??= checks.check(page);
      options.logger.info({ page: pageNumber, rows: page.rows.length, totalRows: page.navigation.totalRows }, 'page recorded');
      if (!page.navigation.hasNext) {
        firstFailure ??= checks.finish(pageNumber);
        break;
      }
    }
    // Offset paging holds only if the source orders rows the same way on every request; a second
    // read of page 0 (same session, same token) is the one place a probe can see that it does not.
    if (firstPage !== undefined) {
      const again = await session.client.fetchPage(0);
      if (again.navigation.totalRows === firstPage.navigation.totalRows) rowOrderStable = isDeepStrictEqual(again.rows, firstPage.rows);
    }
  } catch (error) {
    failure = { code: isTilehouseError(error) ? error.code : 'internal_error', message: messageOf(error) };
  }
  const tokenExchange = exchanges.find((exchange) => isTokenExchange(exchange) && exchange.status === 200);
  const exportExchanges = exchanges.filter((exchange) => !isTokenExchange(exchange));
  const recording: Recording = {
    format: RECORDING_FORMAT,
    recordedAt: (options.now?.() ?? new Date()).toISOString(),
    tilehouse: options.version,
    job: job.name,
    tile: job.tile,
    tileParam: source.tileParam,
    query: job.query,
    itemsPerPage: source.itemsPerPage,
    pagesAsked: options.pages,
    withValues: options.withValues,
    ...(tokenExchange === undefined ? {} : { token: tokenOf(tokenExchange) }),
    exchanges: exchanges.map((exchange) => recordedExchange(exchange, source.tileParam)),
    pages,
    ...(pages.length === 0
      ? {}
      : { behaviour: { ...behaviourOf(pages, exportExchanges, tokenExchange), ...(rowOrderStable === undefined ? {} : { rowOrderStable }) } }),
    checks: checksOf(firstFailure, checks),
    ...(failure === undefined ? {} : { failure }),
  };
  return recording;
}

/**
 * The recording as the file's text: JSON, and every registered secret (client secret, a client id
 * from the environment, each access token) replaced, in any of its encodings, as a last guard.
 */
export function recordingText(recording: Recording): string {
  return scrubSecrets(`${JSON.stringify(recording, null, 2)}\n`);
}
