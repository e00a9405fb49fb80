import type { ErrorCode } from '../../error-codes.js';
import { messageOf, TilehouseError, withoutJob } from '../../errors.js';
import type { PartialPublishFailure } from '../sink.js';
import type { SchemaDiff } from './schema-contract.js';
import { describeSchemaDiff } from './schema-contract.js';
import { countNoun } from '../../count-noun.js';
import { googleCredentialsFailureIn, type GoogleCredentialsError } from '../google/credential-errors.js';

/**
 * A BigQuery call that failed for good: its own code, unless what failed was the run's Google
 * identity (no token, or Google refusing it): that code names the fix, and the same identity
 * fails every Google sink alike.
 */
abstract class BigQueryCallError<Own extends ErrorCode> extends TilehouseError {
  readonly code: Own | GoogleCredentialsError['code'];
  override readonly targetKind = 'bigquery';

  constructor(own: Own, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = googleCredentialsFailureIn(options?.cause)?.code ?? own;
  }
}

/** A typed value BigQuery cannot take as it is (out of range, too precise, wrong JavaScript type). */
export class BigQueryValueError extends TilehouseError {
  readonly code = 'bigquery_value_invalid';

  constructor(
    readonly column: string,
    readonly value: string,
    reason: string,
  ) {
    super(`column ${column}: value ${value} ${reason}`);
  }
}

/**
 * The tile's columns break the table's schema contract. Raised before anything is loaded, so the
 * table keeps its previous content.
 */
export class BigQuerySchemaMismatchError extends TilehouseError {
  readonly code = 'bigquery_schema_mismatch';

  constructor(
    readonly jobName: string,
    readonly table: string,
    readonly contract: 'freeze' | 'add',
    readonly diff: SchemaDiff,
    hint: string,
  ) {
    super(`job ${jobName}: columns no longer match table ${table} (schema: ${contract}): ${describeSchemaDiff(diff)}. ${hint}`);
  }
}

/** A tile column takes a name the sink needs for itself (a lineage column in append mode). */
export class BigQueryColumnConflictError extends TilehouseError {
  readonly code = 'bigquery_column_conflict';

  constructor(
    readonly jobName: string,
    readonly table: string,
    readonly column: string,
  ) {
    super(
      `job ${jobName}: column ${column} clashes with the lineage column of that name that append and merge modes add to ${table}; rename the header or use another write mode`,
    );
  }
}

/**
 * The staging load (prepare) ran and BigQuery refused it, or it could not be started within the
 * retry budget. The target is untouched: a load only ever writes the run's staging table.
 */
export class BigQueryLoadError extends BigQueryCallError<'bigquery_load_failed'> {
  constructor(
    readonly jobName: string,
    readonly table: string,
    readonly jobId: string,
    readonly errorMessages: readonly string[],
    options?: { cause?: unknown },
  ) {
    super('bigquery_load_failed', `job ${jobName}: load job ${jobId} into ${table} failed: ${firstMessages(errorMessages)}`, options);
  }
}

/**
 * The copy (or truncating query) from the staging table onto the target (publish) was refused, or
 * could not be started within the retry budget. BigQuery applies a failed job not at all: the
 * target keeps its content.
 */
export class BigQueryPublishError extends BigQueryCallError<'bigquery_publish_failed'> {
  constructor(
    readonly jobName: string,
    readonly table: string,
    readonly jobId: string,
    readonly errorMessages: readonly string[],
    options?: { cause?: unknown },
    kind: 'copy' | 'query' = 'copy',
  ) {
    super('bigquery_publish_failed', `job ${jobName}: ${kind} job ${jobId} onto ${table} failed: ${firstMessages(errorMessages)}`, options);
  }
}

/**
 * A job still was not done when the polling policy's wait ran out. Its outcome is unknown: a
 * copy may still complete, so the message says where to look.
 */
export class BigQueryJobTimeoutError extends TilehouseError {
  readonly code = 'bigquery_job_timeout';

  constructor(
    readonly jobName: string,
    readonly kind: 'load' | 'copy' | 'query',
    readonly jobId: string,
    readonly table: string,
    waitedMs: number,
  ) {
    super(
      `job ${jobName}: ${kind} job ${jobId} for ${table} was not done after ${Math.round(waitedMs / 1000)} s; ` +
        (kind !== 'load' ? 'it may still complete: check the job and the table before re-running' : 'the target was not changed'),
    );
  }
}

/** The run's NDJSON load file is gone or unreadable when the load starts (a sweep, a full disk). */
export class BigQueryLoadFileError extends TilehouseError {
  readonly code = 'bigquery_load_file_missing';

  constructor(
    readonly jobName: string,
    readonly path: string,
    options?: { cause?: unknown },
  ) {
    super(`job ${jobName}: cannot read the load file ${path}: ${messageOf(options?.cause)}; nothing was loaded`, options);
  }
}

/**
 * No project to run BigQuery jobs in: the environment config names none, and Application Default
 * Credentials know none either. Configuration, not the data: exit 2.
 */
export class BigQueryProjectUnknownError extends TilehouseError {
  readonly code = 'bigquery_project_unknown';

  constructor(
    readonly jobName: string,
    options?: { cause?: unknown },
  ) {
    super(
      `job ${jobName}: no BigQuery project: set sinks.bigquery.projectId in the environment config, ` +
        'or run "gcloud auth application-default login" (Workload Identity in a cluster)',
      options,
    );
  }
}

/** Any other BigQuery call (dataset, table metadata, job lookup) that failed for good. */
export class BigQueryRequestError extends BigQueryCallError<'bigquery_request_failed'> {
  constructor(
    readonly jobName: string,
    readonly operation: string,
    readonly errorMessages: readonly string[],
    options?: { cause?: unknown },
  ) {
    super('bigquery_request_failed', `job ${jobName}: ${operation} failed: ${firstMessages(errorMessages)}`, options);
  }
}

/**
 * `partitionBy`, `clusterBy`, `primaryKey` or `latestBy` names a column the tile does not have, or
 * one of a type BigQuery cannot partition or cluster by. Found when the columns are known (plan,
 * and every run before anything is loaded).
 */
export class BigQueryLayoutError extends TilehouseError {
  /** e.g. `partitionBy.column`, `clusterBy[1]`. */
  readonly field: string;

  constructor(
    readonly code: 'bigquery_partition_column_invalid' | 'bigquery_cluster_column_invalid' | 'bigquery_key_column_invalid',
    where: { jobName: string; sink: string },
    /** The field's path within the sink's config, e.g. `['clusterBy', 1]` (for `validate`'s file:line). */
    readonly path: readonly (string | number)[],
    readonly value: string,
    readonly reason: string,
  ) {
    const field = path.map((key, index) => (typeof key === 'number' ? `[${key}]` : index === 0 ? key : `.${key}`)).join('');
    super(`job ${where.jobName}: sink ${where.sink}: ${field} = ${JSON.stringify(value)}: ${reason}`);
    this.field = field;
  }
}

/** A row's partition value has no partition a copy can replace (null, or a date BigQuery leaves unpartitioned). */
export class BigQueryPartitionValueError extends TilehouseError {
  readonly code = 'bigquery_partition_value_invalid';

  constructor(
    readonly jobName: string,
    readonly column: string,
    readonly value: string,
    reason: string,
  ) {
    super(`job ${jobName}: partition column ${column}: value ${value} ${reason}; nothing was loaded`);
  }
}

/** One run would write more partitions than one BigQuery job may modify. */
export class BigQueryTooManyPartitionsError extends TilehouseError {
  readonly code = 'bigquery_too_many_partitions';

  constructor(
    readonly jobName: string,
    readonly table: string,
    readonly partitions: number,
    limit: number,
  ) {
    super(
      `job ${jobName}: the run's rows fall in ${countNoun(partitions, 'partition')} of ${table}; BigQuery lets one job modify at most ${limit}. Split it into backfill windows; nothing was loaded`,
    );
  }
}

/** The existing table is partitioned differently from the job's configuration; BigQuery cannot change that in place. */
export class BigQueryTableLayoutMismatchError extends TilehouseError {
  readonly code = 'bigquery_table_layout_mismatch';

  constructor(
    readonly jobName: string,
    readonly table: string,
    readonly existing: string,
    readonly configured: string,
  ) {
    super(
      `job ${jobName}: table ${table} is ${existing}, the job asks for ${configured}; partitioning cannot be changed on an existing table. ` +
        'Re-create the table (e.g. CREATE TABLE ... PARTITION BY ... AS SELECT) or change the job. Nothing was loaded.',
    );
  }
}

/**
 * BigQuery refused a job with quotaExceeded: a long-term limit (e.g. table operations per table per
 * day) that a retry within this run cannot cure, so the run fails at once instead of spending more
 * attempts, which would count against the same quota.
 */
export class BigQueryQuotaExceededError extends TilehouseError {
  readonly code = 'bigquery_quota_exceeded';

  constructor(
    readonly jobName: string,
    readonly kind: 'load' | 'copy' | 'query',
    readonly jobId: string,
    readonly table: string,
    readonly errorMessages: readonly string[],
  ) {
    super(
      `job ${jobName}: BigQuery refused ${kind} job ${jobId} for ${table}: quota exceeded: ${firstMessages(errorMessages)}. ` +
        'Not retried: this quota refills over hours (see `tilehouse plan` for the table operations a day this job needs)',
    );
  }
}

/** BigQuery's staging load holds another number of rows than tilehouse sent; nothing is published. */
export class BigQueryRowCountMismatchError extends TilehouseError {
  readonly code = 'bigquery_row_count_mismatch';

  constructor(
    readonly jobName: string,
    readonly table: string,
    readonly jobId: string,
    readonly sentRows: number,
    readonly bigqueryRows: number,
  ) {
    super(`job ${jobName}: load job ${jobId} into ${table} reports ${countNoun(bigqueryRows, 'row')}, tilehouse sent ${sentRows}; nothing was published`);
  }
}

/**
 * A run that replaces several partitions copied some of them and then failed: those partitions
 * hold the new run, the others the previous one. A re-run replaces them all again.
 */
export class BigQueryPartiallyPublishedError extends TilehouseError implements PartialPublishFailure {
  readonly code = 'partially_published';
  /** The table changed in part: the run is partially published even if this sink published first. */
  readonly partialPublish = true;

  constructor(
    readonly jobName: string,
    readonly table: string,
    readonly published: readonly string[],
    readonly unpublished: readonly string[],
    cause: unknown,
  ) {
    super(
      `job ${jobName}: ${table}: partitions ${published.join(', ')} hold the new run, ${unpublished.join(', ')} still the previous one ` +
        `(${cause instanceof TilehouseError ? `${cause.code}: ` : ''}${withoutJob(jobName, messageOf(cause))}); re-run to replace them all`,
      { cause },
    );
  }
}

/** The pipeline used a writer out of order (rows after prepare, publish before prepare): a bug, not data (`internal_error`). */
export class BigQuerySinkStateError extends TilehouseError {
  readonly code = 'internal_error';
  override readonly targetKind = 'bigquery';
}

// Load errors can list thousands of bad rows; the first few say what went wrong.
const MAX_MESSAGES = 3;

function firstMessages(messages: readonly string[]): string {
  if (messages.length === 0) return 'no error message given';
  const shown = messages.slice(0, MAX_MESSAGES).join('; ');
  const more = messages.length - MAX_MESSAGES;
  return more > 0 ? `${shown} (and ${more} more)` : shown;
}

/**
 * `writeMode: merge`: rows of one run share a primary key and the job names no `latestBy` to
 * choose between them (or they tie on it too). Found in the staging table before publish: the
 * target is untouched.
 */
export class BigQueryDuplicateKeyError extends TilehouseError {
  readonly code = 'bigquery_duplicate_key';

  constructor(
    readonly jobName: string,
    readonly target: string,
    /** The key's columns, plus `latestBy`'s when rows tie on it. */
    readonly columns: readonly string[],
    /** Up to five key values (as BigQuery returns them, JSON-encoded), each with its row count. */
    readonly duplicates: readonly { values: readonly string[]; rows: number }[],
    latestBy: string | undefined,
  ) {
    const shown = duplicates.map((duplicate) => `(${duplicate.values.join(', ')}) x${duplicate.rows}`).join('; ');
    const remedy = latestBy
      ? `they also have the same ${latestBy}, so latestBy cannot choose one`
      : 'set latestBy to the column whose highest value wins, or fix the source';
    super(
      `job ${jobName}: ${target}: rows with the same primary key (${columns.join(', ')}) in one run: ${shown}${duplicates.length === 5 ? ' (first 5)' : ''}; ${remedy}; nothing was published`,
    );
  }
}

/** `writeMode: merge`: a row of the run has a null in a primary key column. Found before publish. */
export class BigQueryNullKeyError extends TilehouseError {
  readonly code = 'bigquery_null_key';

  constructor(
    readonly jobName: string,
    readonly target: string,
    readonly columns: readonly string[],
    readonly rows: number,
  ) {
    super(
      `job ${jobName}: ${target}: ${countNoun(rows, 'row')} ${rows === 1 ? 'has' : 'have'} a null in the primary key (${columns.join(', ')}), which cannot identify a row; nothing was published`,
    );
  }
}

/**
 * The run was stopped while its publish jobs ran, and the cleanup's deadline (`stopDeadlineMs`)
 * passed before BigQuery said how they ended. They may still complete: the message names them
 * so that the operator looks before re-running. Kept as the tile's error after a stop (see
 * `publishOutcomeUnknown`), because "nothing was published" would not be known to be true.
 */
export class BigQueryPublishOutcomeUnknownError extends TilehouseError {
  readonly code = 'publish_outcome_unknown';
  override readonly targetKind = 'bigquery';
  readonly publishOutcomeUnknown = true as const;

  constructor(
    readonly jobName: string,
    readonly table: string,
    readonly jobIds: readonly string[],
    cause: unknown,
  ) {
    super(
      `job ${jobName}: stopped while publishing ${table}; no answer about publish job ${jobIds.join(', ') || '(not yet sent)'} before the stop deadline. ` +
        `It may still complete: look at the job (bq show -j) and the table before re-running with the same --run-id`,
      { cause },
    );
  }
}

/**
 * A backfill whose windows lie beyond the target's partition expiration: BigQuery would drop
 * their rows at once, so the backfill is refused before the first page (exit 2). All windows
 * beyond it, or (under `--strict`) any.
 */
export class BigQueryWindowsExpiredError extends TilehouseError {
  readonly code = 'bigquery_windows_expired';

  constructor(
    readonly jobName: string,
    readonly table: string,
    readonly expirationMs: number,
    readonly expired: readonly string[],
    readonly total: number,
    readonly firstKeptDay: string,
    strict: boolean,
  ) {
    const days = expirationMs / 86_400_000;
    const which = expired.length === total ? `all ${countNoun(total, 'window')}` : `${expired.length} of ${countNoun(total, 'window')} (--strict refuses any)`;
    const shown = expired.slice(0, 5).join(', ') + (expired.length > 5 ? ', …' : '');
    super(
      `job ${jobName}: ${which} of this backfill (${shown}) lie beyond the partition expiration of ${table} ` +
        `(timePartitioning.expirationMs = ${expirationMs}, ${days} days): BigQuery would drop their rows at once. ` +
        `Partitions from ${firstKeptDay} are kept; backfill from there${strict ? ' or leave --strict out' : ''}, or raise the table's expiration (partitionExpirationDays). Nothing was read or loaded.`,
    );
  }
}

/**
 * The preflight's read of the target's dataset was refused (403): the run's identity may not use
 * the dataset. Found before the first page, naming the permission and the principal, so the grant
 * can be written from the message alone.
 */
export class BigQueryPermissionDeniedError extends TilehouseError {
  readonly code = 'permission_denied';
  override readonly targetKind = 'bigquery';

  constructor(
    readonly jobName: string,
    readonly dataset: string,
    readonly permission: string,
    readonly principal: string,
    errorMessages: readonly string[],
    options?: { cause?: unknown },
  ) {
    super(
      `job ${jobName}: ${principal} lacks ${permission} on dataset ${dataset} (grant roles/bigquery.dataEditor on the dataset and roles/bigquery.jobUser on the project; see docs/bigquery.md): ${firstMessages(errorMessages)}`,
      options,
    );
  }
}
