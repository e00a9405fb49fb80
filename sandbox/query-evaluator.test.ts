import { describe, expect, it } from 'vitest';
import { generateDataset, incidentAt, type Incident } from './dataset.js';
import { evaluateQuery } from './query-evaluator.js';
import { parseExportQuery } from './query-schema.js';
import { item } from './test-client.js';

const NOW = new Date('2026-07-01T00:00:00Z');
const DAY = 86_400_000;
const dataset = generateDataset({ size: 400, seed: 42, now: NOW });
const incidents: Incident[] = Array.from({ length: dataset.size }, (_, i) => incidentAt(dataset, i));

/** Evaluates and returns every row (datetimes as epoch ms), or the headers too. */
function run(items: Record<string, unknown>[], options: Record<string, unknown> = {}) {
  const table = evaluateQuery(parseExportQuery({ items, options }), { dataset, audience: 'acme.example.com' });
  const rows = Array.from({ length: table.totalRows }, (_, i) => table.row(i));
  return { headers: table.headers, dataTypes: table.dataTypes, rows };
}
const rowsOf = (items: Record<string, unknown>[], options?: Record<string, unknown>) => run(items, options).rows;
const column = (items: Record<string, unknown>[], index = 0) => rowsOf(items).map((row) => row[index]);
const countBy = <K>(list: Incident[], key: (incident: Incident) => K): Map<K, number> => {
  const counts = new Map<K, number>();
  for (const incident of list) counts.set(key(incident), (counts.get(key(incident)) ?? 0) + 1);
  return counts;
};
const utcDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

describe('field references', () => {
  it('reads every incident field as the generated incident has it', () => {
    const rows = rowsOf([
      item('Number', '[incident.number]', 'number'),
      item('Name', '[incident.name]', 'text'),
      item('Status', '[incident.status]', 'text'),
      item('Created', '[incident.created]', 'datetime'),
      item('Type', '[incident.type]', 'text'),
      item('Severity', '[incident.severity]', 'number'),
      item('Label', '[incident.severity_label]', 'text'),
      item('Description', '[incident.description]', 'text'),
      item('Root cause', '[postmortem_custom.custom_key]', 'text'),
      item('Detection', '[postmortem_custom.detection_method]', 'text'),
      item('Impact', '[postmortem_custom.customer_impact_minutes]', 'number'),
      item('Actions', '[postmortem_custom.action_items]', 'number'),
    ]);
    expect(rows).toEqual(
      incidents.map((i) => [
        i.number,
        String(i.number),
        i.status,
        i.created,
        i.type,
        i.severity,
        i.severityLabel,
        i.description,
        i.postmortem.custom_key,
        i.postmortem.detection_method,
        i.postmortem.customer_impact_minutes,
        i.postmortem.action_items,
      ]),
    );
  });

  it('has postmortem fields only for resolved or mitigated incidents, and some of them are null', () => {
    const rows = rowsOf([item('Status', '[incident.status]', 'text'), item('Root cause', '[postmortem_custom.custom_key]', 'text')]);
    expect(rows.filter(([status, cause]) => cause !== null && status !== 'resolved' && status !== 'mitigated')).toEqual([]);
    expect(rows.some(([status, cause]) => status === 'resolved' && cause === null)).toBe(true);
  });

  it('joins one row per tag label, and one row with a null label for an untagged incident', () => {
    const rows = rowsOf([item('Number', '[incident.number]', 'number'), item('Tag', '[tag.label]', 'text')]);
    const expected = incidents.flatMap((i): (number | string | null)[][] => (i.tags.length === 0 ? [[i.number, null]] : i.tags.map((tag) => [i.number, tag])));
    expect(rows).toEqual(expected);
    expect(incidents.some((i) => i.tags.length === 0) && incidents.some((i) => i.tags.length === 3)).toBe(true);
  });
});

describe('formulas', () => {
  const first = (formula: string, dataType: 'number' | 'text' | 'datetime' = 'number') => rowsOf([item('X', formula, dataType)])[0]![0];

  it.each([
    ['1 + 2 * 3', 7],
    ['(1 + 2) * 3', 9],
    ['10 - 4 - 3', 3],
    ['8 / 4 / 2', 1],
    ['-(2 + 3) * 2', -10],
    ['1 / 0', null],
    ['round(2.5)', 3],
    ['round(-2.5)', -3],
    ['round(1.005, 2)', 1.01],
    ['round(1234.5678, -2)', 1200],
    ['round(2 / 3 * 100, 1)', 66.7],
  ])('computes %s = %j', (formula, expected) => {
    expect(first(formula)).toBe(expected);
  });

  it('computes arithmetic over fields per row', () => {
    expect(column([item('X', '[incident.number] * 10 + [incident.severity]', 'number')])).toEqual(incidents.map((i) => i.number * 10 + i.severity));
  });

  it('propagates a null operand to a null result', () => {
    expect(column([item('X', '[postmortem_custom.customer_impact_minutes] * 60', 'number')])).toEqual(
      incidents.map((i) => (i.postmortem.customer_impact_minutes === null ? null : i.postmortem.customer_impact_minutes * 60)),
    );
  });

  it('shifts a datetime by milliseconds and measures the gap between two as a number', () => {
    const rows = rowsOf(
      [item('Later', '[incident.created] + 3600000', 'datetime'), item('Gap', '[ref:later] - [incident.created]', 'number')].map((it, i) =>
        i === 0 ? { ...it, ref: 'later' } : it,
      ),
    );
    expect(rows[0]).toEqual([incidents[0]!.created + 3_600_000, 3_600_000]);
  });

  it('joins text with concat, numbers as decimals, datetimes as ISO 8601 and nulls as nothing', () => {
    const rows = rowsOf([
      item('X', "concat([incident.severity_label], ' #', [incident.number], ' ', [postmortem_custom.custom_key], '@', [incident.created])", 'text'),
    ]);
    expect(rows.map((r) => r[0])).toEqual(
      incidents.map((i) => `${i.severityLabel} #${i.number} ${i.postmortem.custom_key ?? ''}@${new Date(i.created).toISOString()}`),
    );
  });

  it('refers to another item of the same row by ref', () => {
    const rows = rowsOf([item('Severity', '[incident.severity]', 'number', { ref: 'sev' }), item('Double', '[ref:sev] * 2', 'number')]);
    expect(rows.map((r) => r[1])).toEqual(incidents.map((i) => i.severity * 2));
  });

  it('follows a chain of refs', () => {
    const rows = rowsOf([
      item('C', '[ref:b] + 1', 'number'),
      item('B', '[ref:a] * 10', 'number', { ref: 'b' }),
      item('A', '[incident.severity]', 'number', { ref: 'a' }),
    ]);
    expect(rows[0]).toEqual([incidents[0]!.severity * 10 + 1, incidents[0]!.severity * 10, incidents[0]!.severity]);
  });

  it.each([
    [[item('X', '[incident.type] + 1', 'number')], 'items[0] ("X"): \'+\' does not apply to text; join text with concat(a, b, ...)'],
    [[item('X', "round('a')", 'number')], 'round needs a number, got text'],
    [[item('X', 'round(1, 2, 3)', 'number')], 'round takes 1 or 2 arguments'],
    [[item('X', 'upper([incident.type])', 'text')], "unknown function 'upper'; the sandbox knows round, concat"],
    [[item('X', '[incident.created] * 2', 'number')], "'*' does not apply to datetime and number"],
    [[item('A', '[ref:b]', 'number', { ref: 'a' }), item('B', '[ref:a]', 'number', { ref: 'b' })], 'items refer to each other in a cycle: "A" → "B" → "A"'],
    [[item('A', '1', 'number', { ref: 'x' }), item('B', '2', 'number', { ref: 'x' })], "ref 'x' is already used by items[0]"],
  ])('refuses a badly typed or circular query (%#)', (items, message) => {
    expect(() => run(items)).toThrow(message);
  });
});

describe('grouping and aggregation', () => {
  it('counts incidents per group, one row per distinct key in first-appearance order', () => {
    const rows = rowsOf([item('Type', '[incident.type]', 'text', { grouped: true }), item('Incidents', '[incident.number]', 'number', { aggregate: 'count' })]);
    expect(rows).toEqual([...countBy(incidents, (i) => i.type)].map(([type, n]) => [type, n]));
  });

  it('groups by several keys', () => {
    const rows = rowsOf([
      item('Type', '[incident.type]', 'text', { grouped: true }),
      item('Severity', '[incident.severity_label]', 'text', { grouped: true }),
      item('Incidents', '[incident.number]', 'number', { aggregate: 'count' }),
    ]);
    expect(rows).toEqual([...countBy(incidents, (i) => `${i.type}|${i.severityLabel}`)].map(([key, n]) => [...key.split('|'), n]));
  });

  it('counts only non-null values', () => {
    const rows = rowsOf([
      item('Type', '[incident.type]', 'text', { grouped: true }),
      item('With root cause', '[postmortem_custom.custom_key]', 'number', { aggregate: 'count' }),
    ]);
    const expected = countBy(incidents, (i) => i.type);
    for (const [type] of expected) expected.set(type, incidents.filter((i) => i.type === type && i.postmortem.custom_key !== null).length);
    expect(rows).toEqual([...expected]);
  });

  it('keeps null as a group of its own', () => {
    const rows = rowsOf([
      item('Root cause', '[postmortem_custom.custom_key]', 'text', { grouped: true }),
      item('N', '[incident.number]', 'number', { aggregate: 'count' }),
    ]);
    expect(rows).toContainEqual([null, incidents.filter((i) => i.postmortem.custom_key === null).length]);
  });

  it('counts per tag label through the tag join', () => {
    const rows = rowsOf([item('Tag', '[tag.label]', 'text', { grouped: true }), item('N', '[incident.number]', 'number', { aggregate: 'count' })]);
    const byTag = new Map(rows.map(([tag, n]) => [tag, n]));
    expect(byTag.get('database')).toBe(incidents.filter((i) => i.tags.includes('database')).length);
    expect(byTag.get(null)).toBe(incidents.filter((i) => i.tags.length === 0).length);
  });

  it('folds sum, avg, min and max over non-null values', () => {
    const rows = rowsOf([
      item('Type', '[incident.type]', 'text', { grouped: true }),
      item('Sum', '[postmortem_custom.customer_impact_minutes]', 'number', { aggregate: 'sum' }),
      item('Avg', '[postmortem_custom.customer_impact_minutes]', 'number', { aggregate: 'avg' }),
      item('Min', '[incident.created]', 'datetime', { aggregate: 'min' }),
      item('Max', '[postmortem_custom.customer_impact_minutes]', 'number', { aggregate: 'max' }),
    ]);
    const outages = incidents.filter((i) => i.type === 'Outage');
    const minutes = outages.map((i) => i.postmortem.customer_impact_minutes).filter((m): m is number => m !== null);
    const sum = minutes.reduce((a, b) => a + b, 0);
    expect(rows.find((r) => r[0] === 'Outage')).toEqual([
      'Outage',
      sum,
      sum / minutes.length,
      Math.min(...outages.map((i) => i.created)),
      Math.max(...minutes),
    ]);
  });

  it('computes a ratio of two counts with a before-aggregate filter on one of them', () => {
    const rows = rowsOf([
      item('Type', '[incident.type]', 'text', { grouped: true }),
      item('Incidents', '[incident.number]', 'number', { aggregate: 'count', ref: 'total' }),
      item('Resolved', '[incident.status]', 'number', {
        aggregate: 'count',
        ref: 'resolved',
        filters: [{ operator: 'in', values: ['resolved'], beforeAggregate: true }],
      }),
      item('Resolved share', 'round([ref:resolved] / [ref:total] * 100, 1)', 'number', { format: 'percentage' }),
    ]);
    for (const [type, total, resolved, share] of rows) {
      const ofType = incidents.filter((i) => i.type === type);
      const resolvedCount = ofType.filter((i) => i.status === 'resolved').length;
      expect([total, resolved]).toEqual([ofType.length, resolvedCount]);
      expect(share).toBe(`${Math.round((resolvedCount / ofType.length) * 1000) / 10}%`);
    }
    expect(rows).toHaveLength(5);
  });

  it('filters groups on an aggregated value after aggregation', () => {
    const all = rowsOf([item('Tag', '[tag.label]', 'text', { grouped: true }), item('N', '[incident.number]', 'number', { aggregate: 'count' })]);
    const threshold = [...all.map((r) => r[1] as number)].sort((a, b) => a - b)[Math.floor(all.length / 2)]!;
    const kept = rowsOf([
      item('Tag', '[tag.label]', 'text', { grouped: true }),
      item('N', '[incident.number]', 'number', { aggregate: 'count', filters: [{ operator: 'gt', values: [String(threshold)] }] }),
    ]);
    expect(kept).toEqual(all.filter((r) => (r[1] as number) > threshold));
    expect(kept.length).toBeGreaterThan(0);
    expect(kept.length).toBeLessThan(all.length);
  });

  it('filters rows before grouping with a hidden item that reads a field', () => {
    const rows = rowsOf([
      item('Type', '[incident.type]', 'text', { grouped: true }),
      item('N', '[incident.number]', 'number', { aggregate: 'count' }),
      item('Severe', '[incident.severity]', 'number', { hidden: true, filters: [{ operator: 'in', values: ['0', '1'], beforeAggregate: true }] }),
    ]);
    expect(rows).toEqual([
      ...countBy(
        incidents.filter((i) => i.severity <= 1),
        (i) => i.type,
      ),
    ]);
  });

  it('returns one row for a query of aggregates only, even when no row passes', () => {
    expect(rowsOf([item('N', '[incident.number]', 'number', { aggregate: 'count' })])).toEqual([[incidents.length]]);
    expect(
      rowsOf([item('N', '[incident.number]', 'number', { aggregate: 'count', filters: [{ operator: 'gt', values: ['99999'], beforeAggregate: true }] })]),
    ).toEqual([[0]]);
  });

  it.each([
    [
      [item('Type', '[incident.type]', 'text', { grouped: true }), item('Status', '[incident.status]', 'text')],
      'items[1] ("Status"): in a grouped query a visible item must be grouped, aggregated',
    ],
    [[item('Type', '[incident.type]', 'text', { grouped: true, aggregate: 'count' })], 'cannot be both grouped and aggregated'],
    [
      [item('Type', '[incident.type]', 'text', { grouped: true }), item('N', '[incident.number]', 'number', { aggregate: 'median' })],
      "unsupported aggregate 'median'",
    ],
    [
      [item('Type', '[incident.type]', 'text', { grouped: true }), item('N', '[incident.type]', 'number', { aggregate: 'sum' })],
      'aggregate sum needs numbers, got text',
    ],
    [
      [
        item('Type', '[incident.type]', 'text', { grouped: true, ref: 't' }),
        item('N', '[incident.number]', 'number', { aggregate: 'count', ref: 'n' }),
        item('Bad', '[ref:n] + 1', 'number', { grouped: true }),
      ],
      '[ref:n] is computed per group and cannot be used in a per-row formula',
    ],
  ])('refuses a grouped query that has no meaning (%#)', (items, message) => {
    expect(() => run(items)).toThrow(message);
  });
});

describe('date functions and formats', () => {
  it('groups by UTC day with function date and formats it YYYY-MM-DD', () => {
    const rows = rowsOf([
      item('Day', '[incident.created]', 'datetime', { grouped: true, function: 'date', format: 'year_month_number_day_number_hyphen' }),
      item('N', '[incident.number]', 'number', { aggregate: 'count' }),
    ]);
    expect(rows).toEqual([...countBy(incidents, (i) => utcDay(i.created))]);
  });

  it('truncates to the first day of the month with the month function', () => {
    const rows = rowsOf([
      item('Month', '[incident.created]', 'datetime', { grouped: true, function: 'month', format: 'year_month_number_day_number_hyphen' }),
      item('N', '[incident.number]', 'number', { aggregate: 'count' }),
    ]);
    expect(rows).toEqual([...countBy(incidents, (i) => `${utcDay(i.created).slice(0, 7)}-01`)]);
    expect(rows.length).toBeGreaterThanOrEqual(13);
  });

  it('formats a month as YYYY-MM with year_month_number_hyphen', () => {
    expect(column([item('M', '[incident.created]', 'datetime', { function: 'month', format: 'year_month_number_hyphen' })])[0]).toBe(
      utcDay(incidents[0]!.created).slice(0, 7),
    );
  });

  it('starts a week on Monday', () => {
    const weeks = column([item('W', '[incident.created]', 'datetime', { function: 'week' })]) as number[];
    for (const w of weeks) expect(new Date(w).getUTCDay()).toBe(1);
    expect(weeks.every((w, k) => w <= incidents[k]!.created && incidents[k]!.created - w < 7 * DAY)).toBe(true);
  });

  it('keeps an unformatted bucket a datetime (epoch ms at midnight UTC)', () => {
    expect(column([item('D', '[incident.created]', 'datetime', { function: 'date' })])[0]).toBe(Date.parse(`${utcDay(incidents[0]!.created)}T00:00:00Z`));
  });

  it.each([
    [{ function: 'date', formula: '[incident.number]' }, 'function date needs a datetime value, got number'],
    [{ function: 'quarter' }, "unsupported function 'quarter'"],
    [{ format: 'year_month_number_day_number_hyphen', formula: '[incident.type]' }, 'needs a datetime value, got text'],
    [{ format: 'percentage' }, 'format percentage needs a number value, got datetime'],
    [{ format: 'roman' }, "unsupported format 'roman'"],
  ])('refuses %j', (extra, message) => {
    expect(() => run([{ ...item('X', '[incident.created]', 'datetime'), ...extra }])).toThrow(message);
  });
});

describe('formats', () => {
  it.each([
    ['12.5', '12.5%'],
    ['100', '100%'],
    ['200 / 3', '66.67%'],
    ['0', '0%'],
    ['1 / 0', null],
  ])('renders %s with format percentage as %j', (formula, expected) => {
    expect(column([item('P', formula, 'number', { format: 'percentage' })])[0]).toBe(expected);
  });

  it('links an incident number to the tenant host with incident_url', () => {
    expect(column([item('Link', '[incident.number]', 'text', { format: 'incident_url' })]).slice(0, 2)).toEqual([
      'https://acme.example.com/incidents/1',
      'https://acme.example.com/incidents/2',
    ]);
  });

  it('makes values readable with pretty', () => {
    const rows = rowsOf([
      item('Status', "'INVESTIGATING'", 'text', { format: 'pretty' }),
      item('Cause', "'config_change'", 'text', { format: 'pretty' }),
      item('Label', "'SEV1'", 'text', { format: 'pretty' }),
      item('Free text', "'Data loss, EU'", 'text', { format: 'pretty' }),
      item('Number', '1234567.891', 'number', { format: 'pretty' }),
      item('When', '[incident.created]', 'datetime', { format: 'pretty' }),
    ]);
    expect(rows[0]!.slice(0, 5)).toEqual(['Investigating', 'Config change', 'SEV1', 'Data loss, EU', '1,234,567.89']);
    expect(rows[0]![5]).toBe(`${new Date(incidents[0]!.created).toISOString().slice(0, 16).replace('T', ' ')} UTC`);
  });

  it('sorts and filters on the value before formatting', () => {
    const rows = rowsOf([item('P', '[incident.number] / 4', 'number', { format: 'percentage', order: 'desc', filters: [{ operator: 'gt', values: ['99'] }] })]);
    expect(rows.slice(0, 2)).toEqual([['100%'], ['99.75%']]);
    expect(rows).toHaveLength(400 - 396);
  });
});

describe('hidden items', () => {
  it('are evaluated for refs, filters and ordering but not returned', () => {
    const { headers, dataTypes, rows } = run([
      item('Number', '[incident.number]', 'number'),
      item('Severity', '[incident.severity]', 'number', {
        hidden: true,
        ref: 'sev',
        order: 'asc',
        orderSequence: 0,
        filters: [{ operator: 'gt', values: ['1'] }],
      }),
      item('Severity x 10', '[ref:sev] * 10', 'number'),
    ]);
    expect(headers).toEqual(['Number', 'Severity x 10']);
    expect(dataTypes).toEqual(['number', 'number']);
    const expected = incidents.filter((i) => i.severity > 1).sort((a, b) => a.severity - b.severity || a.number - b.number);
    expect(rows).toEqual(expected.map((i) => [i.number, i.severity * 10]));
  });
});

describe('ordering', () => {
  it('orders by the items with order, in orderSequence, ties by incident number', () => {
    const rows = rowsOf([
      item('Number', '[incident.number]', 'number'),
      item('Type', '[incident.type]', 'text', { order: 'asc', orderSequence: 1 }),
      item('Severity', '[incident.severity]', 'number', { order: 'desc', orderSequence: 0 }),
    ]);
    const expected = [...incidents].sort((a, b) => b.severity - a.severity || (a.type < b.type ? -1 : a.type > b.type ? 1 : 0) || a.number - b.number);
    expect(rows).toEqual(expected.map((i) => [i.number, i.type, i.severity]));
  });

  it('orders items without orderSequence after those with one, in item order', () => {
    const rows = rowsOf([
      item('Type', '[incident.type]', 'text', { order: 'asc' }),
      item('Severity', '[incident.severity]', 'number', { order: 'asc', orderSequence: 0 }),
    ]);
    expect(rows[0]).toEqual([
      [...incidents]
        .filter((i) => i.severity === 0)
        .map((i) => i.type)
        .sort()[0],
      0,
    ]);
  });

  it('puts nulls last in both directions', () => {
    for (const order of ['asc', 'desc']) {
      const values = column([item('Impact', '[postmortem_custom.customer_impact_minutes]', 'number', { order })]);
      const firstNull = values.indexOf(null);
      expect(firstNull).toBeGreaterThan(0);
      expect(values.slice(firstNull).every((v) => v === null)).toBe(true);
      const numbers = values.slice(0, firstNull) as number[];
      expect(numbers).toEqual([...numbers].sort((a, b) => (order === 'asc' ? a - b : b - a)));
    }
  });

  it('orders groups by an aggregate', () => {
    const counts = column(
      [item('Type', '[incident.type]', 'text', { grouped: true }), item('N', '[incident.number]', 'number', { aggregate: 'count', order: 'desc' })],
      1,
    ) as number[];
    expect(counts).toEqual([...counts].sort((a, b) => b - a));
  });
});

describe('filters over the dataset', () => {
  const numbersWhere = (formula: string, dataType: 'number' | 'text' | 'datetime', filter: Record<string, unknown>) =>
    column([item('Number', '[incident.number]', 'number'), item('X', formula, dataType, { hidden: true, filters: [filter] })]);

  it('in keeps the listed statuses', () => {
    expect(numbersWhere('[incident.status]', 'text', { operator: 'in', values: ['resolved', 'INVESTIGATING'] })).toEqual(
      incidents.filter((i) => i.status === 'resolved' || i.status === 'INVESTIGATING').map((i) => i.number),
    );
  });

  it('ct finds descriptions containing a word, ignoring case', () => {
    const expected = incidents.filter((i) => i.description.toLowerCase().includes('checkout')).map((i) => i.number);
    expect(expected.length).toBeGreaterThan(0);
    expect(numbersWhere('[incident.description]', 'text', { operator: 'ct', values: ['CHECKOUT'] })).toEqual(expected);
  });

  it('gt keeps incidents created after an instant', () => {
    const bound = '2026-06-01T00:00:00Z';
    expect(numbersWhere('[incident.created]', 'datetime', { operator: 'gt', values: [bound] })).toEqual(
      incidents.filter((i) => i.created > Date.parse(bound)).map((i) => i.number),
    );
  });

  it('rw keeps the incidents created in the window relative to the sandbox now', () => {
    const start = NOW.getTime() - 30 * DAY;
    const end = NOW.getTime() - 7 * DAY;
    const expected = incidents.filter((i) => i.created >= start && i.created < end).map((i) => i.number);
    expect(expected.length).toBeGreaterThan(0);
    expect(numbersWhere('[incident.created]', 'datetime', { operator: 'rw', values: ['30', 'days', '7', 'days'] })).toEqual(expected);
  });

  it('combines filters of several items with AND', () => {
    const rows = column([
      item('Number', '[incident.number]', 'number', { filters: [{ operator: 'gt', values: ['100'] }] }),
      item('Type', '[incident.type]', 'text', { filters: [{ operator: 'in', values: ['Outage'] }] }),
    ]);
    expect(rows).toEqual(incidents.filter((i) => i.number > 100 && i.type === 'Outage').map((i) => i.number));
  });
});

describe('ignoreRepeatedRows', () => {
  it('drops rows identical to an earlier one, keeping the first', () => {
    const rows = rowsOf([item('Type', '[incident.type]', 'text')], { ignoreRepeatedRows: true });
    expect(rows).toEqual([...new Set(incidents.map((i) => i.type))].map((t) => [t]));
  });

  it('keeps repeated rows by default', () => {
    expect(rowsOf([item('Type', '[incident.type]', 'text')])).toHaveLength(incidents.length);
  });
});
