/** Queries the pipeline tests send to the sandbox's SANDBOX_TILE, and the jobs several tests run with them. */
import { SANDBOX_TILE } from '../../sandbox/index.js';

/** One row per incident: a number, a datetime, hard text (quotes, CR/LF, emoji, RTL) and a label. */
export const detailQuery = {
  items: [
    { header: 'Number', formula: '[incident.number]', dataType: 'number', order: 'asc', orderSequence: 0, filters: [] },
    { header: 'Created', formula: '[incident.created]', dataType: 'datetime', filters: [] },
    { header: 'Description', formula: '[incident.description]', dataType: 'text', filters: [] },
    { header: 'Severity', formula: '[incident.severity_label]', dataType: 'text', filters: [] },
  ],
  options: { pageNumber: 0, itemsPerPage: 50, ignoreRepeatedRows: false },
};

/** A job `incident_detail` exporting the detail query to one CSV file: the CLI tests' plainest job. */
export const detailCsvJob = { name: 'incident_detail', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }] };

/**
 * The detail query restricted to incidents numbered above 10·run: two runs that export
 * different rows, so an output mixing them shows (the concurrent-run tests).
 */
export function detailQueryOfRun(run: number) {
  return detailQueryAbove(10 * run);
}

/** The detail query restricted to incidents numbered above `above`: the same tile answering fewer rows (the publish-guard tests). */
export function detailQueryAbove(above: number) {
  const items = detailQuery.items.map((item, index) => (index === 0 ? { ...item, filters: [{ operator: 'gt', values: [String(above)] }] } : item));
  return { ...detailQuery, items };
}

/** The day an incident was created, over the last 30 days: the tile's own window, which a backfill replaces per window. */
const createdDayItem = {
  header: 'Day',
  ref: 'day',
  formula: '[incident.created]',
  dataType: 'datetime',
  function: 'date',
  format: 'year_month_number_day_number_hyphen',
  filters: [{ operator: 'rw', values: ['30', 'days', '0', 'days'], beforeAggregate: true }],
};

/** Incidents per day and severity over the last 30 days: the shape of a tile a backfill windows by day. */
export const dailySeverityQuery = {
  items: [
    { ...createdDayItem, grouped: true, order: 'asc', orderSequence: 0 },
    { header: 'Severity', formula: '[incident.severity_label]', dataType: 'text', grouped: true, order: 'asc', orderSequence: 1, filters: [] },
    { header: 'Incidents', formula: '[incident.number]', dataType: 'number', aggregate: 'count', filters: [] },
  ],
  options: { pageNumber: 0, itemsPerPage: 50 },
};

/** A job that backfills dailySeverityQuery into CSV files, a day per window. */
export const dailyCsvBackfillJob = {
  name: 'daily',
  tile: SANDBOX_TILE,
  query: dailySeverityQuery,
  sinks: [{ type: 'csv' }],
  columns: { Day: { type: 'DATE' } },
  backfill: { item: 'day', bucketColumn: 'Day' },
};

/** Incidents per day over the last 30 days (the daily query without the severity split). */
export const dailyQuery = { ...dailySeverityQuery, items: dailySeverityQuery.items.filter((item) => item.header !== 'Severity') };

/**
 * One row per incident (its number, the day it was created, its severity), the day the bucket a
 * window filters: the shape of a tile an incremental or merge job exports.
 */
export const incidentDaysQuery = {
  items: [
    { header: 'Number', formula: '[incident.number]', dataType: 'number', order: 'asc', orderSequence: 0, filters: [] },
    createdDayItem,
    { header: 'Severity', formula: '[incident.severity_label]', dataType: 'text', filters: [] },
  ],
  options: { pageNumber: 0, itemsPerPage: 50 },
};

/**
 * A job `daily` exporting the daily severity query to CSV with manifests, incremental by day
 * (lookback 0 unless `incremental` says otherwise): the windowed CLI tests' job.
 */
export function dailyManifestJob(incremental: Record<string, unknown>) {
  return {
    name: 'daily',
    tile: SANDBOX_TILE,
    query: dailySeverityQuery,
    sinks: [{ type: 'csv', manifest: true }],
    columns: { Day: { type: 'DATE' }, Incidents: { type: 'INT64' } },
    incremental: { item: 'day', bucketColumn: 'Day', lookbackDays: 0, ...incremental },
  };
}
