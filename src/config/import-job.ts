import { stringify } from 'yaml';
import { ConfigError } from './config-error.js';
import type { ImportedRequest } from './import-request.js';
import { jobSchema } from './job-schema.js';
import { sinkSchema } from './sink-schemas.js';

/**
 * Turns an imported tile request into the text of a `jobs/<name>.yaml`: the tile id, the query as
 * the reporting module wrote it, and placeholders (a commented schedule, a csv sink) for what only
 * the user can decide.
 */

const JOB_NAME = /^[a-z][a-z0-9_]{0,62}$/;
// `tilehouse k8s` names CronJobs tilehouse-<name>, and a CronJob name has at most 52 characters.
const MAX_DERIVED_NAME = 42;

/** A job name from free text (a column header, a tile id): `Incident type` → `incident_type`. */
export function jobNameFrom(text: string): string | undefined {
  let name = text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
  if (name === '') return undefined;
  if (!/^[a-z]/.test(name)) name = `tile_${name}`;
  return name.slice(0, MAX_DERIVED_NAME).replace(/_+$/, '');
}

/** The job name: `--name`, else from the first visible column's header, else from the tile id. */
export function chooseJobName(request: ImportedRequest, explicit: string | undefined): string {
  if (explicit !== undefined) {
    if (!JOB_NAME.test(explicit)) {
      throw ConfigError.single({
        file: 'tilehouse',
        field: '--name',
        value: JSON.stringify(explicit),
        message: 'lower-case letters, digits and underscores, starting with a letter (max 63)',
      });
    }
    return explicit;
  }
  const firstVisible = request.parsedQuery.items.find((item) => item.hidden !== true);
  return (firstVisible && jobNameFrom(firstVisible.header)) ?? jobNameFrom(request.tileId) ?? 'imported_tile';
}

/** The sink kinds a job may name (the job schema's union, so a new kind is listed without a change here). */
export function sinkKindNames(): string[] {
  return sinkSchema.options.map((option) => option.shape.type.value);
}

/** The sink an imported job starts with, until its user chooses (a CSV file needs no other setting). */
export const PLACEHOLDER_SINK = 'csv' as const;

/** The YAML text of the new job; it is validated against the job schema before it is returned. */
export function renderImportedJob(request: ImportedRequest, name: string): string {
  const job = { name, tile: request.tileId, query: request.query, sinks: [{ type: PLACEHOLDER_SINK }] };
  // Validate what will be written, so the file is known to load (the query was checked already).
  const checked = jobSchema.safeParse(job);
  if (!checked.success) {
    throw ConfigError.single({ file: 'tilehouse', field: '', message: `the imported job does not validate: ${checked.error.issues[0]?.message}` });
  }
  const options = { lineWidth: 0 } as const;
  return [
    '# yaml-language-server: $schema=../schema/job.schema.json',
    '#',
    `# Imported by \`tilehouse init --from-request\` from the reporting module's API request for tile ${request.tileId}.`,
    '# Still to set: the schedule (uncomment it, or leave it out to run only on demand) and the sinks.',
    stringify({ name, tile: request.tileId }, options).trimEnd(),
    '# schedule:',
    '#   cron: "0 6 * * *"     # five fields; `tilehouse k8s` makes a CronJob for each scheduled job',
    '#   timezone: UTC',
    stringify({ query: request.query }, options).trimEnd(),
    'sinks:',
    `  - type: ${PLACEHOLDER_SINK}            # placeholder: set its fields, or use another kind: ${sinkKindNames().join(', ')} (docs/configuration.md)`,
    '',
  ].join('\n');
}
