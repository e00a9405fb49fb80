import { z } from 'zod';
import { type IcebergCatalog, CommitOutcomeUnknown, type LoadedTable, type NewSnapshot, type TableIdentifier, tableName } from './catalog.js';
import { CommitConflict, IcebergCatalogError, IcebergMetadataInvalidError } from './iceberg-errors.js';
import { parseIcebergJson, stringifyIcebergJson } from './iceberg-json.js';
import type { IcebergSchema } from './iceberg-schema.js';
import { currentSnapshot, tableMetadataSchema } from './table-metadata.js';

/**
 * The Iceberg REST catalog API (the specification's OpenAPI document, `rest-catalog-open-api.yaml`):
 * `GET /v1/config` for the warehouse's prefix, namespaces, load and create table, and the commit
 * (`POST …/tables/{table}`) with requirements, which the server applies atomically or refuses with
 * 409. Tested against Apache Iceberg's own REST server.
 */
export interface RestCatalogOptions {
  uri: string;
  warehouse?: string;
  /** A bearer token (Polaris, Unity and Snowflake Open Catalog take one). */
  token?: string;
  /** Each request's bound. */
  requestTimeoutMs?: number;
}

const configSchema = z.looseObject({ defaults: z.record(z.string(), z.string()).optional(), overrides: z.record(z.string(), z.string()).optional() });
const loadResultSchema = z.looseObject({ 'metadata-location': z.string(), metadata: tableMetadataSchema });

export async function openRestCatalog(options: RestCatalogOptions): Promise<IcebergCatalog> {
  const base = options.uri.replace(/\/+$/, '');
  const timeoutMs = options.requestTimeoutMs ?? 30_000;
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;

  const request = async (table: string, method: string, path: string, body?: unknown) => {
    let response: Response;
    try {
      response = await fetch(`${base}${path}`, {
        method,
        headers,
        signal: AbortSignal.timeout(timeoutMs),
        ...(body === undefined ? {} : { body: stringifyIcebergJson(body) }),
      });
    } catch (error) {
      throw new IcebergCatalogError(table, `${method} ${path} failed: ${(error as Error).message}`, undefined, { cause: error });
    }
    const text = await response.text();
    return { status: response.status, text };
  };
  const refusal = (table: string, method: string, path: string, answer: { status: number; text: string }) =>
    new IcebergCatalogError(table, `the REST catalog answered ${method} ${path} with ${answer.status}: ${errorMessage(answer.text)}`, answer.status);

  const query = options.warehouse === undefined ? '' : `?warehouse=${encodeURIComponent(options.warehouse)}`;
  const configAnswer = await request(base, 'GET', `/v1/config${query}`);
  if (configAnswer.status !== 200) throw refusal(base, 'GET', '/v1/config', configAnswer);
  const config = configSchema.parse(JSON.parse(configAnswer.text));
  const settings = { ...config.defaults, ...config.overrides };
  const prefix = settings.prefix ? `/v1/${encodeURIComponent(settings.prefix)}` : '/v1';
  const tablePath = (table: TableIdentifier) => `${prefix}/namespaces/${encodeURIComponent(table.namespace)}/tables/${encodeURIComponent(table.name)}`;

  const loaded = (table: TableIdentifier, text: string): LoadedTable => {
    const parsed = loadResultSchema.safeParse(parseIcebergJson(text));
    if (!parsed.success) throw new IcebergMetadataInvalidError(tableName(table), `the REST catalog's answer is not a table: ${parsed.error.message}`);
    return { metadata: parsed.data.metadata, metadataLocation: parsed.data['metadata-location'] };
  };

  const catalog: IcebergCatalog = {
    description: `rest ${base}`,
    async loadTable(table) {
      const answer = await request(tableName(table), 'GET', tablePath(table));
      if (answer.status === 404) return undefined;
      if (answer.status !== 200) throw refusal(tableName(table), 'GET', tablePath(table), answer);
      return loaded(table, answer.text);
    },
    async createTable(table, schema: IcebergSchema) {
      const name = tableName(table);
      const namespaces = `${prefix}/namespaces`;
      const created = await request(name, 'POST', namespaces, { namespace: [table.namespace], properties: {} });
      // 409: the namespace is there already, which is all the writer needs.
      if (created.status !== 200 && created.status !== 409) throw refusal(name, 'POST', namespaces, created);
      const tables = `${prefix}/namespaces/${encodeURIComponent(table.namespace)}/tables`;
      const answer = await request(name, 'POST', tables, { name: table.name, schema, properties: { 'format-version': '2' } });
      if (answer.status === 409) {
        const existing = await catalog.loadTable(table);
        if (existing) return existing;
      }
      if (answer.status !== 200) throw refusal(name, 'POST', tables, answer);
      return loaded(table, answer.text);
    },
    async commitSnapshot(table, base, snapshot: NewSnapshot) {
      const name = tableName(table);
      const body = {
        identifier: { namespace: [table.namespace], name: table.name },
        requirements: [
          { type: 'assert-table-uuid', uuid: base.metadata['table-uuid'] },
          { type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': currentSnapshot(base.metadata)?.['snapshot-id'] ?? null },
        ],
        updates: [
          { action: 'add-snapshot', snapshot },
          { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': snapshot['snapshot-id'] },
        ],
      };
      let answer: { status: number; text: string };
      try {
        answer = await request(name, 'POST', tablePath(table), body);
      } catch (error) {
        throw new CommitOutcomeUnknown(name, { cause: error });
      }
      if (answer.status === 409) throw new CommitConflict(name);
      // The specification: 500, 502, 504 (and a gateway's 5xx) leave the commit's fate unknown.
      if (answer.status >= 500) throw new CommitOutcomeUnknown(name, { cause: refusal(name, 'POST', tablePath(table), answer) });
      if (answer.status !== 200) throw refusal(name, 'POST', tablePath(table), answer);
      return loaded(table, answer.text);
    },
    async close() {},
  };
  return catalog;
}

/** The catalog's own message from an ErrorModel answer, else the start of the body. */
function errorMessage(text: string): string {
  try {
    const parsed = JSON.parse(text) as { error?: { message?: unknown; type?: unknown } };
    if (typeof parsed.error?.message === 'string') return `${String(parsed.error.type ?? 'error')}: ${parsed.error.message}`;
  } catch {
    // not JSON
  }
  return text.slice(0, 300);
}
