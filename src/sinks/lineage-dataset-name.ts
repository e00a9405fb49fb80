/**
 * An OpenLineage dataset's identity, as the spec's naming page gives it for the store a target is
 * in (`bigquery` / `project.dataset.table`, `gs://bucket` / key, `file` / path,
 * `postgres://host:port` / `database.schema.table`). A module of its own, importing nothing, so
 * that the sink contract, the writers and the stores name it alike without importing each other.
 */
export interface LineageDatasetName {
  namespace: string;
  name: string;
}
