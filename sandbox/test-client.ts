import type { Sandbox } from './sandbox.js';
import { SANDBOX_TILE } from './tiles.js';

/**
 * A deliberately plain client for the sandbox's own tests: it does only what the spec says a
 * client does, so the tests exercise the sandbox and not tilehouse's source code.
 */
export interface Reply {
  status: number;
  headers: Headers;
  json: any;
  text: string;
}

async function reply(response: Response): Promise<Reply> {
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, json, text };
}

export async function postJson(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  return reply(
    await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    }),
  );
}

export function tokenBody(sandbox: Sandbox, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    client_id: sandbox.clientId,
    client_secret: sandbox.clientSecret,
    audience: sandbox.audience,
    grant_type: 'client_credentials',
    ...overrides,
  };
}

export async function fetchToken(sandbox: Sandbox): Promise<string> {
  const answer = await postJson(`${sandbox.url}/oauth/token`, tokenBody(sandbox));
  if (answer.status !== 200) throw new Error(`token request failed: ${answer.status} ${answer.text}`);
  return answer.json.access_token as string;
}

export function exportUrl(sandbox: Sandbox, tileId: string = SANDBOX_TILE): string {
  return `${sandbox.url}/api/v1/topics/incident/execute?${sandbox.tileParam}=${encodeURIComponent(tileId)}`;
}

export async function exportPage(
  sandbox: Sandbox,
  token: string,
  query: { items: unknown[]; options?: Record<string, unknown> },
  page: { pageNumber?: number; itemsPerPage?: number } = {},
  tileId?: string,
): Promise<Reply> {
  const body = { ...query, options: { ...query.options, ...page } };
  return postJson(exportUrl(sandbox, tileId), body, { authorization: `Bearer ${token}` });
}

/** Reads every page in order; fails loudly on anything but 200. */
export async function exportAll(
  sandbox: Sandbox,
  token: string,
  query: { items: unknown[] },
  itemsPerPage: number,
): Promise<{ pages: any[]; rows: unknown[] }> {
  const pages: any[] = [];
  const rows: unknown[] = [];
  for (let pageNumber = 0; ; pageNumber++) {
    const answer = await exportPage(sandbox, token, query, { pageNumber, itemsPerPage });
    if (answer.status !== 200) throw new Error(`page ${pageNumber}: ${answer.status} ${answer.text}`);
    pages.push(answer.json.result);
    rows.push(...(answer.json.result.rows as unknown[]));
    if (!answer.json.result.navigation.hasNext) return { pages, rows };
  }
}

/** A minimal query item. */
export function item(header: string, formula: string, dataType: 'number' | 'text' | 'datetime', extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { header, formula, dataType, filters: [], ...extra };
}
