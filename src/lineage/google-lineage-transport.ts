import { createHash } from 'node:crypto';
import type { LineageTransportConfig } from '../config/lineage-schema.js';
import { sinksGoogleCredentials } from '../sinks/registry.js';
import type { Agent } from '../source/undici-parts.js';
import { redactedJson } from '../redaction.js';
import { LineageDeliveryError, postJson, type LineageTransport } from './lineage-transport.js';

/** Google's limit on one processOpenLineageRunEvent request (Data Lineage quotas: 5 MB a message). */
export const GOOGLE_LINEAGE_MAX_BYTES = 5 * 1024 * 1024;
const DEFAULT_ENDPOINT = 'https://datalineage.googleapis.com';

/**
 * The facets dropped, in this order, from an event Google would refuse as too large: the per-column
 * ones, which grow with a tile's width; the run, its job and its datasets stay.
 */
const SHEDDABLE_FACETS = ['columnLineage', 'schema'];

function withoutDatasetFacet(event: Record<string, unknown>, facet: string): Record<string, unknown> {
  const strip = (datasets: unknown) =>
    (datasets as Array<{ facets?: Record<string, unknown> }> | undefined)?.map((dataset) => {
      const { [facet]: _dropped, ...facets } = dataset.facets ?? {};
      return { ...dataset, facets };
    });
  return { ...event, inputs: strip(event.inputs), outputs: strip(event.outputs) };
}

/** The body within Google's limit: as is, else without the per-column facets; undefined when still too large. */
export function googleLineageBody(event: Record<string, unknown>): Buffer | undefined {
  let current = event;
  let body = Buffer.from(redactedJson(current));
  for (const facet of SHEDDABLE_FACETS) {
    if (body.length <= GOOGLE_LINEAGE_MAX_BYTES) return body;
    current = withoutDatasetFacet(current, facet);
    body = Buffer.from(redactedJson(current));
  }
  return body.length <= GOOGLE_LINEAGE_MAX_BYTES ? body : undefined;
}

/**
 * Google's Data Lineage API (Dataplex): `processOpenLineageRunEvent` of the project and location,
 * over plain HTTP with the Application Default Credentials the BigQuery and Cloud Storage sinks use
 * (the one token of the process), rather than `@google-cloud/lineage` and its gRPC stack for one
 * call. Each event carries a `requestId` derived from it, so a resend is idempotent.
 */
export function googleLineageTransport(
  config: Extract<LineageTransportConfig, { type: 'gcplineage' }>,
  dispatcher: Agent,
  env: NodeJS.ProcessEnv,
): LineageTransport {
  const parent = `projects/${encodeURIComponent(config.project_id)}/locations/${encodeURIComponent(config.location)}`;
  const base = `${config.apiEndpoint ?? DEFAULT_ENDPOINT}/v1/${parent}:processOpenLineageRunEvent`;
  const timeoutMs = config.timeout * 1000;
  let credentials: ReturnType<typeof sinksGoogleCredentials> | undefined;
  return {
    describe: `Google Data Lineage (${parent})`,
    timeoutMs,
    async send(event, signal) {
      const body = googleLineageBody(event);
      if (body === undefined) throw new LineageDeliveryError(`an event over Google's ${GOOGLE_LINEAGE_MAX_BYTES}-byte limit even without its column facets`);
      const requestId = createHash('sha256').update(body).digest('hex').slice(0, 32);
      const url = `${base}?requestId=${requestId}`;
      const headers = await Promise.race([
        (credentials ??= sinksGoogleCredentials({ waitMs: Math.max(1_000, timeoutMs) }, env)).then((google) => google.requestHeaders(url)),
        new Promise<never>((_, reject) => {
          if (signal.aborted) reject(signal.reason);
          signal.addEventListener('abort', () => reject(signal.reason), { once: true });
        }),
      ]);
      await postJson(dispatcher, url, body, Object.fromEntries(headers), signal);
    },
    close: () => dispatcher.close(),
  };
}
