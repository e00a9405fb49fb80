import { countNoun } from '../count-noun.js';
import { withoutJob } from '../errors.js';
import type { RunSummary, JobRunSummary } from '../pipeline/job-summary.js';
import { describeTimings } from './morning-lines.js';

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/**
 * What a person needs to see about one tile beyond its first line: anything that makes "ok"
 * less than whole (values nulled, rows dropped, warnings, retries) and, for a partial publish,
 * which targets hold which run.
 */
function detailLines(tile: JobRunSummary): string[] {
  const lines: string[] = [];
  if (tile.nulledValues > 0)
    lines.push(`${countNoun(tile.nulledValues, 'value')} did not parse and ${tile.nulledValues === 1 ? 'was' : 'were'} written as null (onInvalidValue: null)`);
  if (tile.rowsDropped > 0) lines.push(`${countNoun(tile.rowsDropped, 'row')} outside the window dropped`);
  for (const warning of tile.warnings) lines.push(`warning: ${warning}`);
  // Weaker evidence than an echo, but legal: worth a line so that a person comparing tenants
  // sees why a repeated page would be refused here (see docs/api-assumptions.md).
  if (tile.pageIdentity === 'rows-digest') lines.push("pages told apart by their rows: the source's answers did not echo the page asked for");
  if (tile.status === 'partially_published') {
    lines.push(`published (new run): ${tile.outputs.map((output) => output.target).join(', ') || 'none'}`);
    if (tile.mixed !== undefined) lines.push(`changed in part (neither run whole): ${tile.mixed.join(', ')}`);
    if (tile.outcomeUnknown !== undefined) lines.push(`outcome unknown (new run or previous, look before re-running): ${tile.outcomeUnknown.join(', ')}`);
    lines.push(`NOT published (previous run kept): ${(tile.unpublished ?? []).join(', ') || 'none'}; re-run this tile`);
  }
  for (const left of tile.leftBehind ?? []) lines.push(`left behind: ${left}`);
  const counters = [
    tile.retries > 0 ? countNoun(tile.retries, 'retry', 'retries') : '',
    tile.reauthentications > 0 ? countNoun(tile.reauthentications, 're-authentication') : '',
    tile.restarts > 0 ? countNoun(tile.restarts, 're-read from page 0', 're-reads from page 0') : '',
  ].filter((part) => part !== '');
  if (counters.length > 0) lines.push(counters.join(', '));
  return lines;
}

/**
 * `N rows, P pages → targets`; a target that holds another count than was read (an earlier
 * publish of the same run id kept, a MERGE that deduplicated) says its own: a count on a line
 * is what the target took, never only what was read. A target that adopted an earlier try's
 * publish of the run id says that nothing was committed there, and the rows that try wrote.
 */
export function describeOutputs(tile: Pick<JobRunSummary, 'rows' | 'pages' | 'outputs'>, options: { pages?: boolean } = {}): string {
  const targets = tile.outputs.map((output) =>
    output.adopted === true
      ? `${output.target} (adopted: nothing committed, ${countNoun(output.rows, 'row')} of the earlier publish)`
      : output.rows === tile.rows
        ? output.target
        : `${output.target} (${countNoun(output.rows, 'row')} published)`,
  );
  const count = countNoun(tile.rows, 'row');
  const read = tile.outputs.every((output) => output.rows === tile.rows && output.adopted !== true) ? count : `${count} read`;
  return options.pages === false ? `${read} → ${targets.join(', ')}` : `${read}, ${countNoun(tile.pages, 'page')} → ${targets.join(', ')}`;
}

/**
 * `CODE: message` of a failure on a line that names the job already: the message's own
 * `job <name>: ` (which the run summary keeps, so it reads on its own) is left out, so the line names
 * the job once.
 */
export function failureText(job: string, error: { code: string; message: string } | undefined): string {
  return `${error?.code}: ${error === undefined ? undefined : withoutJob(job, error.message)}`;
}

/**
 * A few lines a person can read at the end of a run, on stderr: one per tile, plus a line for
 * each thing that needs a look. The machine-readable summary is `--json` / `--summary-json`.
 */
export function formatRunSummary(summary: RunSummary): string {
  const partial = summary.partiallyPublished > 0 ? `, ${summary.partiallyPublished} PARTIALLY PUBLISHED` : '';
  const lines = [`run ${summary.runId}: ${summary.succeeded} succeeded, ${summary.failed} failed${partial} in ${seconds(summary.durationMs)}`];
  for (const tile of summary.tiles) {
    const mark = tile.status === 'succeeded' ? 'ok  ' : tile.status === 'failed' ? 'FAIL' : 'PART';
    const detail = tile.status === 'succeeded' ? describeOutputs(tile) : failureText(tile.job, tile.error);
    lines.push(`  ${mark} ${tile.job} (${seconds(tile.durationMs)}): ${detail}`);
    // Where the tile's time went, as `status` tells it the morning after: waiting on the source or in a sink.
    if (tile.timings !== undefined && Object.keys(tile.timings).length > 0) lines.push(`       time: ${describeTimings(tile.timings)}`);
    for (const line of detailLines(tile)) lines.push(`       ${line}`);
  }
  return `${lines.join('\n')}\n`;
}
