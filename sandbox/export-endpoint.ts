import { isJsonContentType, parseJson, regularError, type HttpAnswer } from './http-answer.js';
import { buildPage } from './export-page.js';
import type { FaultBook } from './faults.js';
import { QueryError } from './query-error.js';
import type { EvaluatedTable } from './query-evaluator.js';
import { parseExportQuery, type SandboxQuery } from './query-schema.js';
import type { TokenStore } from './token-store.js';
import type { WireFormat } from './wire-format.js';
import type { Replay } from './replay.js';

/**
 * What `result.query` holds. `request` (the default): the request body as received, with
 * `options.pageNumber` and `options.itemsPerPage` filled in. `saved-query`: the tile's saved query
 * as stored, on every page: the body's items and options, but `pageNumber: 0` and the saved
 * `itemsPerPage` (SAVED_ITEMS_PER_PAGE), whatever page was asked (a tenant that reports the tile
 * rather than the executed request). `absent`: no `query` member at all.
 */
export type EchoMode = 'request' | 'saved-query' | 'absent';
export const ECHO_MODES: readonly EchoMode[] = ['request', 'saved-query', 'absent'];
/** The page size a tile is saved with in the reporting module (the spec's "50 seen"). */
export const SAVED_ITEMS_PER_PAGE = 50;

export interface ExportRequest {
  authorization: string | undefined;
  contentType: string | undefined;
  tileId: string | null;
  body: Buffer;
}

export interface ExportService {
  audience: string;
  tokens: TokenStore;
  faults: FaultBook;
  tiles: ReadonlySet<string>;
  wire: WireFormat;
  echo: EchoMode;
  /** Answers every valid, authenticated export request from a recording instead of the dataset. */
  replay?: Replay;
  /** The evaluated (cached) table of a valid query. */
  evaluate(query: SandboxQuery, tileId: string): EvaluatedTable;
}

const BEARER = /^Bearer\s+(\S+)\s*$/i;
// RFC 6750 §3: a 401 for a bearer token says why in WWW-Authenticate.
const invalidToken = (description: string): HttpAnswer =>
  regularError(401, description, { 'www-authenticate': `Bearer error="invalid_token", error_description="${description}"` });

/**
 * POST /api/v1/topics/incident/execute?<tileParam>=<tileId>. Checks run cheapest-and-most-general
 * first: authentication, content type, tile id, then the query itself.
 */
export function answerExportRequest(request: ExportRequest, service: ExportService): HttpAnswer {
  if (request.authorization === undefined) {
    return regularError(401, 'authorization required: send Authorization: Bearer <token>', { 'www-authenticate': 'Bearer' });
  }
  const bearer = BEARER.exec(request.authorization);
  if (!bearer) return invalidToken('malformed Authorization header; expected Bearer <token>');
  const token = bearer[1]!;
  switch (service.tokens.check(token, service.audience)) {
    case 'unknown':
      return invalidToken('invalid token');
    case 'expired':
      return invalidToken('token expired');
    case 'wrong-audience':
      return invalidToken('token was issued for another audience');
    case 'valid':
      break;
  }
  if (service.faults.expiresToken(token)) {
    service.tokens.expire(token);
    return invalidToken('token expired');
  }
  if (!isJsonContentType(request.contentType)) {
    return regularError(415, `unsupported content-type ${JSON.stringify(request.contentType ?? '')}; send application/json`);
  }
  // Spec rule: an invalid or non-existent identifier is 400 "invalid id".
  if (request.tileId === null || !service.tiles.has(request.tileId)) return regularError(400, 'invalid id');
  const tileId = request.tileId;

  const body = parseJson(request.body);
  if (body === undefined) return regularError(400, 'the body is not valid JSON');
  if (service.replay !== undefined) return service.replay.answer(body);
  let query: SandboxQuery;
  let table: EvaluatedTable;
  try {
    query = parseExportQuery(body);
    table = service.evaluate(query, tileId);
  } catch (error) {
    if (error instanceof QueryError) return regularError(400, error.message);
    throw error;
  }
  const { pageNumber, itemsPerPage } = query.options;
  const sent = body as { options?: object };
  const echo =
    service.echo === 'absent'
      ? undefined
      : {
          ...sent,
          options:
            service.echo === 'saved-query'
              ? { ...sent.options, pageNumber: 0, itemsPerPage: SAVED_ITEMS_PER_PAGE }
              : { ...sent.options, pageNumber, itemsPerPage },
        };
  const result = buildPage(table, { pageNumber, itemsPerPage }, service.wire, echo);
  if (echo === undefined) delete (result as { query?: unknown }).query;
  return { status: 200, body: { ok: true, result } };
}
