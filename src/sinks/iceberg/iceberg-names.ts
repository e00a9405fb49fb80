import { fileURLToPath } from 'node:url';
import type { IcebergDefaults } from '../../config/environment-schema.js';
import type { LineageDatasetName } from '../lineage-dataset-name.js';
import type { TableIdentifier } from './catalog.js';

/**
 * How an iceberg sink names its table, where a new table goes, and the table as an OpenLineage
 * dataset: pure, importing no catalog, so the descriptor (loaded in every run) can use it.
 */

/** `namespace.table` as the job file writes it (the schema checked its shape). */
export function tableIdentifierOf(table: string): TableIdentifier {
  const [namespace, name] = table.split('.');
  return { namespace: namespace!, name: name! };
}

/** The warehouse root as a URI: an absolute directory becomes `file:///…`, as Java and pyiceberg write it. */
export function warehouseUri(location: string): string {
  return location.startsWith('/') ? `file://${location}` : location.replace(/\/+$/, '');
}

/** Where a new table is created: `<location>/<namespace>/<table>`, as Java's catalogs lay a warehouse out. */
export function newTableLocation(settings: Pick<IcebergDefaults, 'location'>, table: TableIdentifier): string {
  return `${warehouseUri(settings.location)}/${table.namespace}/${table.name}`;
}

/**
 * The table as an OpenLineage dataset. The naming spec has no entry of its own for Iceberg; its
 * readers' integrations (Spark's) name a table by where it is, as the spec names a location: a
 * local directory `file` / its path, `s3://bucket` / key, `gs://bucket` / key. The catalog's name
 * for it (`namespace.table`) is what the summary and every view call the target.
 */
export function icebergLineageDataset(tableLocation: string): LineageDatasetName {
  if (tableLocation.startsWith('/')) return { namespace: 'file', name: tableLocation };
  if (tableLocation.startsWith('file:')) return { namespace: 'file', name: fileURLToPath(new URL(tableLocation)) };
  const url = new URL(tableLocation);
  return { namespace: `${url.protocol}//${url.host}`, name: url.pathname.replace(/^\/+/, '') };
}

/** `rest <uri>` or `jdbc <host>:<port>/<database> catalog <name>`, for lines that name the catalog (never a secret; a url's server is inside the secret). */
export function catalogDescription(settings: Pick<IcebergDefaults, 'catalog'>): string {
  const { catalog } = settings;
  if (catalog.type === 'rest') return `rest ${catalog.uri}${catalog.warehouse === undefined ? '' : ` warehouse ${catalog.warehouse}`}`;
  const server = catalog.host === undefined ? '(its url)' : `${catalog.host}:${catalog.port ?? 5432}/${catalog.database ?? ''}`;
  return `jdbc ${server} catalog ${catalog.catalogName}`;
}
