import { z } from 'zod';
import { TilehouseError } from '../../errors.js';
import { registerSecret } from '../../secret-scrubber.js';
import type { VendedStorage } from '../stores/registry.js';
import { fileKeyOf } from './table-files.js';

/**
 * Vended storage credentials (the Iceberg REST specification's access delegation): a loader that
 * sends `X-Iceberg-Access-Delegation: vended-credentials` with loadTable and createTable is given
 * short-lived credentials for the table's files in the answer (Polaris / Snowflake Open Catalog,
 * Databricks Unity Catalog, BigLake, Glue with Lake Formation), so it needs no bucket identity of
 * its own. The answer carries them as FileIO properties: the newer `storage-credentials` list, each
 * for the files below its `prefix` (the specification: "clients must first check whether the
 * respective credentials exist in the storage-credentials field before checking the config"), or
 * in `config` for the whole table (`s3.access-key-id`, `s3.secret-access-key`, `s3.session-token`,
 * `s3.session-token-expires-at-ms`). Which properties a store takes is the store's to know
 * (stores/s3/vended-identity.ts); this module keeps them by prefix, renews them before they expire
 * (the catalog's `GET …/tables/{table}/credentials`, or loadTable again), and registers every
 * credential value with the secret scrubber the moment it arrives, so none is ever logged or stored.
 */
export const ACCESS_DELEGATION_HEADER = 'X-Iceberg-Access-Delegation';
export const VENDED_CREDENTIALS = 'vended-credentials';

/** Credentials for the files below `prefix`, as FileIO properties. */
export interface StorageCredential {
  prefix: string;
  config: Readonly<Record<string, string>>;
}

const storageCredentialSchema = z.looseObject({ prefix: z.string(), config: z.record(z.string(), z.string()) });
/** What of a LoadTableResult (or a LoadCredentialsResponse: the list alone) holds credentials. */
const vendedAnswerSchema = z.looseObject({
  config: z.record(z.string(), z.string()).optional(),
  'storage-credentials': z.array(storageCredentialSchema).optional(),
});

/**
 * The properties that are credentials, by store: what a store takes to read and write (the rest of
 * a `config`, an endpoint or a region, is not a credential and does not make one).
 */
const CREDENTIAL_PROPERTY = /^(?:s3\.(?:access-key-id|secret-access-key|session-token)|gcs\.oauth2\.token|adls\.sas-token\..+)$/;
/** When credentials stop working (epoch milliseconds), by store. */
const EXPIRY_PROPERTIES = ['s3.session-token-expires-at-ms', 'gcs.oauth2.token-expires-at'];

// Credentials are renewed this long before they expire (a quarter of their life when that is
// shorter: a catalog that vends fifteen-minute keys has them renewed at eleven and a quarter).
const RENEW_MARGIN_MS = 5 * 60_000;

/** The catalog's answer could not be used for credentials, or renewing them failed (`iceberg_vended_credentials_failed`). */
export class IcebergVendedCredentialsError extends TilehouseError {
  readonly code = 'iceberg_vended_credentials_failed';
  override readonly targetKind = 'iceberg' as const;

  constructor(
    readonly table: string,
    what: string,
    options?: { cause?: unknown },
  ) {
    super(`Iceberg table ${table}: ${what}`, options);
  }
}

/**
 * The credentials in a catalog's answer, each registered with the scrubber; none when it vends none.
 * `storage-credentials` when the answer has the list, else the credential properties of `config`
 * as one credential for the whole table.
 */
export function vendedCredentialsIn(table: string, answer: unknown, tableLocation: string | undefined): StorageCredential[] {
  const parsed = vendedAnswerSchema.safeParse(answer);
  if (!parsed.success)
    // Never the values: zod's message names paths and expectations only.
    throw new IcebergVendedCredentialsError(
      table,
      `the REST catalog's storage credentials are malformed: ${parsed.error.issues.map((issue) => issue.path.join('.')).join(', ')}`,
    );
  const listed = (parsed.data['storage-credentials'] ?? []).filter((credential) => hasCredential(credential.config));
  const config = parsed.data.config ?? {};
  const credentials = listed.length > 0 ? listed : hasCredential(config) && tableLocation !== undefined ? [{ prefix: tableLocation, config }] : [];
  for (const { config: properties } of credentials)
    for (const [key, value] of Object.entries(properties)) if (CREDENTIAL_PROPERTY.test(key)) registerSecret(value);
  return credentials.map(({ prefix, config: properties }) => ({ prefix, config: properties }));
}

function hasCredential(config: Readonly<Record<string, string>>): boolean {
  return Object.keys(config).some((key) => CREDENTIAL_PROPERTY.test(key));
}

/** When the credential stops working (its earliest expiry property), or undefined when it does not say. */
function expiresAtMs(credential: StorageCredential): number | undefined {
  const times = EXPIRY_PROPERTIES.map((key) => Number(credential.config[key])).filter((time) => Number.isFinite(time) && time > 0);
  return times.length === 0 ? undefined : Math.min(...times);
}

/** Renews one table's credentials (the catalog's credentials endpoint, or loadTable again). */
type RenewCredentials = () => Promise<StorageCredential[]>;

interface TableCredentials {
  table: string;
  location: string;
  credentials: StorageCredential[];
  receivedAtMs: number;
  renew: RenewCredentials;
  renewing: Promise<void> | undefined;
}

/**
 * The credentials a catalog vended for the tables of one sink, for its whole life (every catalog
 * the sink opens records into it): the stores ask it, by location, for the credentials of a file
 * (`lookup`, the longest prefix that holds the file), and each ask answers them renewed when due.
 */
export class VendedCredentialBook {
  private readonly tables = new Map<string, TableCredentials>();

  constructor(private readonly now: () => number = Date.now) {}

  /** The credentials the catalog answered for `table` (none: the table's files go with the environment's). */
  record(table: string, location: string, credentials: StorageCredential[], renew: RenewCredentials): void {
    this.tables.set(table, { table, location, credentials, receivedAtMs: this.now(), renew, renewing: undefined });
  }

  /** Whether the catalog vended credentials for `table` when it last answered for it. */
  holds(table: string): boolean {
    return (this.tables.get(table)?.credentials.length ?? 0) > 0;
  }

  /** The vended credentials that cover `location` (the longest prefix), or undefined: the store's own go. */
  lookup(location: string): VendedStorage | undefined {
    const prefix = this.find(location)?.credential.prefix;
    return prefix === undefined ? undefined : { prefix, current: () => this.current(prefix) };
  }

  /** The credential of `prefix` as the book holds it now (a newer load's, a renewal's), renewed first when due. */
  private async current(prefix: string): Promise<Readonly<Record<string, string>>> {
    let found = this.find(prefix);
    if (found !== undefined && this.due(found.entry, found.credential)) {
      await this.renewed(found.entry);
      const entry = found.entry;
      found = this.find(prefix, entry);
      if (found === undefined)
        throw new IcebergVendedCredentialsError(entry.table, `the REST catalog renewed the table's storage credentials without any for ${prefix}`);
    }
    if (found === undefined) throw new Error(`no vended storage credentials cover ${prefix}`);
    return found.credential.config;
  }

  private find(location: string, only?: TableCredentials): { entry: TableCredentials; credential: StorageCredential } | undefined {
    let best: { entry: TableCredentials; credential: StorageCredential } | undefined;
    for (const entry of only ? [only] : this.tables.values())
      for (const credential of entry.credentials)
        if (covers(credential.prefix, location) && (best === undefined || credential.prefix.length > best.credential.prefix.length))
          best = { entry, credential };
    return best;
  }

  private due(entry: TableCredentials, credential: StorageCredential): boolean {
    const expires = expiresAtMs(credential);
    if (expires === undefined) return false;
    const life = Math.max(0, expires - entry.receivedAtMs);
    return this.now() >= expires - Math.min(RENEW_MARGIN_MS, life / 4);
  }

  /** One renewal at a time per table: the requests waiting on it share its answer. */
  private renewed(entry: TableCredentials): Promise<void> {
    entry.renewing ??= (async () => {
      try {
        const credentials = await entry.renew();
        if (credentials.length === 0)
          throw new IcebergVendedCredentialsError(entry.table, 'the REST catalog answered the renewal of its storage credentials with none');
        entry.credentials = credentials;
        entry.receivedAtMs = this.now();
      } catch (error) {
        // The catalog's refusal keeps its own code (iceberg_catalog_auth_failed, iceberg_catalog_failed).
        if (error instanceof TilehouseError) throw error;
        throw new IcebergVendedCredentialsError(entry.table, `renewing the storage credentials the REST catalog vended failed: ${(error as Error).message}`, {
          cause: error,
        });
      } finally {
        entry.renewing = undefined;
      }
    })();
    return entry.renewing;
  }
}

/** Whether the files below `prefix` include `location` (`s3://b/t` covers `s3://b/t/data/x`, never `s3://b/t2/…`), each in table-files.ts's one spelling. */
function covers(prefix: string, location: string): boolean {
  let base: string;
  try {
    base = fileKeyOf(prefix).replace(/\/+$/, '');
  } catch {
    // A prefix that is no location (relative, another scheme's spelling) covers nothing.
    return false;
  }
  const file = fileKeyOf(location);
  return file === base || file.startsWith(`${base}/`);
}
