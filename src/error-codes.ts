/**
 * Every error code tilehouse reports, in one table: alert rules, orchestrators' retry rules and
 * runbooks key on these, so they are an interface. Each code says how the process exits when that
 * failure ends a command (`exit`: 1 a tile failed, 2 bad configuration or usage, 3 partially
 * published, `signal` the run was stopped and the process exits 130 / 143), whether running the
 * same command again unchanged may succeed (`retryable`: the cause may be transient), and one
 * sentence for the person on call. `TilehouseError.code` is typed by it, so a class with a code not
 * listed here does not compile; `docs/error-codes.md` is generated from it (`npm run docs:codes`).
 *
 * One failure has one code whatever the target: where it happened is told by the error's fields
 * (`targetKind`: one of TARGET_KINDS below; `format`: csv, parquet), which the run summary and the
 * log line carry next to the code. A code that replaced others lists them in `formerly` (alert
 * rules written for them must change; `docs/error-codes.md` has the table).
 *
 * A new code is one line here. Codes a class builds at run time are listed one by one (the OAuth
 * errors of the token endpoint).
 */
// biome-ignore format: one line per code, so that adding one is adding a line
export const ERROR_CODES = {
  // -- configuration and usage ---------------------------------------------------------------------
  config_invalid: { exit: 2, retryable: false, says: 'An environment or job file is invalid; the message names the file, line, field and value (never a secret\'s).' },
  usage_invalid: { exit: 2, retryable: false, says: 'The command line is wrong (an unknown flag, a missing value, flags that exclude each other); nothing ran.' },
  column_override_invalid: { exit: 2, retryable: false, says: "The job's `columns` section names a header the tile does not have, or a type its dataType cannot be read as." },
  backfill_resume_unsupported: { exit: 2, retryable: false, says: '`backfill --resume` for a job whose targets cannot tell a finished window (a file sink without `manifest: true`, the run ledger off).' },
  bigquery_project_unknown: { exit: 2, retryable: false, says: 'No project to run BigQuery jobs in: name one in the environment file or in Application Default Credentials.' },
  parquet_schema_invalid: { exit: 2, retryable: false, says: 'A Parquet sink was given a tile without visible columns, or unusable options; Parquet has no column-less file.' },
  path_invalid: { exit: 2, retryable: false, says: "A file sink's path template is unusable (an unknown placeholder, a path that leaves its directory, a bad bucket URL).", formerly: ['csv_path_invalid', 'parquet_path_invalid'] },
  lineage_config_invalid: { exit: 2, retryable: false, says: 'The OpenLineage settings (OPENLINEAGE_* variables, the OPENLINEAGE_CONFIG file) are invalid; the message names the variable or file and the field.' },

  // -- the token endpoint ----------------------------------------------------------------------------
  auth_invalid_client: { exit: 1, retryable: false, says: 'The token issuer refused the client id or secret (rotated or wrong): fix the credentials.' },
  auth_invalid_grant: { exit: 1, retryable: false, says: 'The token issuer refused the grant: check the credentials and the audience.' },
  auth_invalid_request: { exit: 1, retryable: false, says: 'The token issuer refused the request as malformed: check `source.authUrl` and the audience.' },
  auth_invalid_scope: { exit: 1, retryable: false, says: 'The token issuer refused the scope or audience asked for.' },
  auth_unauthorized_client: { exit: 1, retryable: false, says: 'The client may not use the client-credentials grant at this issuer.' },
  auth_unsupported_grant_type: { exit: 1, retryable: false, says: 'The token issuer does not offer the client-credentials grant.' },
  auth_refused: { exit: 1, retryable: false, says: "The token issuer refused with an OAuth error outside RFC 6749's list; the message quotes it." },
  auth_response_invalid: { exit: 1, retryable: true, says: 'The token endpoint answered something that is not a token (an HTML page, bad JSON, a 4xx without an OAuth error).' },

  // -- the source ------------------------------------------------------------------------------------
  source_redirect: { exit: 1, retryable: false, says: 'The source answered with a redirect, which is never followed (it would carry the token elsewhere): set `source.baseUrl` / `source.authUrl`.' },
  source_unreachable: { exit: 1, retryable: true, says: 'The network failed on every attempt the retry policy allowed.' },
  source_deadline_exceeded: { exit: 1, retryable: true, says: 'A request got no complete answer within `requestDeadlineMs` on every attempt.' },
  source_server_error: { exit: 1, retryable: true, says: 'The export or token endpoint answered 5xx on every attempt the retry policy allowed (a 501 or 505: at once): the server failed, the request was not refused.' },
  source_retry_after_too_long: { exit: 1, retryable: true, says: 'The source asked to wait longer (`Retry-After`) than this job waits; run again later.' },
  source_clock_unknown: { exit: 1, retryable: true, says: "The token answer had no usable `Date` header, so the source's today is unknown (or set `source.clock: local`)." },
  export_api_error: { exit: 1, retryable: false, says: "The export endpoint refused the query (a 4xx other than 401/429, or `ok: false`); the service's message is quoted." },
  export_response_invalid: { exit: 1, retryable: false, says: "A page is not the spec's shape (not JSON, an unknown encoding, invalid UTF-8, rows that do not fit the headers)." },
  export_body_corrupt: { exit: 1, retryable: true, says: 'A compressed page body could not be decoded on any attempt; the message names the encoding.' },
  export_page_mismatch: { exit: 1, retryable: true, says: "A page's row counts, totals or paging do not add up with the pages before it." },
  export_page_identity: { exit: 1, retryable: true, says: 'A page does not prove it is the page asked for (a cache keyed on the URL would do this).' },
  export_inconsistent: { exit: 1, retryable: true, says: 'The table kept changing during the export, also on a re-read from page 0.' },
  window_item_missing: { exit: 1, retryable: false, says: "A window's item names no item of the query, so a window would hold the tile's whole range." },

  // -- the rows --------------------------------------------------------------------------------------
  column_count_mismatch: { exit: 1, retryable: false, says: "A page's `headers` and `dataTypes` disagree on the number of columns." },
  value_invalid: { exit: 1, retryable: false, says: "A value does not parse as its column's type (`onInvalidValue: null` nulls and counts it instead)." },

  // -- a sink's target, whatever its kind (local, gs://, s3://, BigQuery): the kind and format are fields --
  disk_full: { exit: 1, retryable: true, says: 'The volume a file goes to is full; free space there.' },
  permission_denied: { exit: 1, retryable: false, says: "The run's user or identity may not write the target (a directory's mode, IAM, a PostgreSQL or Iceberg JDBC catalog table's grants); the message names what to grant.", formerly: ['gcs_permission_denied', 's3_permission_denied', 'bigquery_permission_denied'] },
  target_is_directory: { exit: 1, retryable: false, says: 'A directory stands where the output file should be (locally, or objects below `<target>/` in a bucket); remove it or change the path.', formerly: ['gcs_target_is_directory', 's3_target_is_directory'] },
  target_unwritable: { exit: 1, retryable: false, says: "A file sink's directory cannot hold files (a regular file stands in its path); found before anything was fetched.", formerly: ['csv_target_unwritable', 'parquet_target_unwritable'] },
  bucket_not_found: { exit: 1, retryable: false, says: 'The bucket does not exist (a typo, or another project, account or region these credentials cannot see).', formerly: ['gcs_bucket_not_found', 's3_bucket_not_found'] },
  write_failed: { exit: 1, retryable: true, says: "Writing, syncing or publishing a file or object failed otherwise (I/O, network, 5xx after retries, a checksum), or BigQuery's local load file; the message says what the target holds.", formerly: ['csv_write_failed', 'parquet_write_failed', 'gcs_write_failed', 's3_write_failed', 'bigquery_load_file_failed'] },
  target_unreadable: { exit: 1, retryable: false, says: "A file sink's existing target cannot be read as its format (a `.csv.gz` that is not gzip, a `.parquet` without a Parquet footer tilehouse reads); remove or replace it.", formerly: ['parquet_not_parquet', 'parquet_truncated', 'parquet_footer_invalid', 'parquet_column_unsupported'] },
  target_changed: { exit: 1, retryable: true, says: 'Another writer replaced the target object while this run wrote; this run published nothing rather than overwrite it.', formerly: ['gcs_target_changed', 's3_target_changed'] },
  publish_outcome_unknown: { exit: 1, retryable: true, says: 'A publish ended without an answer (a rewrite, a copy, BigQuery jobs cut off by a stop) and its outcome is unknown: look at the target before running again.', formerly: ['gcs_publish_outcome_unknown', 's3_publish_outcome_unknown', 'bigquery_publish_outcome_unknown'] },

  // -- Parquet files ---------------------------------------------------------------------------------
  parquet_value_invalid: { exit: 1, retryable: false, says: "A typed value does not fit its column's Parquet type (transform never makes one: a bug guard)." },

  // -- Google credentials (BigQuery and Cloud Storage) ----------------------------------------------
  google_credentials_unavailable: { exit: 1, retryable: true, says: 'No Google token could be had within `googleCredentialsWaitMs` (no ADC, an unreadable key file, the metadata server or token endpoint refusing); nothing was published.' },
  google_credentials_rejected: { exit: 1, retryable: false, says: "Google refused the run's identity (401 again after a fresh token, or a deleted key or service account)." },

  // -- AWS credentials (requests tilehouse signs itself with SigV4: an Iceberg REST catalog's) ---------
  aws_credentials_unavailable: { exit: 1, retryable: true, says: 'No AWS credentials could be had from the chain (environment, shared files and profile, web identity / IRSA, container or instance metadata) to sign requests with; nothing was committed.' },
  aws_signature_mismatch: { exit: 1, retryable: false, says: 'AWS computed another SigV4 signature than the request carried: the secret access key does not belong to the access key id, or the signing name or region is wrong; nothing was committed.' },
  aws_clock_skewed: { exit: 1, retryable: false, says: "AWS refused a signed request as more than 5 minutes away from its own time: this machine's clock is off (sync it with NTP); nothing was committed." },
  aws_credentials_expired: { exit: 1, retryable: false, says: 'AWS refused the session token as expired (temporary credentials given by hand, or a role session nobody renewed); nothing was committed.' },

  // -- BigQuery --------------------------------------------------------------------------------------
  bigquery_value_invalid: { exit: 1, retryable: false, says: 'A typed value BigQuery cannot take as it is (out of range, too precise).' },
  bigquery_schema_mismatch: { exit: 1, retryable: false, says: "The tile's columns break the table's schema contract; nothing was loaded." },
  bigquery_column_conflict: { exit: 1, retryable: false, says: 'A tile column takes a name the sink needs for itself (a lineage column in append mode).' },
  bigquery_load_failed: { exit: 1, retryable: true, says: 'The staging load was refused or could not start within the retry budget; the target is untouched.' },
  bigquery_publish_failed: { exit: 1, retryable: true, says: 'The copy onto the target was refused or could not start within the retry budget; the target keeps its content.' },
  bigquery_job_timeout: { exit: 1, retryable: true, says: 'A BigQuery job was not done when the wait ran out; it may still complete, the message says where to look.' },
  bigquery_load_file_missing: { exit: 1, retryable: true, says: "The run's load file was gone or unreadable when the load started." },
  bigquery_request_failed: { exit: 1, retryable: true, says: 'A BigQuery call (dataset, table metadata, job lookup) failed for good.' },
  bigquery_partition_column_invalid: { exit: 1, retryable: false, says: '`partitionBy` names a column the tile does not have, or one BigQuery cannot partition by.' },
  bigquery_cluster_column_invalid: { exit: 1, retryable: false, says: '`clusterBy` names a column the tile does not have, or one BigQuery cannot cluster by.' },
  bigquery_key_column_invalid: { exit: 1, retryable: false, says: '`primaryKey` or `latestBy` names a column the tile does not have, or one of a type a key cannot be.' },
  bigquery_partition_value_invalid: { exit: 1, retryable: false, says: "A row's partition value has no partition a copy can replace (null, or a date BigQuery leaves unpartitioned)." },
  bigquery_too_many_partitions: { exit: 1, retryable: false, says: 'One run would write more partitions than one BigQuery job may change.' },
  bigquery_windows_expired: { exit: 2, retryable: false, says: "A backfill's windows lie beyond the target table's partition expiration, so BigQuery would drop their rows at once (under `--strict`: any window); nothing ran." },
  bigquery_table_layout_mismatch: { exit: 1, retryable: false, says: "The existing table is partitioned or clustered unlike the job's configuration; BigQuery cannot change that in place." },
  bigquery_quota_exceeded: { exit: 1, retryable: true, says: 'BigQuery refused a job on a long-term quota; run again once the quota refills.' },
  bigquery_row_count_mismatch: { exit: 1, retryable: true, says: 'The staging table holds another number of rows than tilehouse sent; nothing was published.' },
  bigquery_duplicate_key: { exit: 1, retryable: false, says: '`writeMode: merge`: rows of one run share a primary key and `latestBy` does not choose between them.' },
  bigquery_null_key: { exit: 1, retryable: false, says: '`writeMode: merge`: a row has a null in a primary key column.' },

  // -- PostgreSQL (by SQLSTATE where the server says one) ----------------------------------------------
  postgres_connection_failed: { exit: 1, retryable: true, says: 'PostgreSQL could not be reached or the connection broke (refused, reset, a restart, TLS or a certificate) within `publishBudgetMs`, before any COMMIT; nothing was published.' },
  postgres_auth_failed: { exit: 1, retryable: false, says: 'PostgreSQL refused the user or password (SQLSTATE 28P01/28000): fix the credentials or pg_hba.conf.' },
  postgres_read_only: { exit: 1, retryable: true, says: 'The server is read-only (SQLSTATE 25006: a replica, or a primary being failed over); point the sink at the primary.' },
  postgres_statement_failed: { exit: 1, retryable: false, says: 'PostgreSQL refused a statement of the load or publish; the message quotes its SQLSTATE and text, and nothing was published.' },
  postgres_lock_timeout: { exit: 1, retryable: true, says: "The publish could not get the table's lock within `lockTimeoutMs` on any try of `publishBudgetMs` (a long transaction holds it); nothing was published." },
  postgres_schema_mismatch: { exit: 1, retryable: false, says: "The tile's columns break the table's schema contract (or a type differs); nothing was loaded." },
  postgres_column_invalid: { exit: 1, retryable: false, says: 'A column name is unusable in PostgreSQL (over 63 bytes, a lineage name), or `primaryKey`/`latestBy`/`partitionBy` names a column the tile lacks or of the wrong type.' },
  postgres_value_invalid: { exit: 1, retryable: false, says: "A typed value PostgreSQL cannot take as it is (a NUL character in text, outside a column type's range)." },
  postgres_duplicate_key: { exit: 1, retryable: false, says: '`writeMode: merge`: rows of one run share a primary key and `latestBy` does not choose between them; nothing was published.' },
  postgres_null_key: { exit: 1, retryable: false, says: '`writeMode: merge`: a row has a null in a primary key column; nothing was published.' },
  postgres_row_count_mismatch: { exit: 1, retryable: true, says: 'The staging table holds another number of rows than tilehouse sent; nothing was published.' },

  // -- runs, windows and state -----------------------------------------------------------------------
  iceberg_catalog_failed: { exit: 1, retryable: true, says: "The Iceberg catalog failed a request (a REST error answer, a JDBC statement, its database out of reach) for a cause other than privileges or credentials; nothing was committed." },
  iceberg_catalog_auth_failed: { exit: 1, retryable: false, says: "The Iceberg REST catalog, its OAuth2 token endpoint or the JDBC catalog's PostgreSQL (28P01/28000) refused the credentials; nothing was committed." },
  iceberg_vended_credentials_failed: { exit: 1, retryable: true, says: "`accessDelegation: vended-credentials`: the REST catalog's storage credentials for the Iceberg table were malformed, or its renewal of them when they expired mid-run held none; nothing was committed." },
  iceberg_commit_conflict: { exit: 1, retryable: true, says: "Other writers committed to the Iceberg table on every try of the commit's retry budget; nothing of this run was committed." },
  iceberg_schema_mismatch: { exit: 1, retryable: false, says: "The tile's columns break the Iceberg table's schema contract (a new column under `schema: freeze`, a removed or retyped one under either); nothing was committed." },
  iceberg_column_invalid: { exit: 1, retryable: false, says: "An iceberg sink's `partitionBy` or `primaryKey` names a column the tile lacks or of the wrong type (a partition column is DATE or TIMESTAMP, a key column not FLOAT64); nothing was written." },
  iceberg_metadata_invalid: { exit: 1, retryable: false, says: "The Iceberg table's metadata, manifest list or manifests could not be read as the table format specification says; nothing was committed." },
  iceberg_partition_mismatch: { exit: 1, retryable: false, says: "`writeMode: partition`: the Iceberg table is not partitioned by day on the job's partition column (or the column is not a DATE or TIMESTAMP); nothing was committed." },
  iceberg_value_invalid: { exit: 1, retryable: false, says: "`writeMode: partition`: a row's partition value has no day (null) or lies outside the run's window; nothing was committed." },
  iceberg_duplicate_key: { exit: 1, retryable: false, says: '`writeMode: merge`: rows of one run share a primary key and no `latestBy` chooses between them (or they tie on it too); nothing was committed.' },
  iceberg_null_key: { exit: 1, retryable: false, says: '`writeMode: merge`: a row has a null in a primary key column; nothing was committed.' },
  iceberg_data_file_unreadable: { exit: 1, retryable: false, says: "`writeMode: merge`: a data file of the Iceberg table that may hold the run's keys could not be read back to rewrite it (a layout this reader does not read, delete files); nothing was committed." },
  publish_guard_tripped: { exit: 1, retryable: false, says: 'A publish guard refused an export empty or far smaller than its target (or recent runs); nothing was published. `--allow-shrink` / `TILEHOUSE_ALLOW_SHRINK=1` publishes it.' },
  partially_published: { exit: 3, retryable: true, says: 'Some sinks hold the new run and others the previous one, or some partitions of one BigQuery table (the summary names each); run again.', formerly: ['bigquery_partially_published'] },
  run_id_already_published: { exit: 1, retryable: false, says: '`--strict`: a target already held a publish of this run id with other rows and kept it.' },
  run_id_unverified: {
    exit: 1,
    retryable: false,
    says: 'A re-run with a `--run-id` that a target cannot tell whether it holds (a file no manifest or run history record settles); nothing was published.',
  },
  run_stopped: { exit: 'signal', retryable: true, says: 'SIGTERM, SIGINT or the scheduler ended the run before it published; nothing partial was published.' },
  stop_deadline_passed: { exit: 'signal', retryable: true, says: 'The cleanup after a stop ran out of `stopDeadlineMs`; what was still pending was abandoned.' },
  incremental_state_unreadable: { exit: 1, retryable: true, says: "A target's state (the run ledger, a manifest) could not be read, so nothing was run on a guess." },
  incremental_state_ambiguous: { exit: 1, retryable: false, says: 'Two targets of one job are too far apart to tell which is right; the message says how to make them agree.' },
  backfill_bucket_missing: { exit: 1, retryable: false, says: "`backfill.bucketColumn` is not among the tile's headers, so a window's rows cannot be checked against it." },
  backfill_window_future: { exit: 1, retryable: true, says: "`--strict`: a window starts after today on the source's clock, so it was not run." },
  backfill_window_empty: { exit: 1, retryable: false, says: '`--strict`: every row of a window fell outside it, so it was not published.' },

  // -- the process -----------------------------------------------------------------------------------
  probe_record_write_failed: { exit: 1, retryable: true, says: '`probe --record`: the recording could not be written after the probe ran.' },
  history_unavailable: { exit: 1, retryable: true, says: "The run history (`history.location`) could not be written or read: a run logs it as a warning and keeps its outcome; `status` says so and exits 1." },
  summary_write_failed: { exit: 1, retryable: true, says: 'The run summary could not be written; a run that otherwise succeeded then exits 1.' },
  internal_error: { exit: 1, retryable: false, says: 'A bug in tilehouse (a writer or encoder used out of order, an unexpected throw): one line on the terminal, the stack with `--log-level debug`.', formerly: ['csv_writer_closed', 'parquet_writer_closed', 'parquet_encoder_closed', 'bigquery_sink_state'] },
} as const satisfies Record<string, ErrorCodeEntry>;

export interface ErrorCodeEntry {
  /** How the process exits when this failure ends a command; `signal`: 130 (SIGINT) or 143 (SIGTERM). */
  readonly exit: 1 | 2 | 3 | 'signal';
  /** Whether the same command, run again unchanged, may succeed. */
  readonly retryable: boolean;
  /** One sentence for the person on call. */
  readonly says: string;
  /** The codes this one replaced after 0.1.0 (one code per failure, whatever the target). */
  readonly formerly?: readonly string[];
}

export type ErrorCode = keyof typeof ERROR_CODES;

/**
 * Where a failure at a sink's target happened: its kind (the error's `targetKind`, the run
 * summary's enum): BigQuery, or the object store a file landed in (src/sinks/stores/: a new store
 * adds its name here).
 */
export const TARGET_KINDS = ['local', 'gcs', 's3', 'bigquery', 'postgres', 'iceberg'] as const;
export type TargetKind = (typeof TARGET_KINDS)[number];

/** The file formats, as an error's `format` names them. */
export type FileFormatName = 'csv' | 'parquet';

/** The OAuth errors of a token endpoint (RFC 6749 §5.2) that keep a code of their own; any other is `auth_refused`. */
export const OAUTH_ERRORS = ['invalid_request', 'invalid_client', 'invalid_grant', 'unauthorized_client', 'unsupported_grant_type', 'invalid_scope'] as const;

export function isErrorCode(value: string): value is ErrorCode {
  return Object.hasOwn(ERROR_CODES, value);
}
