import type pg from 'pg';
import { PostgresKeyError, PostgresValueError } from './postgres-errors.js';
import type { PostgresPlan } from './postgres-plan.js';
import { quoteIdentifier } from './sql-names.js';

/**
 * What prepare checks of the staging table before anything could be published, so that a publish
 * never fails on the rows themselves: merge's keys (no null, one row per key unless `latestBy`
 * chooses, and then no tie), and a partition column's values (no null; inside the window when
 * the run has one, since the publish replaces exactly the window's days).
 */
export async function checkStaging(client: pg.Client, plan: PostgresPlan, staging: string): Promise<void> {
  if (plan.merge) {
    const { keys, latestBy } = plan.merge;
    const nullKey = await client.query<Record<string, boolean>>(
      `SELECT ${keys.map((key) => `${quoteIdentifier(key)} IS NULL AS ${quoteIdentifier(key)}`).join(', ')} FROM ${staging}
        WHERE ${keys.map((key) => `${quoteIdentifier(key)} IS NULL`).join(' OR ')} LIMIT 1`,
    );
    const first = nullKey.rows[0];
    if (first !== undefined) throw new PostgresKeyError(plan.jobName, plan.target, 'null', keys.find((key) => first[key] === true) ?? keys[0]!, keys);
    const grouped = [...keys, ...(latestBy ? [latestBy] : [])].map(quoteIdentifier).join(', ');
    const duplicate = await client.query<{ key: string }>(
      `SELECT row(${keys.map(quoteIdentifier).join(', ')})::text AS key FROM ${staging} GROUP BY ${grouped} HAVING count(*) > 1 LIMIT 1`,
    );
    if (duplicate.rows[0] !== undefined) throw new PostgresKeyError(plan.jobName, plan.target, 'duplicate', duplicate.rows[0].key, keys);
  }
  if (plan.partition) {
    const column = quoteIdentifier(plan.partition.column);
    const nulls = await client.query(`SELECT 1 FROM ${staging} WHERE ${column} IS NULL LIMIT 1`);
    if ((nulls.rowCount ?? 0) > 0)
      throw new PostgresValueError(plan.partition.column, 'null', 'has no day, so writeMode: partition could not replace it on a later run');
    if (plan.window) {
      const day = plan.partition.type === 'DATE' ? column : `(${column} AT TIME ZONE $3)::date`;
      const outside = await client.query<{ day: string }>(`SELECT ${day}::text AS day FROM ${staging} WHERE ${day} < $1::date OR ${day} >= $2::date LIMIT 1`, [
        plan.window.from,
        plan.window.to,
        ...(plan.partition.type === 'DATE' ? [] : [plan.timezone]),
      ]);
      const found = outside.rows[0];
      if (found !== undefined)
        throw new PostgresValueError(
          plan.partition.column,
          found.day,
          `lies outside the run's window ${plan.window.from}..${plan.window.to}, whose days alone a partition publish replaces`,
        );
    }
  }
}
