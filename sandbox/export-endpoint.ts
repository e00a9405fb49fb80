import { isJsonContentType, parseJson, regularError, type HttpAnswer } from './http-answer.js';
import { buildPage } from './export-page.js';
import type { FaultBook } from './faults.js';
import { QueryError } from './query-error.js';
import type { EvaluatedTable } from './query-evaluator.js';
import { parseExportQuery, type SandboxQuery } from './query-schema.js';
import type { TokenStore } from './token-store.js';
import type { WireFormat } from './wire-format.js';

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
  const echo = { ...(body as object), options: { ...(body as { options?: object }).options, pageNumber, itemsPerPage } };
  return { status: 200, body: { ok: true, result: buildPage(table, { pageNumber, itemsPerPage }, service.wire, echo) } };
}
