// The text of docs/error-codes.md, made from the catalogue (src/error-codes.ts). Written by
// `npm run docs:codes`; test/error-codes.test.ts fails when the committed file differs.
import { ERROR_CODES, type ErrorCodeEntry, TARGET_KINDS } from '../../src/error-codes.js';

export const ERROR_CODES_DOC = 'docs/error-codes.md';

function exitText(exit: ErrorCodeEntry['exit']): string {
  return exit === 'signal' ? '130 / 143' : String(exit);
}

/** Every code that was renamed, old → new, in the catalogue's order. */
export function renamedCodes(): Array<{ old: string; now: string }> {
  return (Object.entries(ERROR_CODES) as Array<[string, ErrorCodeEntry]>).flatMap(([now, entry]) => (entry.formerly ?? []).map((old) => ({ old, now })));
}

export function errorCodesDocument(): string {
  const entries = Object.entries(ERROR_CODES) as Array<[string, ErrorCodeEntry]>;
  const renamed = renamedCodes().map(({ old, now }) => `| \`${old}\` | \`${now}\` |`);
  const rows = entries.map(
    ([code, entry]) => `| \`${code}\` | ${exitText(entry.exit)} | ${entry.retryable ? 'yes' : 'no'} | ${entry.says.replaceAll('|', '\\|')} |`,
  );
  return [
    '# Error codes',
    '',
    '<!-- Generated from src/error-codes.ts by `npm run docs:codes`; do not edit by hand. -->',
    '',
    `Every failure tilehouse reports carries one of these ${entries.length} codes: on stderr`,
    "(`tilehouse: <code>:` or the log line's `code`), in the run summary's `error.code` and in the run",
    'ledger. Alert rules, retry rules and runbooks may key on them; a code is not renamed without a',
    'note in [failure behaviour](failure-behaviour.md).',
    '',
    '- **exit**: how the process exits when this failure ends a command: 1 a tile failed, 2 bad',
    '  configuration or usage (nothing ran), 3 partially published, 130 / 143 stopped by SIGINT / SIGTERM.',
    '  A run of several tiles exits with the worst of them (see [failure behaviour](failure-behaviour.md)).',
    '- **retryable**: whether the same command, run again unchanged, may succeed (the cause may pass',
    '  by itself). "no" means something must change first: the configuration, the credentials, the',
    '  target, or tilehouse (a bug).',
    '- One failure has one code whatever the target: where it happened is in the fields next to',
    // From the catalogue's list, so a new target kind is in the doc as soon as it is in the code (issue 51: postgres was not).
    `  the code, \`targetKind\` (${TARGET_KINDS.map((kind) => `\`${kind}\``).join(', ')}) and \`format\` (\`csv\`, \`parquet\`): in the`,
    "  run summary's `error` and on the JSON log line. The message names the job and the target with",
    '  its format, e.g. `job incidents: parquet gs://bucket/x.parquet: …`.',
    '',
    '| code | exit | retryable | what it means |',
    '|---|---|---|---|',
    ...rows,
    '',
    '## Renamed codes',
    '',
    'Since the release after 0.1.0 a failure that had a code per target kind or per format has one',
    'code, and a misused writer or encoder (a bug in tilehouse) is `internal_error`. An alert rule,',
    'retry rule or runbook that matches an old code must match the new one (and, to keep telling',
    'targets apart, the `targetKind` or `format` field): see',
    '[failure behaviour](failure-behaviour.md#renamed-error-codes). No old code is emitted any more.',
    '',
    '| old code | new code |',
    '|---|---|',
    ...renamed,
    '',
  ].join('\n');
}
