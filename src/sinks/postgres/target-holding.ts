import type { TargetHolding } from '../publish-guard.js';
import type { SinkRunContext } from '../sink.js';
import type { PostgresConnection } from './connection-settings.js';
import { closeQuietly, connectPostgres, settled } from './postgres-client.js';
import { postgresFailure } from './postgres-errors.js';
import type { PostgresPlan } from './postgres-plan.js';
import { latestPublish, recentRuns } from './run-ledger.js';
import { quoteIdentifier } from './sql-names.js';
import { readTableColumns } from './table-columns.js';

/**
 * What the target holds, for the publish guard (publish-guard.ts): `replace` replaces the whole
 * table, counted exactly; `partition` the rows of the run's window when it has one (without one,
 * the days are known only from its rows: not judged); append and merge remove nothing. The
 * ledger's recent runs of the job, for the history rule.
 */
export async function postgresHolding(
  plan: PostgresPlan,
  connection: PostgresConnection,
  context: Pick<SinkRunContext, 'jobName'>,
  recent: number,
): Promise<TargetHolding> {
  const client = await connectPostgres(connection, { jobName: context.jobName, target: plan.target }, { connectTimeoutMs: 10_000 });
  try {
    const runs = await recentRuns(client, plan.schema, plan.target, context.jobName, recent);
    // The run the ledger says wrote the table, with its definition: a refusal says what changed since.
    const latest = await latestPublish(client, plan.schema, plan.target);
    const writtenBy = latest === undefined ? {} : { writtenBy: { runId: latest.runId, definition: latest.definition } };
    const history = { ...(runs.length > 0 ? { recentRuns: runs } : {}), ...writtenBy };
    if (plan.writeMode === 'append' || plan.writeMode === 'merge')
      return { target: plan.target, effect: 'add', rows: undefined, readFrom: 'run ledger', ...history };
    const exists = (await readTableColumns(client, plan.schema, plan.table)) !== undefined;
    if (!exists) return { target: plan.target, effect: 'replace', rows: undefined, readFrom: 'table', ...history };
    if (plan.writeMode === 'partition') {
      if (plan.window === undefined || plan.partition === undefined)
        return {
          target: plan.target,
          effect: 'replace',
          rows: undefined,
          readFrom: 'days',
          unreadable: 'the days a run replaces are known only from its rows',
          ...writtenBy,
        };
      const column = quoteIdentifier(plan.partition.column);
      const day = plan.partition.type === 'DATE' ? column : `(${column} AT TIME ZONE $3)::date`;
      const counted = await client.query<{ rows: string }>(
        `SELECT count(*)::text AS rows FROM ${plan.sqlTarget} WHERE ${day} >= $1::date AND ${day} < $2::date`,
        [plan.window.from, plan.window.to, ...(plan.partition.type === 'DATE' ? [] : [plan.timezone])],
      );
      return {
        target: plan.target,
        effect: 'replace',
        rows: Number(counted.rows[0]?.rows ?? 0),
        readFrom: `rows of ${plan.window.from}..${plan.window.to}`,
        ...history,
      };
    }
    const counted = await client.query<{ rows: string }>(`SELECT count(*)::text AS rows FROM ${plan.sqlTarget}`);
    return { target: plan.target, effect: 'replace', rows: Number(counted.rows[0]?.rows ?? 0), readFrom: 'count(*)', ...history };
  } catch (error) {
    // A server's refusal (42501 on the ledger: permission_denied naming it) or a lost connection, as the sink's error, never a bug's.
    throw postgresFailure(settled(client, error), { jobName: context.jobName, target: plan.target, step: 'reading what the table holds (publish guard)' });
  } finally {
    await closeQuietly(client);
  }
}
