import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { writeFileAtomically } from '../write-file-atomically.js';
// Not VERSION from ../cli.js: that module runs the CLI, and importing it from a command loaded by it is a cycle (the bundle hangs on it).
import packageJson from '../../package.json' with { type: 'json' };
import { isTilehouseError, messageOf, TilehouseError } from '../errors.js';
import { createSourceDispatcher } from '../pipeline/source-session.js';
import { fileSystemFailureCode, fileSystemFailureHint, type FileSystemFailureCode } from '../sinks/file-system-failure.js';
import { probeTile, recordingText } from '../pipeline/probe-tile.js';
import { formatProbeReport } from '../presentation/probe-report.js';
import { COMMON_HELP, EXIT, logHelp, parseCommandArgs, UsageError, type Command } from './command.js';
import { loadRunnableWorkspace } from '../workspace/load-workspace.js';
import { openOutput } from './output.js';

export const DEFAULT_PROBE_PAGES = 3;

/** The recording could not be written after the probe ran (a full disk, a directory removed meanwhile). */
export class RecordingWriteError extends TilehouseError {
  readonly code: FileSystemFailureCode | 'probe_record_write_failed';

  constructor(file: string, cause: unknown) {
    const code = fileSystemFailureCode(cause, 'probe_record_write_failed');
    const hint = fileSystemFailureHint(code);
    super(
      `cannot write the recording to ${file}: ${(cause as NodeJS.ErrnoException | null)?.code ?? messageOf(cause)}${hint === undefined ? '' : `; ${hint}`}`,
      { cause },
    );
    this.code = code;
  }
}

/**
 * Refuses, before any request, a --record path that cannot be written: its directory missing or
 * not writable, or a directory at the path. Found after the probe, it would cost the tenant's
 * answers (and a token) for nothing.
 */
async function checkRecordPath(file: string): Promise<void> {
  const directory = dirname(resolve(file));
  try {
    await access(directory, constants.W_OK);
  } catch (error) {
    throw UsageError.of(`probe: --record ${file}: cannot write in ${directory} (${(error as NodeJS.ErrnoException).code ?? messageOf(error)})`);
  }
  const existing = await stat(file).catch(() => undefined);
  if (existing?.isDirectory()) throw UsageError.of(`probe: --record ${file} is a directory; name a file`);
}
/** A probe reads a few pages; a whole tile is what `run` is for. */
const MAX_PROBE_PAGES = 1000;

export const probeCommand: Command = {
  name: 'probe',
  help: `Usage: tilehouse probe --job NAME --record FILE [--pages N] [--with-values] [--config FILE] [--jobs DIR]

Runs the job's export for a few pages, exactly as \`run\` would (one token, the same client,
retries and page checks), writes no sink, and records what the tenant answered into FILE: status
lines, response headers (no cookies, no auth), navigation, headers, dataTypes, the echoed query,
row counts, and the shape of each column's values (JSON type, length, pattern class such as
epoch-ms, iso-offset, numeric string), not the values themselves unless --with-values.
Credentials and access tokens never appear in the file.

A short report of what differs from the sandbox's behaviour goes to stderr. Attach FILE to a bug
report: \`npx tsx sandbox/main.ts --replay FILE\` serves it, and dropped into
test/fixtures/recordings/ it becomes a test.

Options:
${COMMON_HELP}
  -t, --job NAME       the job to probe (required; exactly one)
      --tile NAME      the same as --job (its older name)
      --record FILE    where to write the recording (required; replaced atomically)
      --pages N        read at most N pages (default ${DEFAULT_PROBE_PAGES}; fewer when the tile ends)
      --with-values    also record the rows' values (they are the tenant's data: share with care)
${logHelp('warn')}
  -h, --help           show this help

Example:
  tilehouse probe --config config/production.example.yaml --job daily_incidents_by_severity --record probe.json

Exit codes: 0 recorded (the report says whether a run would accept the pages), 1 the source
failed (the file still holds what was recorded, and the failure), 2 bad config or usage.
`,
  async run(args, io, seams) {
    const { values } = parseCommandArgs('probe', args, {
      job: { type: 'string', short: 't', multiple: true },
      record: { type: 'string' },
      pages: { type: 'string' },
      'with-values': { type: 'boolean' },
    });
    if (values.help) {
      io.stdout.write(this.help);
      return EXIT.ok;
    }
    const jobs = [...new Set(values.job ?? [])];
    if (jobs.length !== 1) throw UsageError.of(`probe: name exactly one job with --job NAME${jobs.length > 1 ? ` (got ${jobs.join(', ')})` : ''}`);
    const file = values.record;
    if (file === undefined || file === '') throw UsageError.of('probe: --record FILE is required (where the recording goes)');
    const pages = values.pages === undefined ? DEFAULT_PROBE_PAGES : Number(values.pages);
    if (!Number.isInteger(pages) || pages < 1 || pages > MAX_PROBE_PAGES) {
      throw UsageError.of(`probe: --pages must be a whole number from 1 to ${MAX_PROBE_PAGES}; got ${JSON.stringify(values.pages)}`);
    }
    await checkRecordPath(file);
    const { logger } = openOutput('probe', values, io, 'warn');
    const workspace = await loadRunnableWorkspace(values, jobs, io.env, io);
    const job = workspace.selected[0]!;
    const dispatcher = createSourceDispatcher();
    let recording;
    try {
      recording = await probeTile(job, {
        environment: workspace.environment,
        credentials: workspace.credentials,
        dispatcher,
        logger: logger.child({ job: job.name, tile: job.tile }),
        pages,
        withValues: values['with-values'] === true,
        version: packageJson.version,
        ...(seams.retry === undefined ? {} : { retry: seams.retry }),
        ...(io.signal === undefined ? {} : { signal: io.signal }),
      });
    } finally {
      await dispatcher.close();
    }
    // Atomically: a reader (or a bug report) never sees half a recording.
    try {
      await writeFileAtomically(file, recordingText(recording));
    } catch (error) {
      throw isTilehouseError(error) ? error : new RecordingWriteError(file, error);
    }
    io.stderr.write(formatProbeReport(recording, file));
    return recording.failure === undefined ? EXIT.ok : EXIT.tileFailed;
  },
};
