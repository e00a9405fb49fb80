/**
 * The benchmark's tile: one row per incident of SANDBOX_TILE, with several columns of each API
 * dataType (number, datetime, text), nullable columns (postmortem fields), computed values and the
 * sandbox's hard strings (quotes, CR/LF, emoji, RTL) in Description.
 */
export const BENCH_TILE = 'sandbox-tile';
export const BENCH_JOB_NAME = 'bench_incidents';

export const BENCH_QUERY = {
  items: [
    { header: 'Number', formula: '[incident.number]', dataType: 'number', filters: [] },
    { header: 'Severity', formula: '[incident.severity]', dataType: 'number', filters: [] },
    { header: 'Impact minutes', formula: '[postmortem_custom.customer_impact_minutes]', dataType: 'number', filters: [] },
    { header: 'Impact hours', formula: '[postmortem_custom.customer_impact_minutes] / 60', dataType: 'number', filters: [] },
    { header: 'Created', formula: '[incident.created]', dataType: 'datetime', filters: [] },
    { header: 'Created day', formula: '[incident.created]', function: 'date', dataType: 'datetime', filters: [] },
    { header: 'Name', formula: '[incident.name]', dataType: 'text', filters: [] },
    { header: 'Status', formula: '[incident.status]', dataType: 'text', filters: [] },
    { header: 'Type', formula: '[incident.type]', dataType: 'text', filters: [] },
    { header: 'Description', formula: '[incident.description]', dataType: 'text', filters: [] },
    { header: 'Root cause', formula: '[postmortem_custom.custom_key]', dataType: 'text', filters: [] },
  ],
  options: { pageNumber: 0, itemsPerPage: 50, ignoreRepeatedRows: false },
};

/** The query for one page, as the sandbox takes it (what a user's hand-written loop would send). */
export function pageQuery(pageNumber: number, itemsPerPage: number): unknown {
  return { ...BENCH_QUERY, options: { ...BENCH_QUERY.options, pageNumber, itemsPerPage } };
}
