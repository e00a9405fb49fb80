import { z } from 'zod';

const LOOPBACK = /^(localhost|127\.\d+\.\d+\.\d+|\[::1\])$/;

/**
 * What is wrong with a Google API endpoint (`sinks.bigquery.apiEndpoint`, `sinks.gcs.apiEndpoint`),
 * or undefined. An endpoint is an origin only (`https://bigquery.europe-west3.rep.googleapis.com`,
 * a Private Service Connect name, a proxy): the client appends `/bigquery/v2` or `/storage/v1` and
 * `/upload/...` itself, so a path would send every request somewhere else. Every request to it
 * carries an OAuth token, so plain http is refused except on loopback (a local proxy or test server).
 */
export function googleApiEndpointProblem(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be a URL such as https://bigquery.europe-west3.rep.googleapis.com';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must be an https:// URL';
  if (url.protocol === 'http:' && !LOOPBACK.test(url.hostname)) {
    return 'http:// is refused for non-loopback hosts (every request carries an OAuth token); use https://';
  }
  if (url.username !== '' || url.password !== '') return 'must not carry a user or password';
  if ((url.pathname !== '/' && url.pathname !== '') || url.search !== '' || url.hash !== '') {
    return `must be an origin only (scheme, host, port), e.g. ${url.origin}: the client adds the API's path itself`;
  }
  return undefined;
}

/** The schema of one endpoint field: checked, then kept as its origin (no trailing slash). */
export function googleApiEndpointSchema(service: string, example: string) {
  return z
    .string()
    .min(1)
    .superRefine((value, ctx) => {
      const problem = googleApiEndpointProblem(value);
      if (problem !== undefined) ctx.addIssue({ code: 'custom', input: value, message: problem });
    })
    .transform((value) => new URL(value).origin)
    .describe(
      `Where ${service} requests go instead of the default endpoint (a regional endpoint, Private Service Connect, a proxy), e.g. ${example}; ` +
        'an origin only, https:// (http:// only on loopback); requests carry the Application Default Credentials as they would to the default',
    );
}
