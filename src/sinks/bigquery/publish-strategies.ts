// The four ways publish makes a run visible (copy, partition copies, truncate-data query, MERGE): its own module so that bigquery-writer.ts keeps only the two phases that call it.
import type { BigQuery, JobMetadata } from '@google-cloud/bigquery';
import type { SinkRunContext } from '../sink.js';
import type { BigQueryPlan } from './bigquery-plan.js';
import { BigQueryPartiallyPublishedError } from './bigquery-errors.js';
import type { TargetInspection } from './inspect-target.js';
import { mergeStatement, mergeTargetFilter, quoteIdentifier } from './merge-statement.js';
import type { PartitionRange } from './partition-range.js';
import type { RetryContext } from './retry.js';
import { runJob, type JobOutcome, type JobPolling, type JobRequest } from './run-job.js';
import { standardType } from './schema-contract.js';
import type { StagingTable } from './staging-table.js';
import { tableName } from './table-name.js';

/** How publish made the run visible, for the summary. */
export type PublishedBy = 'copy' | 'truncate-data query' | 'partition copies' | 'merge query';

/** What prepare found of the target, as the publish jobs need it. */
type PreparedTarget = Pick<TargetInspection, 'decision' | 'existing' | 'location' | 'partitioning'> & { range: PartitionRange | undefined };

export interface PublishRequest {
  client: BigQuery;
  plan: BigQueryPlan;
  staging: StagingTable;
  /** The writer's name of its target (the destination table, a partition decorator included). */
  target: string;
  context: SinkRunContext;
  polling: JobPolling;
  prepared: PreparedTarget;
  /** The partition ids the run's rows fall in (`partitionBy`). */
  partitions: readonly string[];
  /** Not the stop signal, the cleanup's deadline (see BigQueryWriter). */
  retry: RetryContext;
  /** Every publish job insert sent (answered or not), recorded before it is sent. */
  sentJobIds: string[];
}

/**
 * The jobs that make the run visible, by write mode:
 *
 * - `partitionBy` + `replace`: one copy per partition the rows fall in, `staging$p` onto
 *   `table$p` with WRITE_TRUNCATE. Each copy is atomic and replaces exactly its partition; the
 *   set is not (BigQuery has no multi-destination copy): a failure after the first copy is
 *   `partially_published`, naming the partitions on each side. A run without rows
 *   replaces no partition.
 * - `replace` of an existing table: a query job `SELECT … FROM staging` onto the table with
 *   WRITE_TRUNCATE_DATA, which replaces the rows in one atomic step but keeps the table's schema
 *   (column descriptions, policy tags), row access policies, labels and options. A copy job would
 *   be free, but its WRITE_TRUNCATE takes the source's schema and constraints, and copy jobs
 *   document no WRITE_TRUNCATE_DATA. The query is billed for the staging table's bytes.
 * - `merge`: one MERGE statement from the staging table into the table by `primaryKey` (see
 *   mergeStatement), onto a new table too (readyTarget created it): one path for both. The
 *   statement is atomic; on a partitioned target it matches over the whole table unless the
 *   partition column is part of the key (see mergeTargetFilter).
 * - otherwise one copy: WRITE_TRUNCATE onto a new table or one day partition (`partition`),
 *   WRITE_APPEND in `append` mode.
 */
export async function publishJobs(request: PublishRequest): Promise<{ by: PublishedBy; jobs: JobOutcome[] }> {
  const { plan, staging, prepared } = request;
  const reference = (tableId: string) => ({ projectId: plan.projectId, datasetId: plan.datasetId, tableId });

  if (plan.merge) {
    const filter = mergeTargetFilter(plan.merge, prepared.partitioning, prepared.range, (column) => columnTypeOf(plan, prepared, column));
    const statement = mergeStatement(tableName(plan), tableName({ ...plan, tableId: staging.tableId }), plan.fields, plan.merge, filter);
    // A DML query: no destination table or dispositions. Its id is the run's `publish` id like
    // the other modes', so a retried publish adopts the statement that ran instead of merging twice.
    const job = await runPublishJob(request, 'publish', request.target, 'query', { query: { query: statement, useLegacySql: false } });
    return { by: 'merge query', jobs: [job] };
  }

  if (plan.layout.partition && plan.writeMode === 'replace') {
    const ids = [...request.partitions].sort();
    const jobs: JobOutcome[] = [];
    for (const id of ids) {
      try {
        jobs.push(
          await runPublishJob(request, `publish_${id}`, tableName({ ...plan, tableId: `${plan.tableId}$${id}` }), 'copy', {
            copy: {
              sourceTable: reference(`${staging.tableId}$${id}`),
              destinationTable: reference(`${plan.tableId}$${id}`),
              createDisposition: 'CREATE_NEVER',
              writeDisposition: 'WRITE_TRUNCATE',
            },
          }),
        );
      } catch (error) {
        if (jobs.length === 0) throw error;
        throw new BigQueryPartiallyPublishedError(request.context.jobName, request.target, ids.slice(0, jobs.length), ids.slice(jobs.length), error);
      }
    }
    return { by: 'partition copies', jobs };
  }

  if (plan.writeMode === 'replace' && prepared.decision.action !== 'created') {
    const query = truncateDataQuery(plan, prepared, tableName({ ...plan, tableId: staging.tableId }));
    const job = await runPublishJob(request, 'publish', request.target, 'query', {
      query: {
        query,
        useLegacySql: false,
        destinationTable: reference(plan.tableId),
        createDisposition: 'CREATE_NEVER',
        writeDisposition: 'WRITE_TRUNCATE_DATA',
      },
    });
    return { by: 'truncate-data query', jobs: [job] };
  }

  const job = await runPublishJob(request, 'publish', request.target, 'copy', {
    copy: {
      sourceTable: reference(staging.tableId),
      destinationTable: reference(plan.destinationTableId),
      // readyTarget created a missing target; the copy never creates one.
      createDisposition: 'CREATE_NEVER',
      writeDisposition: plan.writeMode === 'append' ? 'WRITE_APPEND' : 'WRITE_TRUNCATE',
    },
  });
  return { by: 'copy', jobs: [job] };
}

async function runPublishJob(
  request: PublishRequest,
  stage: JobRequest['stage'],
  target: string,
  kind: 'copy' | 'query',
  configuration: Record<string, unknown>,
): Promise<JobOutcome> {
  const { client, plan, context, polling, prepared, retry, sentJobIds } = request;
  const outcome = await runJob({
    client,
    projectId: plan.projectId,
    stage,
    kind,

    identity: plan.identity,
    location: prepared.location,
    insert: async (jobId) => {
      // Recorded before it is sent: an insert whose answer the stop deadline cut may have run.
      if (!sentJobIds.includes(jobId)) sentJobIds.push(jobId);
      const [job] = await client.createJob({
        jobId,
        ...(prepared.location ? { location: prepared.location } : {}),
        configuration: { ...configuration, labels: plan.labels },
      });
      return job.metadata as JobMetadata;
    },
    jobName: context.jobName,
    target,
    retry,
    polling,
  });
  if (outcome.adopted) {
    context.logger.info({ jobId: outcome.jobId, target }, 'this run id was already published by that job; not publishing again');
  }
  return outcome;
}

/**
 * The query that replaces the table's rows with the staging table's: the table's own columns in
 * its own order (WRITE_TRUNCATE_DATA keeps its schema), each from the run's column of that name;
 * a column the run does not write (a lineage column left from append mode) becomes NULL.
 */
function truncateDataQuery(plan: BigQueryPlan, prepared: PreparedTarget, staging: string): string {
  const runFields = new Map(plan.fields.map((field) => [field.name.toLowerCase(), field]));
  const tableFields = [...(prepared.existing ?? []).map((field) => ({ name: field.name ?? '', type: standardType(field.type ?? 'STRING') }))];
  if (prepared.decision.action === 'added') tableFields.push(...prepared.decision.columns);
  const quote = quoteIdentifier;
  const columns = tableFields.map((field) => {
    const run = runFields.get(field.name.toLowerCase());
    return run ? `${quote(run.name)} AS ${quote(field.name)}` : `CAST(NULL AS ${field.type}) AS ${quote(field.name)}`;
  });
  return `SELECT ${columns.join(', ')} FROM ${quote(staging)}`;
}

/** A column's standard type, from the table's schema (a column the run does not write) or the run's. */
function columnTypeOf(plan: BigQueryPlan, prepared: PreparedTarget, column: string): string | undefined {
  const wanted = column.toLowerCase();
  const existing = (prepared.existing ?? []).find((field) => field.name?.toLowerCase() === wanted);
  if (existing?.type) return standardType(existing.type);
  return plan.fields.find((field) => field.name.toLowerCase() === wanted)?.type;
}
