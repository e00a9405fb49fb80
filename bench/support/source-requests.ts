import { request, type Dispatcher } from 'undici';
import { pageQuery } from '../bench-query.js';

export interface SourceEndpoint {
  /** The API (export endpoint). */
  url: string;
  /** Where tokens come from; default `url`. The bench points it at its TokenProxy. */
  authUrl?: string;
  tileId: string;
  clientId: string;
  clientSecret: string;
}

/**
 * The two requests a user would write by hand against the API (what the baselines send): a
 * client-credentials token, then the tile's ready-made Export query one page at a time.
 */
export async function fetchSourceToken(endpoint: SourceEndpoint, dispatcher: Dispatcher): Promise<string> {
  const response = await request(new URL('/oauth/token', endpoint.authUrl ?? endpoint.url), {
    method: 'POST',
    dispatcher,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      client_id: endpoint.clientId,
      client_secret: endpoint.clientSecret,
      audience: new URL(endpoint.url).hostname,
      grant_type: 'client_credentials',
    }),
  });
  const text = await response.body.text();
  if (response.statusCode !== 200) throw new Error(`token request: HTTP ${response.statusCode}: ${text}`);
  return (JSON.parse(text) as { access_token: string }).access_token;
}

export async function fetchPageText(
  endpoint: SourceEndpoint,
  token: string,
  pageNumber: number,
  itemsPerPage: number,
  dispatcher: Dispatcher,
): Promise<string> {
  const url = new URL('/api/v1/topics/incident/execute', endpoint.url);
  url.searchParams.set('tileId', endpoint.tileId);
  const response = await request(url, {
    method: 'POST',
    dispatcher,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify(pageQuery(pageNumber, itemsPerPage)),
  });
  const text = await response.body.text();
  if (response.statusCode !== 200) throw new Error(`page ${pageNumber}: HTTP ${response.statusCode}: ${text.slice(0, 300)}`);
  return text;
}

/** What the baselines read of a page. */
export interface PageBody {
  result: { navigation: { hasNext: boolean; totalRows: number }; headers: string[]; rows: unknown[][] };
}
