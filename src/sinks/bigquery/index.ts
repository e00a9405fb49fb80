// src/sinks/bigquery/, module by module (ARCHITECTURE.md gives the folder one paragraph):
// `bigquery-sink.ts` (`BigQuerySink`: the plan of a run, `bigquery-plan.ts`) and `bigquery-writer.ts` (its two
// phases, calling `publish-strategies.ts` and `row-count-check.ts`): rows → an NDJSON temp file
// (`ndjson-file.ts`, owner-tagged and swept; `encode-row.ts` + `encode-value.ts`, with the lineage columns of
// `append`, `lineage.ts`) → prepare: the dataset made sure of (`ensure-dataset.ts`), the target read
// (`read-table-schema.ts`, `inspect-target.ts`), a per-run staging table (`staging-table.ts`, expiring a day
// ahead) loaded in one job (`staging-load.ts`, `upload-load-file.ts`: a multipart jobs.insert), the row count
// checked, for `merge` the keys (`merge-key.ts`, `check-staging-keys.ts`) → publish: `ready-target.ts` (the
// target made able to take it), then `publish-strategies.ts`: one copy, one copy per partition (`partitionBy`,
// `partition-date.ts`), a WRITE_TRUNCATE_DATA query (replace keeps the table's metadata) or one MERGE
// (`merge-statement.ts`); `row-count-check.ts` (the rows a publish wrote, from BigQuery's counts, else the
// target's count after an adopted publish, else the load's, less expired partitions' rows);
// `partition-range.ts` (the run's partition range, which every statement reading a column-partitioned target
// carries for `require_partition_filter`, and which partitions the table's expiration has passed);
// `bigquery-client.ts` (the one client: ADC, or the emulator `BIGQUERY_EMULATOR_HOST` names), `table-name.ts`
// (the one name of a table, `project.dataset.table`, and of its dataset: `tableName`, `datasetName`,
// `configuredTable` for a sink's table before a run resolves its project; nothing parses a name back, the run
// ledger's recorder matches the names its job's tables give), `job-id.ts` (deterministic job ids, so a retried
// insert finds its job), `job-labels.ts`, `table-layout.ts` (partitioning, clustering), `schema-contract.ts`
// (the tile's columns against the table's), `table-operations.ts` (the daily table operations for `plan`);
// `run-job.ts` (one BigQuery job inserted under its id, watched with backoff to its end or its deadline, tried
// again when it failed transiently), `retry.ts` (BigQuery's classifier for the one retry loop of
// `src/retry.ts`, and the request deadline), `api-failure.ts` (what a failed call or job said, either shape)
// and `bigquery-errors.ts` (`bigquery_*` errors), `index.ts` (its public surface, for the tests); the run
// ledger (`run-ledger.ts`, appended after each tile's publish by `ledger-recorder.ts`, read back by
// `window-state.ts` and, for the publish guard's recent runs, by `target-holding.ts`: what a table or its
// replaced partitions hold, from metadata); `descriptor.ts` (what the registry knows of BigQuery)

/** The BigQuery sink's public surface. */
export { BigQuerySink } from './bigquery-sink.js';
