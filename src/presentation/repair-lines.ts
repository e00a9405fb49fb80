import type { JobFix, Repair } from '../workspace/repairs.js';

/** A value of the definition as a line holds it: long ones cut, and said to be (`--json` has them whole). */
const VALUE_CHARS = 160;
export function shortValue(text: string | undefined): string {
  if (text === undefined) return '(none)';
  return text.length > VALUE_CHARS ? `${text.slice(0, VALUE_CHARS)}… (whole in --json)` : text;
}

const INDENT = '          ';

/**
 * `status`'s repair of a job. A job that only needs running again: the commands, the first after
 * `repair:`. One that would fail or be refused again: what to fix first (each on a line of its own,
 * `file:line: …`), then the commands that run it, then the override for a change that is meant.
 * Every command stands alone on its line (after `repair:`, or `if the change is meant:`), so it
 * can be copied; what follows `  # ` is a note.
 */
export function repairLines(repair: Repair): string[] {
  const lines: string[] = [];
  const [first, ...rest] = repair.commands;
  const note = repair.note === undefined ? '' : `  # ${repair.note}`;
  if (repair.fixFirst === undefined) {
    lines.push(`  repair: ${first}${note}`);
  } else {
    lines.push(`  repair: ${headline(repair.fixFirst)}, then run the job again:`);
    for (const fix of repair.fixFirst) lines.push(`${INDENT}  ${fixLine(fix)}`);
    lines.push(`${INDENT}${first}${note}`);
  }
  for (const command of rest) lines.push(`${INDENT}${command}`);
  if (repair.ifMeant !== undefined) lines.push(`${INDENT}if the change is meant: ${repair.ifMeant.command}  # ${repair.ifMeant.note}`);
  return lines;
}

type Undo = Extract<JobFix, { kind: 'undo' }>;

function headline(fixes: readonly JobFix[]): string {
  const tile = fixes.some((fix) => fix.kind === 'tile');
  const undo = fixes.filter((fix): fix is Undo => fix.kind === 'undo');
  const edits = undo.length === 0 ? '' : `undo the ${undo.length === 1 ? 'edit' : 'edits'} since run ${undo[0]!.sinceRunId}`;
  if (!tile) return edits;
  return undo.length === 0 ? "fix the job's tile id" : `fix the job's tile id and ${edits}`;
}

function fixLine(fix: JobFix): string {
  const where = `${fix.file}${fix.line === undefined ? '' : `:${fix.line}`}`;
  if (fix.kind === 'tile') {
    const published =
      fix.published === undefined
        ? "; the reporting module shows a tile's id under its options (export → API)"
        : `; run ${fix.published.runId} published with tile ${JSON.stringify(fix.published.tile)}`;
    return `${where}: tile ${JSON.stringify(fix.tile)}: the source refuses it (${fix.refusal})${published}`;
  }
  if (fix.now === undefined) return `${where}: ${fix.part} was removed; add it back: ${shortValue(fix.was)}`;
  if (fix.was === undefined) return `${where}: ${fix.part} is new (${shortValue(fix.now)}); remove it`;
  return `${where}: ${fix.part} is ${shortValue(fix.now)}; set it back to ${shortValue(fix.was)}`;
}
