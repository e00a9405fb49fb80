import { z } from 'zod';
import type { Logger } from '../../log.js';
import { type IcebergCatalog, CommitOutcomeUnknown, type LoadedTable, type NewSnapshot, type TableIdentifier, tableName } from './catalog.js';
import type { CommitHousekeeping, NewTableOptions } from './catalog.js';
import { CommitConflict, IcebergCatalogError, IcebergMetadataInvalidError } from './iceberg-errors.js';
import { parseIcebergJson, stringifyIcebergJson } from './iceberg-json.js';
import type { IcebergSchema } from './iceberg-schema.js';
import { failedBeforeSending, IcebergCatalogAuthError, type RestCatalogAuth, RestAuthorization } from './rest-auth.js';
import { childLocation } from './table-files.js';
import { excerpt } from '../../secret-scrubber.js';
import { currentSnapshot, tableMetadataSchema } from './table-metadata.js';
import { ACCESS_DELEGATION_HEADER, type StorageCredential, VENDED_CREDENTIALS, type VendedCredentialBook, vendedCredentialsIn } from './vended-credentials.js';

/**
 * The Iceberg REST catalog API (the specification's OpenAPI document, `rest-catalog-open-api.yaml`):
 * `GET /v1/config` for the warehouse's prefix, namespaces, load and create table, and the commit
 * (`POST …/tables/{table}`) with requirements, which the server applies atomically or refuses with
 * 409. Tested against Apache Iceberg's own REST server. Credentials: a bearer token or OAuth2
 * client credentials (rest-auth.ts); the warehouse is sent to `/v1/config`, whose `prefix` then
 * goes before every other path. With `accessDelegation`, loadTable and createTable ask for the
 * table's storage credentials (vended-credentials.ts), which are renewed through the catalog's
 * `GET …/tables/{table}/credentials` when `/v1/config` lists that endpoint, else by loading the table again.
 */
export interface RestCatalogOptions {
  uri: string;
  warehouse?: string;
  /** A bearer token (Polaris, Unity and Snowflake Open Catalog take one); the same as `auth: { type: 'bearer', token }`. */
  token?: string;
  /** A bearer token, OAuth2 client credentials, AWS SigV4 or Google credentials (rest-auth.ts). */
  auth?: RestCatalogAuth;
  /** The clock that says when an OAuth2 token is due for renewal (tests move it). */
  now?: () => number;
  /** Each request's bound. */
  requestTimeoutMs?: number;
  /**
   * Where new tables go (`<location>/<namespace>/<table>`, a `file:`, `gs://` or `s3://` location),
   * sent as the create's `location`; absent, the catalog places them in its warehouse.
   */
  location?: string;
  /** Properties new tables are created with, beside `format-version` (`write.metadata.path`, for one). */
  tableProperties?: Record<string, string>;
  /** `vended-credentials`: ask for the table's storage credentials (`X-Iceberg-Access-Delegation`) with loadTable and createTable. */
  accessDelegation?: typeof VENDED_CREDENTIALS;
  /** Where the credentials vended are kept for the table's files (the sink's); without it they are only registered with the scrubber. */
  vendedCredentials?: VendedCredentialBook;
  /** Told when the catalog was asked for credentials and vended none (the environment's are used). */
  logger?: Logger;
}

const configSchema = z.looseObject({
  defaults: z.record(z.string(), z.string()).optional(),
  overrides: z.record(z.string(), z.string()).optional(),
  /** The endpoints the server supports (the specification since 1.7): absent, the original set. */
  endpoints: z.array(z.string()).optional(),
});
/** The specification's endpoint that renews a table's vended credentials, as `/v1/config` lists it. */
const CREDENTIALS_ENDPOINT = 'GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials';
const loadResultSchema = z.looseObject({ 'metadata-location': z.string(), metadata: tableMetadataSchema });

export async function openRestCatalog(options: RestCatalogOptions): Promise<IcebergCatalog> {
  const connection = new RestConnection(options);
  const query = options.warehouse === undefined ? '' : `?warehouse=${encodeURIComponent(options.warehouse)}`;
  const configAnswer = await connection.request(connection.base, 'GET', `/v1/config${query}`);
  if (configAnswer.status !== 200) throw connection.refusal(connection.base, 'GET', '/v1/config', configAnswer);
  const config = configSchema.parse(JSON.parse(configAnswer.text));
  const settings = { ...config.defaults, ...config.overrides };
  // The prefix as the catalog gave it, as Java's client and pyiceberg put it: AWS Glue's is
  // `catalogs/<account id>`, whose slash is a path's.
  const renewsCredentials = config.endpoints?.includes(CREDENTIALS_ENDPOINT) === true;
  return new RestCatalog(connection, settings.prefix ? `/v1/${settings.prefix}` : '/v1', options, renewsCredentials);
}

interface Answer {
  status: number;
  text: string;
  headers: Headers;
}

/** One catalog's address, headers and bound: every request and every refusal told the same way. */
class RestConnection {
  readonly base: string;
  private readonly timeoutMs: number;
  readonly authorization: RestAuthorization;

  constructor(options: RestCatalogOptions) {
    this.base = options.uri.replace(/\/+$/, '');
    this.timeoutMs = options.requestTimeoutMs ?? 30_000;
    const auth = options.auth ?? (options.token === undefined ? undefined : { type: 'bearer' as const, token: options.token });
    this.authorization = new RestAuthorization(this.base, auth, this.timeoutMs, options.now);
  }

  /** One request with the catalog's credentials; a 401 or 403 throws IcebergCatalogAuthError (after one more try with a new token). */
  async request(table: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
    let answer = await this.send(table, method, path, body, headers);
    if (answer.status === 401 && this.authorization.renewable) {
      // A token revoked or expired early: one more try with a new one.
      this.authorization.invalidate();
      answer = await this.send(table, method, path, body, headers);
    }
    if (answer.status === 401 || answer.status === 403)
      throw (
        (await this.authorization.refusal(method, path, answer.status, answer.headers, answer.text)) ??
        new IcebergCatalogAuthError(
          this.base,
          `${method} ${path} was refused (${answer.status}): ${errorMessage(answer.text)}; ${answer.status === 401 ? 'the catalog does not accept the credentials' : 'the principal lacks the permission'}`,
          answer.status,
        )
      );
    return answer;
  }

  private async send(table: string, method: string, path: string, body: unknown, extra: Record<string, string>): Promise<Answer> {
    const url = new URL(`${this.base}${path}`);
    const text = body === undefined ? undefined : stringifyIcebergJson(body);
    // The delegation header is set before signing: SigV4 signs it with the rest.
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json', ...extra };
    // Signed (sigv4) over the exact headers and body sent.
    Object.assign(headers, await this.authorization.headers({ method, url, headers, ...(text === undefined ? {} : { body: text }) }));
    let response: Response;
    try {
      response = await fetch(url, {
        method,
        headers,
        signal: AbortSignal.timeout(this.timeoutMs),
        ...(text === undefined ? {} : { body: text }),
      });
    } catch (error) {
      throw new IcebergCatalogError(table, `${method} ${path} failed: ${(error as Error).message}`, undefined, { cause: error });
    }
    return { status: response.status, text: await response.text(), headers: response.headers };
  }

  refusal(table: string, method: string, path: string, answer: Answer): IcebergCatalogError {
    return new IcebergCatalogError(table, `the REST catalog answered ${method} ${path} with ${answer.status}: ${errorMessage(answer.text)}`, answer.status);
  }
}

class RestCatalog implements IcebergCatalog {
  readonly description: string;
  /** For `check`: how the requests that reached the catalog were authenticated (who signs, whose tokens); absent without credentials. */
  readonly checkPrivileges?: () => Promise<string>;
  /** The header that asks for vended credentials, when configured. */
  private readonly delegation: Record<string, string>;
  /** Tables whose want of vended credentials was told already (once per catalog, so once per run). */
  private readonly toldNone = new Set<string>();

  constructor(
    private readonly connection: RestConnection,
    /** `/v1` or `/v1/{prefix}`, as the catalog's `/v1/config` says. */
    private readonly prefix: string,
    private readonly options: Pick<RestCatalogOptions, 'location' | 'tableProperties' | 'accessDelegation' | 'vendedCredentials' | 'logger'>,
    /** Whether `/v1/config` lists the credentials endpoint (else credentials are renewed by loading the table again). */
    private readonly renewsCredentials: boolean,
  ) {
    this.description = `rest ${connection.base}`;
    const { authorization } = connection;
    if (authorization.authenticated) this.checkPrivileges = async () => `${await authorization.describe()}; the catalog answered GET /v1/config with them`;
    this.delegation = options.accessDelegation === undefined ? {} : { [ACCESS_DELEGATION_HEADER]: options.accessDelegation };
  }

  private tablePath(table: TableIdentifier): string {
    return `${this.prefix}/namespaces/${encodeURIComponent(table.namespace)}/tables/${encodeURIComponent(table.name)}`;
  }

  async namespaceExists(namespace: string): Promise<boolean> {
    const path = `${this.prefix}/namespaces/${encodeURIComponent(namespace)}`;
    const answer = await this.connection.request(namespace, 'GET', path);
    if (answer.status === 404) return false;
    if (answer.status !== 200) throw this.connection.refusal(namespace, 'GET', path, answer);
    return true;
  }

  async loadTable(table: TableIdentifier): Promise<LoadedTable | undefined> {
    return (await this.loadWithCredentials(table))?.table;
  }

  private async loadWithCredentials(table: TableIdentifier): Promise<{ table: LoadedTable; credentials: StorageCredential[] } | undefined> {
    const answer = await this.connection.request(tableName(table), 'GET', this.tablePath(table), undefined, this.delegation);
    if (answer.status === 404) return undefined;
    if (answer.status !== 200) throw this.connection.refusal(tableName(table), 'GET', this.tablePath(table), answer);
    return this.withCredentials(table, answer.text);
  }

  /** The table of a load or create answer; the credentials it vends recorded (when they were asked for). */
  private withCredentials(table: TableIdentifier, text: string): { table: LoadedTable; credentials: StorageCredential[] } {
    const parsed = parseIcebergJson(text);
    const result = loaded(table, parsed);
    if (this.options.accessDelegation === undefined) return { table: result, credentials: [] };
    const name = tableName(table);
    const credentials = vendedCredentialsIn(name, parsed, result.metadata.location);
    this.options.vendedCredentials?.record(name, result.metadata.location, credentials, () => this.renewCredentials(table));
    if (credentials.length === 0 && !this.toldNone.has(name)) {
      this.toldNone.add(name);
      this.options.logger?.warn(
        { table: name, catalog: this.description },
        `iceberg ${name}: the REST catalog vended no storage credentials for the table (accessDelegation: ${this.options.accessDelegation}); its files are written with the environment's credentials`,
      );
    }
    return { table: result, credentials };
  }

  /** The table's credentials anew: the catalog's credentials endpoint when it lists one, else the table loaded again. */
  private async renewCredentials(table: TableIdentifier): Promise<StorageCredential[]> {
    const name = tableName(table);
    if (this.renewsCredentials) {
      const path = `${this.tablePath(table)}/credentials`;
      const answer = await this.connection.request(name, 'GET', path, undefined, this.delegation);
      if (answer.status !== 200) throw this.connection.refusal(name, 'GET', path, answer);
      return vendedCredentialsIn(name, parseIcebergJson(answer.text), undefined);
    }
    const reloaded = await this.loadWithCredentials(table);
    if (reloaded === undefined) throw new IcebergMetadataInvalidError(name, 'the table is gone from the catalog');
    return reloaded.credentials;
  }

  async createTable(table: TableIdentifier, schema: IcebergSchema, { partitionSpec, location }: NewTableOptions = {}): Promise<LoadedTable> {
    const name = tableName(table);
    const namespaces = `${this.prefix}/namespaces`;
    const created = await this.connection.request(name, 'POST', namespaces, { namespace: [table.namespace], properties: {} });
    // 409: the namespace is there already, which is all the writer needs.
    if (created.status !== 200 && created.status !== 409) throw this.connection.refusal(name, 'POST', namespaces, created);
    const tables = `${this.prefix}/namespaces/${encodeURIComponent(table.namespace)}/tables`;
    const answer = await this.connection.request(
      name,
      'POST',
      tables,
      {
        name: table.name,
        schema,
        ...(location !== undefined
          ? { location }
          : this.options.location === undefined
            ? {}
            : { location: childLocation(this.options.location, `${table.namespace}/${table.name}`) }),
        ...(partitionSpec ? { 'partition-spec': partitionSpec } : {}),
        properties: { ...this.options.tableProperties, 'format-version': '2' },
      },
      this.delegation,
    );
    if (answer.status === 409) {
      const existing = await this.loadTable(table);
      if (existing) return existing;
    }
    if (answer.status !== 200) throw this.connection.refusal(name, 'POST', tables, answer);
    return this.withCredentials(table, answer.text).table;
  }

  async commitSnapshot(table: TableIdentifier, base: LoadedTable, snapshot: NewSnapshot, housekeeping?: CommitHousekeeping): Promise<LoadedTable> {
    const name = tableName(table);
    const removed = housekeeping?.removeSnapshotIds ?? [];
    const properties = housekeeping?.setProperties ?? {};
    const schema = housekeeping?.schema;
    const body = {
      identifier: { namespace: [table.namespace], name: table.name },
      requirements: [
        { type: 'assert-table-uuid', uuid: base.metadata['table-uuid'] },
        { type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': currentSnapshot(base.metadata)?.['snapshot-id'] ?? null },
        // The new fields' ids were taken from this schema and last column id (Java's client asserts the same for a schema change).
        ...(schema === undefined
          ? []
          : [
              { type: 'assert-current-schema-id', 'current-schema-id': base.metadata['current-schema-id'] },
              { type: 'assert-last-assigned-field-id', 'last-assigned-field-id': base.metadata['last-column-id'] },
            ]),
      ],
      updates: [
        // -1: the schema this commit added (the specification's "last added"), whatever id the catalog gave it.
        ...(schema === undefined
          ? []
          : [
              { action: 'add-schema', schema: schema.schema, 'last-column-id': schema.lastColumnId },
              { action: 'set-current-schema', 'schema-id': -1 },
            ]),
        { action: 'add-snapshot', snapshot },
        { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': snapshot['snapshot-id'] },
        ...(removed.length === 0 ? [] : [{ action: 'remove-snapshots', 'snapshot-ids': removed }]),
        ...(Object.keys(properties).length === 0 ? [] : [{ action: 'set-properties', updates: properties }]),
      ],
    };
    let answer: Answer;
    try {
      answer = await this.connection.request(name, 'POST', this.tablePath(table), body);
    } catch (error) {
      // Refused before it was applied; a token request that failed sent no commit either.
      if (failedBeforeSending(error)) throw error;
      throw new CommitOutcomeUnknown(name, { cause: error });
    }
    if (answer.status === 409) throw new CommitConflict(name);
    // The specification: 500, 502, 504 (and a gateway's 5xx) leave the commit's fate unknown.
    if (answer.status >= 500) throw new CommitOutcomeUnknown(name, { cause: this.connection.refusal(name, 'POST', this.tablePath(table), answer) });
    if (answer.status !== 200) throw this.connection.refusal(name, 'POST', this.tablePath(table), answer);
    return loaded(table, parseIcebergJson(answer.text));
  }

  async close(): Promise<void> {}
}

function loaded(table: TableIdentifier, answer: unknown): LoadedTable {
  const parsed = loadResultSchema.safeParse(answer);
  if (!parsed.success) throw new IcebergMetadataInvalidError(tableName(table), `the REST catalog's answer is not a table: ${parsed.error.message}`);
  return { metadata: parsed.data.metadata, metadataLocation: parsed.data['metadata-location'] };
}

/** The catalog's own message from an ErrorModel answer, else the start of the body. */
function errorMessage(text: string): string {
  try {
    const parsed = JSON.parse(text) as { error?: { message?: unknown; type?: unknown } };
    if (typeof parsed.error?.message === 'string') return `${String(parsed.error.type ?? 'error')}: ${parsed.error.message}`;
  } catch {
    // not JSON
  }
  return excerpt(text, 300);
}
