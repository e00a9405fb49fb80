import { countNoun } from '../count-noun.js';
import { scrubSecrets } from '../secret-scrubber.js';
import type { Recording } from '../source/recording.js';

/** What each kind of page-identity evidence means for the tenant, on the probe's report. */
const PAGE_IDENTITY_NOTES: Record<NonNullable<Recording['checks']['pageIdentity']>, string> = {
  echo: ' (the echoed pageNumber follows the request: each page is proven by it)',
  'rows-digest': ' (the echo does not follow the request: a run accepts distinct pages and refuses a repeated one)',
  'single-page': ' (one page read: nothing to prove)',
};

/** What the sandbox does by default, which the report compares a tenant against. */
const SANDBOX = { echo: 'request', hasPrev: 'page-above-zero', compression: 'none', rowShape: 'array', tokenLifetimeSeconds: 3600 } as const;

/** The value classes the sandbox sends per dataType (formatted cells included). */
const SANDBOX_CLASSES: Record<string, ReadonlySet<string>> = {
  number: new Set(['null', 'integer', 'decimal', 'percentage', 'numeric', 'text', 'url']),
  datetime: new Set(['null', 'epoch-ms', 'date', 'year-month', 'text']),
  text: new Set(['null', 'empty', 'numeric', 'iso-utc', 'date', 'year-month', 'percentage', 'url', 'text']),
};

/**
 * A short human report of how the tenant differs from the sandbox's default behaviour: the things
 * a run against it has never been tested on. One line per difference.
 */
export function formatProbeReport(recording: Recording, file: string): string {
  const lines: string[] = [];
  const { behaviour } = recording;
  const last = recording.pages.at(-1);
  lines.push(
    `probe job ${recording.job}: ${countNoun(recording.pages.length, 'page')} recorded` +
      (last ? ` (${recording.pages.reduce((sum, page) => sum + page.rows, 0)} of ${countNoun(last.navigation.totalRows, 'row')})` : '') +
      ` into ${file}`,
  );
  const differences: string[] = [];
  if (behaviour) {
    if (behaviour.echo !== SANDBOX.echo) differences.push(`echo: ${behaviour.echo} (the sandbox echoes the request, its pageNumber included)`);
    if (behaviour.hasPrev !== SANDBOX.hasPrev) differences.push(`hasPrev: ${behaviour.hasPrev} (the sandbox: pageNumber > 0)`);
    if (behaviour.compression !== SANDBOX.compression) differences.push(`compression: ${behaviour.compression} (the sandbox: none unless --gzip)`);
    if (behaviour.pageSizeCap !== undefined) differences.push(`page size: ${behaviour.pageSizeCap} rows served where ${recording.itemsPerPage} were asked`);
    if (behaviour.rowShape !== SANDBOX.rowShape) differences.push(`rows: ${behaviour.rowShape} (the sandbox: arrays aligned with headers)`);
    if (behaviour.dateOffsetMs === undefined) differences.push('Date header: absent (a backfill cannot read the source clock)');
    else if (Math.abs(behaviour.dateOffsetMs) >= 5_000)
      differences.push(`clock: the server's Date is ${Math.round(behaviour.dateOffsetMs / 1000)} s from ours`);
    if (behaviour.rowOrderStable === false)
      differences.push('row order: page 0 came back in a different order on a second read; give the query an order on a unique number or datetime column');
  }
  const expiresIn = recording.token?.expiresIn;
  if (recording.token && expiresIn !== SANDBOX.tokenLifetimeSeconds)
    differences.push(`token: expires_in ${expiresIn ?? 'absent'} (the sandbox: ${SANDBOX.tokenLifetimeSeconds})`);
  const seen = new Map<string, Set<string>>();
  for (const page of recording.pages) {
    page.columns.forEach((shapes, column) => {
      const dataType = page.dataTypes[column] ?? '?';
      const expected = SANDBOX_CLASSES[dataType];
      for (const shape of shapes) {
        if (expected?.has(shape.class) === true) continue;
        const key = `${page.headers[column]} (${dataType})`;
        seen.set(key, new Set([...(seen.get(key) ?? []), `${shape.type} ${shape.class}`]));
      }
    });
  }
  for (const [column, classes] of seen) differences.push(`column ${column}: ${[...classes].join(', ')} (not what the sandbox sends)`);
  lines.push(...(differences.length === 0 ? ['  no difference from the sandbox'] : differences.map((line) => `  differs: ${line}`)));
  if (recording.checks.pageIdentity !== undefined)
    lines.push(`  page identity: ${recording.checks.pageIdentity}${PAGE_IDENTITY_NOTES[recording.checks.pageIdentity]}`);
  if (!recording.checks.accepted)
    lines.push(`  a run would refuse this tile: ${recording.checks.check} on page ${recording.checks.pageNumber}: ${recording.checks.detail}`);
  if (recording.failure) lines.push(`  the source failed: ${recording.failure.code}: ${recording.failure.message}`);
  return scrubSecrets(`${lines.join('\n')}\n`);
}
