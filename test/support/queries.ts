/** Queries the pipeline tests send to the sandbox's SANDBOX_TILE. */

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
